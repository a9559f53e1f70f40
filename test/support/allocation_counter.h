// Counts every heap allocation of a test binary: the C allocation functions are wrapped
// (-Wl,--wrap=malloc,calloc,realloc,posix_memalign,aligned_alloc, added to the link by this
// library; link the test statically so the runtime's own calls are wrapped too) and the whole
// global operator new/delete family (plain, array, nothrow, aligned) is replaced, so every
// new pairs with a delete of the same family (AddressSanitizer checks that).
#pragma once

#include <cstdint>
#include <cstdlib>

namespace ember {
namespace testing {

// Allocations since the program started.
uint64_t allocation_count();
// Counts one allocation made some other way (e.g. a test's own platform allocation hook).
void count_allocation();

}  // namespace testing
}  // namespace ember

extern "C" int __real_posix_memalign(void** p, size_t alignment, size_t size);
