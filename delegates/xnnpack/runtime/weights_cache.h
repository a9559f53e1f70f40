// Packed weights shared by every XNNPACK delegate of one Program (internal to the backend).
//
// XNNPACK repacks each conv/fully-connected filter into its microkernel's layout. Without a
// cache, every runtime packs and keeps its own copy: a weight used by several nodes (ALBERT's
// shared layers), by several partitions or methods of one program, or by a second runtime of
// one delegate (a shape XNNPACK cannot reshape to) is held once per user. This is an
// xnn_weights_cache provider of Ember's own, one per Program, that keeps one copy:
//   - content: after XNNPACK packs weights, identical packed bytes already held (same size,
//     hash, then a full compare) are returned instead and the new copy is freed; this holds
//     across Programs too (a process-wide table of blocks with their holders), so two programs
//     over the same weights keep one packed copy;
//   - within one runtime creation, XNNPACK's look-up key (microkernel seed, filter and bias
//     pointers) finds weights before packing them. Keys are forgotten after each creation:
//     a filter pointer can later name other bytes (a method's copied constants are freed
//     with the method, fp16 conversions are temporary), so across creations only content
//     counts.
// Every packed block is its own allocation that never moves, so (unlike XNNPACK's built-in
// cache, whose buffer grows by reallocation) the cache needs no finalisation: a runtime may
// be created with it at any time, reshaped at once and run while others are created.
//
// Files: with a cache directory set (xnnpack::set_weights_cache_dir), weights packed by an
// earlier run are mapped from files instead of packed, and new packings are written there
// after each runtime creation (weights_file_cache.h).
//
// Lifetime: acquire_weights_cache() at delegate init returns the Program's cache (created on
// first use, keyed by the Program's address); release_weights_cache() at delegate destroy,
// after its runtimes are deleted; the last release lets go of every block (freed once no
// Program holds it), so a later Program at the same address starts empty (every Method is
// destroyed before its Program).
//
// Threading: runtime creation with a cache and acquire/release run under one process-wide
// mutex (Methods of one Program may be loaded on different threads). Runtimes read their
// packed weights without it: blocks are immutable and never freed while a runtime of the
// Program lives.
#pragma once

#include <pthreadpool.h>
#include <xnnpack.h>

#include <cstddef>
#include <cstdint>

#include "delegates/xnnpack/runtime/weights_file_cache.h"

namespace ember {
class Program;
namespace xnnpack {

// Counters of one Program's cache (bytes are XNNPACK's packed sizes).
struct WeightsCacheStats {
  uint64_t packed_bytes = 0;  // bytes of distinct packed weights held
  uint64_t packings = 0;      // distinct packed weights held
  uint64_t reuses = 0;        // weights a runtime found already packed (no second copy)
  FileCacheStats file;        // packed weights mapped from / written to files
  uint64_t dropped_source_bytes = 0;  // program bytes whose pages were given back after packing
  // Of packed_bytes, what another Program's cache already held (one copy in the process).
  uint64_t shared_with_other_programs_bytes = 0;
};

// Packed bytes the process holds in memory over every Program's cache, each distinct block once
// (blocks mapped from cache files not included).
uint64_t packed_bytes_held_in_process();

struct SharedWeights;

// The cache of `program`, or nullptr when sharing is not possible (no program, or too many
// live programs): runtimes then pack their own weights, as without a cache.
SharedWeights* acquire_weights_cache(const Program* program);
void release_weights_cache(SharedWeights* shared);

// A QBInt4 filter (`kernel`, the pointer the subgraph defines) whose `count` bfloat16 block
// scales are checked only if XNNPACK packs it during the creation it is handed to (a look-up
// miss): weights served from a cache file or already packed read no scales, and XNNPACK's own
// check is patched out (block_scales.h). `tensor` names it in a failure.
struct BlockScaleCheck {
  const void* kernel = nullptr;
  const uint16_t* scales = nullptr;
  size_t count = 0;
  uint32_t tensor = 0;
};

// A check that failed: scale `index` of QBInt4 tensor `tensor`, whose bits are `bits`.
struct BadBlockScale {
  bool found = false;
  uint32_t tensor = 0;
  size_t index = 0;
  uint16_t bits = 0;
};

// xnn_create_runtime_v4 with the shared cache (not null) and `workspace` (may be null: the
// runtime's own), under the cache lock, running `checks` on the filters it packs. When one
// fails the runtime is deleted, nothing is written to the cache file, `bad` says which scale,
// and the status is xnn_status_invalid_parameter.
xnn_status create_runtime_with_cache(SharedWeights* shared, xnn_subgraph_t subgraph, xnn_workspace_t workspace,
                                     pthreadpool_t pool, uint32_t flags, const BlockScaleCheck* checks,
                                     size_t num_checks, xnn_runtime_t* runtime, BadBlockScale* bad);

WeightsCacheStats weights_cache_stats(const SharedWeights* shared);

// Notes a filter or bias of the program that only packing reads (`data` inside the Program's
// segments). After each runtime is created its whole pages are dropped from the process when
// the program is a read-only file mapping (mapped_pages.h): the packed copy replaces them.
void note_packed_source(SharedWeights* shared, const void* data, size_t nbytes);

}  // namespace xnnpack
}  // namespace ember
