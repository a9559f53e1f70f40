// The XNNPACK backend ("xnnpack"): runs one partition blob (xnnpack_graph.fbs) per delegate
// through an XNNPACK subgraph runtime. Linking //delegates/xnnpack:xnnpack_backend registers
// it at static-initialisation time.
//
// Phases and where memory comes from
//   init     verifies the blob (FlatBuffer verifier; every tensor id, node arity, dims, the
//            shape of every node output re-derived and compared, constant references within
//            their segment), defines the XNNPACK subgraph and creates its runtime. Ember-side
//            state (the delegate, layout staging buffers, the runtime cache table) comes from
//            BackendInitContext.method_allocator; XNNPACK allocates its own packed weights and
//            activation workspace on the heap (its allocator), once, here.
//            Weights stay in the program's data segments: a blob constant with
//            ConstantData.segment_index = k >= 0 names constant slot k of the delegate, resolved
//            with ember::delegate_constant() through the kConstantSegmentsSpec compile spec the
//            exporter writes (offset/nbytes inside that slot's bytes). Small constants may be
//            inline in the blob. Filters and biases of conv/fc nodes are used in place (XNNPACK
//            repacks them); any other constant that is misaligned or not followed by
//            XNN_EXTRA_BYTES readable bytes is copied once into the method allocator.
//   execute  checks every input's shape against the compiled one; converts NCHW inputs to
//            NHWC into the staging buffers, calls xnn_setup_runtime only when a data pointer
//            changed, xnn_invoke_runtime, converts outputs back and resizes the output tensors.
//            No Ember allocation and no XNNPACK allocation on this path.
//   weights  XNNPACK's packed weights live in one cache per Program (weights_cache.h): a
//            filter used by several nodes, partitions, methods or runtimes is held once
//            (found by its packed bytes, or by its pointer within one runtime's creation).
//            With a cache directory (set_weights_cache_dir below) they are written to files
//            once and mapped read-only by later loads (weights_file_cache.h).
//   workspace  the runtimes of one Method share one XNNPACK workspace (method_workspace.h).
//   shape change  when a bounded dynamic input arrives with a new shape, every internal shape
//            is re-derived (and checked against the output bounds) and the current runtime is
//            reshaped in place (xnn_reshape_external_value + xnn_reshape_runtime: XNNPACK
//            replans its memory, the packed weights stay). Only when XNNPACK cannot reshape
//            the graph is a new runtime built (cached by input shape, kMaxCachedRuntimes, least
//            recently used evicted). StaticReshape nodes with a -1 dim are defined with 0 there,
//            which XNNPACK infers on every reshape.
//
// Compile specs
//   threads        When BackendInitContext.thread_pool is a pthreadpool-backed pool (its
//                  native_handle() is a pthreadpool_t), XNNPACK and the layout conversions
//                  run on it (the method's pool, shared with the portable kernels).
//   "num_threads"  Fallback, little-endian uint32 (4 bytes) or uint64 (8 bytes): used only
//                  when the method has no native pool; > 1 creates a delegate-owned
//                  pthreadpool with that many threads. Absent/0 with no native pool: the
//                  thread count of BackendInitContext.thread_pool (own pool), else one thread.
//                  Either way a small compute-bound graph takes fewer threads (one per 16
//                  MFLOP at its compiled shapes, thread_budget.cc): it runs on the calling
//                  thread or on a delegate-owned pool of that size, not on the method's pool
//                  (XnnpackDelegateStats::threads_offered > num_threads says so).
//   "conv_block_bytes"  Little-endian uint64 (8 bytes): convolutions whose filters give each
//                  thread more than this many bytes run as output-channel blocks
//                  (blocked_convolution.cc); 0 never; absent: 1 MiB.
//   "fp16"         One byte, 1 (delegates/xnnpack/xnnpack_compile_specs.h): runtimes are
//                  created with XNN_FLAG_FORCE_FP16_INFERENCE (fp16 packed weights and
//                  activations; delegate inputs/outputs stay float32). Where XNNPACK cannot
//                  (CPU without fp16 support, an op without an fp16 kernel) the delegate runs
//                  in fp32 and a Warning is logged. XnnpackDelegateStats::fp16 says which.
//
// Errors: a malformed blob is InvalidProgram; a parameter XNNPACK rejects is InvalidProgram
// or NotSupported; an input of the wrong dtype/rank/shape is InvalidArgument/OutOfBounds;
// every failure leaves a message naming the node/op and the xnn_status in the Diagnostic.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/backend/backend.h"

namespace ember {
namespace xnnpack {

constexpr const char* kXnnpackBackendId = "xnnpack";
constexpr size_t kMaxCachedRuntimes = 4;

// The registered backend object (also registered under kXnnpackBackendId).
Backend& xnnpack_backend();

// Winograd convolutions (the blob's kWinogradFlag, exporter/xnnpack_winograd.h) run only on
// pools of at most this many threads: their transformed filters are 1.8-4x the direct ones'
// bytes, and with 16 threads sharing the memory bus ResNet18 / ResNet34 ran 1.0x / 0.83x as
// fast as with direct convolutions, against 1.24x / 1.04x on one thread and 1.14x / 1.18x on
// four (docs/benchmarks.md, "Winograd"). Above it the flags are dropped when the runtime is
// defined.
constexpr size_t kWinogradMaxThreads = 4;

// Counters of one delegate (the handle returned by init), for tests and profiling.
struct XnnpackDelegateStats {
  uint64_t runtimes_built = 0;   // including the one built at init
  uint64_t reshapes = 0;         // shape changes handled by reshaping the current runtime
  uint64_t runtime_switches = 0; // executes that changed the active runtime (cached or new)
  uint64_t setups = 0;           // xnn_setup_runtime_v2 calls
  uint64_t invokes = 0;
  size_t cached_runtimes = 0;
  size_t num_threads = 1;
  size_t threads_offered = 0;     // > num_threads: the graph was too small for all of them (thread_budget.cc)
  bool shared_pool = false;       // runs on the method's pthreadpool (BackendInitContext.thread_pool)
  size_t constants_in_place = 0;  // weights used where they lie (program segment or blob)
  size_t constants_copied = 0;    // weights copied once into the method allocator
  bool fp16 = false;              // runtimes run in fp16 (compile spec "fp16", see below)
  bool shares_weights = false;    // uses its Program's packed-weights cache
  size_t blocked_convolutions = 0;  // convolutions of the current runtime run as channel blocks
  // Convolutions of the current runtime in the Winograd domain (their blob nodes carry the
  // exporter's Winograd flags, and the pool has at most kWinogradMaxThreads threads).
  size_t winograd_convolutions = 0;
  // Per-operator profiling (only when the method was loaded with an EventTracer that wants
  // delegate operators: runtimes are then created with XNN_FLAG_BASIC_PROFILING).
  bool profiling = false;
  size_t profiled_operators = 0;  // XNNPACK operators of the current runtime
  uint64_t operator_events = 0;   // DelegateOp events reported
  uint64_t unreported_invokes = 0;  // traced invokes whose operators did not fit the tables
};
XnnpackDelegateStats delegate_stats(const void* handle);

// The packed-weights cache of the Program a delegate (handle) belongs to, shared by all of
// that Program's XNNPACK delegates (every method, every partition, every cached runtime).
struct ProgramWeightsStats {
  bool shared = false;            // false: the delegate packs its own weights (no Program)
  uint64_t packed_bytes = 0;      // distinct packed weights held, bytes
  uint64_t packings = 0;          // distinct weights packed
  uint64_t reuses = 0;            // times a runtime found its weights already packed
  // Packed weights in files (set_weights_cache_dir):
  bool file_cache = false;        // a directory is set and the program has a content digest
  bool index_loaded = false;      // a valid index of this program and machine was found
  uint64_t mapped_blocks = 0;     // packed blocks mapped from files instead of packed
  uint64_t mapped_bytes = 0;
  uint64_t file_hits = 0;         // XNNPACK look-ups answered from files
  uint64_t written_blocks = 0;    // block files this process wrote
  // Filter bytes of a memory-mapped program whose pages were given back once packed
  // (mapped_pages.h): the process keeps one copy of the weights, not two.
  uint64_t dropped_source_bytes = 0;
  // Of packed_bytes, what another Program already held: one copy in the process.
  uint64_t shared_with_other_programs_bytes = 0;
};
ProgramWeightsStats program_weights_stats(const void* handle);
// Packed weights held in memory by the whole process, each distinct block once.
uint64_t packed_weights_bytes_in_process();

// Packed weights that map (weights_file_cache.h). Sets the directory where XNNPACK's packed
// weights are kept between runs: the first load of a program packs its filters and writes
// them there; later loads (any process on the same machine and XNNPACK build) map them
// read-only instead of packing, so init skips the packing and the program's filter bytes are
// never read. "" turns it off. Process-wide, for delegates initialised afterwards; thread-safe.
// Default: $EMBER_XNNPACK_WEIGHTS_CACHE, else off. The directory is created when needed; one
// that cannot be written leaves the cache read-only (one Warning). Files are safe to delete
// between runs; stale or corrupt ones are ignored and rewritten.
void set_weights_cache_dir(const char* dir);

// Process-wide counters of the files above since the process started (for tests and tools).
struct WeightsFileTotals {
  uint64_t hits = 0;             // XNNPACK look-ups answered from a mapped block
  uint64_t mapped_blocks = 0;    // block mappings made (a block shared by programs counts per program)
  uint64_t mapped_bytes = 0;
  uint64_t written_blocks = 0;   // block files written
  uint64_t index_writes = 0;     // index files written
  uint64_t indexes_loaded = 0;   // valid index files found at a program's first delegate
  uint64_t indexes_refused = 0;  // index files found but refused (corrupt, stale)
  uint64_t packed_blocks = 0;    // blocks XNNPACK packed and the process keeps in memory (any program)
  uint64_t packed_bytes = 0;
};
WeightsFileTotals weights_file_totals();

}  // namespace xnnpack
}  // namespace ember
