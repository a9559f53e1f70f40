// Packed weights that map: the file side of a Program's packed-weights cache
// (weights_cache.h), internal to the XNNPACK backend.
//
// When a cache directory is set (xnnpack::set_weights_cache_dir or EMBER_XNNPACK_WEIGHTS_CACHE)
// and the program carries a content digest (its .pte header; and its data files, theirs),
// XNNPACK's packing of each filter is looked up in "<dir>/<program digest>-<environment digest>.index" (format:
// weights_index.h). A hit maps the block file read-only and hands XNNPACK that address:
// nothing is packed and the program's filter bytes are never read, so their pages are never
// resident. A miss packs in memory as without a file; after the runtime is created, the new
// blocks and a new index are written (temporary name, then rename).
//
// What keys an entry: XNNPACK's look-up key (a seed from the microkernel's tile sizes and the
// op's shape, the filter and bias pointers) with the pointers turned into offsets inside the
// program's segment area, which are the same in every process. Pointers elsewhere (copies,
// fp16 conversions XNNPACK makes) are not cached in the file. A key packed two different
// ways in one program (XNNPACK's seed does not include requantisation scales) is marked
// ambiguous and never served. Blocks are content-addressed ("blocks/<digest>.bin"): two
// programs, or two methods, over the same weights share one file and, in a process, one
// mapping.
//
// The environment digest covers XNNPACK's microkernel build identifier and the CPU's
// features and microarchitectures as cpuinfo reports them: another machine or XNNPACK build
// writes its own index. A missing, corrupt or stale file is a miss (a Warning says why, once
// per program), never a wrong result; a directory that cannot be written leaves the cache
// read-only for the process (one Warning). Files may be deleted at any time between runs.
//
// Threading: every call runs under the weights cache's mutex (weights_cache.cc).
#pragma once

#include <xnnpack.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "delegates/xnnpack/runtime/weights_index.h"
#include "runtime/core/content_digest.h"
#include "runtime/core/span.h"

namespace ember {
namespace xnnpack {

// The directory set by set_weights_cache_dir(), else $EMBER_XNNPACK_WEIGHTS_CACHE, else "".
std::string configured_weights_cache_dir();

// Counts a block packed and kept in memory (weights_file_totals().packed_blocks).
void note_packed_in_memory(size_t bytes);

// XNNPACK build identifier + CPU features + microarchitectures (computed once).
const ContentDigest& weights_environment();

struct FileCacheStats {
  bool enabled = false;          // a directory is set and the program has a digest
  bool index_loaded = false;     // a valid index for this program and machine was found
  uint64_t mapped_blocks = 0;    // blocks served from files (distinct mappings)
  uint64_t mapped_bytes = 0;
  uint64_t hits = 0;             // look-ups answered from a file
  uint64_t written_blocks = 0;   // block files written by this process
  uint64_t index_writes = 0;
};

class ProgramFileCache {
 public:
  ProgramFileCache() = default;
  ProgramFileCache(const ProgramFileCache&) = delete;
  ProgramFileCache& operator=(const ProgramFileCache&) = delete;
  ~ProgramFileCache() { close(); }

  // Where a program's weights live: its own segment area, then each data file's (a program
  // exported with --external-weights), each with its file's content digest.
  struct Region {
    Span<const uint8_t> bytes;
    ContentDigest digest;
  };

  // Starts the file cache of one program (regions[0]: the program's segment area); false (the
  // cache stays off) when `dir` is empty or a region has no content digest. The index is keyed
  // by the program's digest, combined with its data files' when it has any (another .ptd under
  // the same program, e.g. another LoRA variant, gets its own index), and offsets run through
  // the regions in order. A bad index is logged and ignored (rewritten later).
  bool open(const std::string& dir, const std::vector<Region>& regions);
  bool is_open() const { return open_; }

  // The packed bytes for `key` from a mapped block file, or nullptr (also for unstable or
  // ambiguous keys). `size`, when not 0, must match the entry's.
  const void* find(const xnn_weights_cache_look_up_key* key, size_t size);

  // Notes weights packed in memory this run (`data` stays valid until flush returns).
  void record(const xnn_weights_cache_look_up_key* key, const void* data, size_t size,
              const ContentDigest& digest);

  // Writes the block files and the index for everything recorded since the last flush.
  void flush();

  // Unmaps this program's blocks (shared mappings stay while another program uses them).
  void close();

  const FileCacheStats& stats() const { return stats_; }

 private:
  struct Pending {
    const void* data;
    size_t size;
    ContentDigest digest;
  };
  bool stable(const xnn_weights_cache_look_up_key* key, uint64_t* kernel, uint64_t* bias) const;
  IndexEntry* entry_for(uint32_t seed, uint64_t kernel, uint64_t bias);
  void warn_once(const char* what, const char* why);

  bool open_ = false;
  bool read_only_ = false;
  bool warned_ = false;
  bool index_dirty_ = false;
  std::string dir_;
  std::string index_path_;
  struct Span64 {
    const uint8_t* base;
    size_t size;
    uint64_t first_offset;  // of this region in the offset space the index uses
  };
  std::vector<Span64> regions_;
  IndexFile index_;
  std::vector<ContentDigest> mapped_;   // this program's references into the mapping table
  std::vector<Pending> pending_;        // blocks to write at the next flush
  FileCacheStats stats_;
};

}  // namespace xnnpack
}  // namespace ember
