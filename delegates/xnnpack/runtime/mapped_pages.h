// Giving back the pages of weights XNNPACK has packed (internal to the backend).
//
// A filter is read once, to pack it; afterwards the process holds the packed copy and, for a
// memory-mapped program, the filter's pages too: twice the weights. When the program's data
// segments are a read-only, file-backed mapping, those pages can be dropped from the process
// (madvise MADV_DONTNEED): the file and the page cache keep the bytes, and a later read (a
// portable kernel sharing the constant, a runtime built for a new shape) faults them back in.
// Never done on anything else: on anonymous or writable memory MADV_DONTNEED would lose data.
#pragma once

#include <cstddef>

namespace ember {
namespace xnnpack {

// True when [data, data + size) lies inside one mapping of this process that is file-backed
// and not writable (Linux: read from /proc/self/maps; elsewhere always false).
bool is_read_only_file_mapping(const void* data, size_t size);

// Drops the whole pages inside [data, data + size) from this process's memory. Only for a range
// inside a mapping is_read_only_file_mapping accepted.
void drop_whole_pages(const void* data, size_t size);

}  // namespace xnnpack
}  // namespace ember
