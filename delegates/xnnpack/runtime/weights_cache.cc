#include "delegates/xnnpack/runtime/weights_cache.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "delegates/xnnpack/runtime/block_scales.h"
#include "delegates/xnnpack/runtime/mapped_pages.h"
#include "delegates/xnnpack/runtime/weights_file_cache.h"
#include "runtime/program/program.h"

namespace ember {
namespace xnnpack {

namespace {

// Above XNN_ALLOCATION_ALIGNMENT on every target XNNPACK supports.
constexpr size_t kBlockAlignment = 128;

struct Block {
  void* data;
  size_t size;
  ContentDigest digest;
};

struct Key {
  uint32_t seed;
  const void* kernel;
  const void* bias;
  void* data;
};

}  // namespace

struct SharedWeights {
  const Program* program = nullptr;
  size_t refs = 0;
  xnn_weights_cache_provider provider{};
  std::vector<Block> blocks;
  std::vector<Key> keys;   // this creation's look-up keys only
  void* pending = nullptr;  // reserved for the weights XNNPACK is packing now
  size_t pending_size = 0;
  WeightsCacheStats stats;
  ProgramFileCache file;  // packed weights mapped from files (weights_file_cache.h), when set up
  // Where weights come from: the Program's own segment area, then each data file's (a program
  // exported with --external-weights), with whether each is a read-only file mapping.
  struct Region {
    Span<const uint8_t> bytes;
    int file_mapped = -1;  // -1: not yet asked (mapped_pages.h)
  };
  std::vector<Region> regions;
  struct Source {
    const void* data;
    size_t nbytes;
    size_t region;
  };
  std::vector<Source> sources;  // note_packed_source, until dropped
  const BlockScaleCheck* scale_checks = nullptr;  // the creation in progress's (under g_mutex)
  size_t num_scale_checks = 0;
  BadBlockScale bad_scale;
};

namespace {

constexpr size_t kMaxPrograms = 32;  // live Programs with XNNPACK delegates at once
SharedWeights g_table[kMaxPrograms];
std::mutex g_mutex;  // guards g_table, g_blocks and every cache while a runtime is created with it

// Every packed block of the process, by content, with how many Programs' caches hold it: two
// programs over the same weights (two LoRA variants over one base data file, a program loaded
// twice) pack them each, but keep one copy. Guarded by g_mutex.
struct ProcessBlock {
  Block block;
  size_t holders = 0;
};
std::multimap<uint64_t, ProcessBlock> g_blocks;  // digest.lo -> block
uint64_t g_held_bytes = 0;

// The process's block with these bytes (one more holder), or null.
void* hold_existing(const void* ptr, size_t size, const ContentDigest& digest) {
  for (auto [it, end] = g_blocks.equal_range(digest.lo); it != end; ++it) {
    const Block& b = it->second.block;
    if (b.size == size && b.digest == digest && std::memcmp(b.data, ptr, size) == 0) {
      it->second.holders++;
      return b.data;
    }
  }
  return nullptr;
}

// One holder less of `b`; freed with its last.
void let_go(const Block& b) {
  for (auto [it, end] = g_blocks.equal_range(b.digest.lo); it != end; ++it) {
    if (it->second.block.data != b.data) continue;
    if (--it->second.holders == 0) {
      std::free(b.data);
      g_held_bytes -= b.size;
      g_blocks.erase(it);
    }
    return;
  }
}

SharedWeights* self(void* context) { return static_cast<SharedWeights*>(context); }

// "Offsets" are the blocks' addresses: stable, and never XNNPACK's not-found SIZE_MAX.
size_t as_offset(void* data) { return reinterpret_cast<size_t>(data); }

// XNNPACK is about to pack `kernel`: its deferred block-scale check runs now (the first
// failure is kept; creation fails after XNNPACK returns).
void check_scales_before_packing(SharedWeights* s, const void* kernel) {
  for (size_t k = 0; k < s->num_scale_checks; ++k) {
    const BlockScaleCheck& c = s->scale_checks[k];
    if (c.kernel != kernel || s->bad_scale.found) continue;
    const size_t i = first_bad_block_scale(c.scales, c.count);
    if (i != c.count) s->bad_scale = BadBlockScale{true, c.tensor, i, c.scales[i]};
  }
}

size_t look_up(void* context, const xnn_weights_cache_look_up_key* key) {
  SharedWeights* s = self(context);
  for (const Key& k : s->keys) {
    if (k.seed == key->seed && k.kernel == key->kernel && k.bias == key->bias) {
      s->stats.reuses++;
      return as_offset(k.data);
    }
  }
  // Packed by an earlier run: mapped from its block file, never packed here.
  if (const void* mapped = s->file.find(key, 0)) {
    void* data = const_cast<void*>(mapped);  // read-only mapping: XNNPACK only reads packed weights
    s->keys.push_back(Key{key->seed, key->kernel, key->bias, data});
    return as_offset(data);
  }
  check_scales_before_packing(s, key->kernel);
  return SIZE_MAX;
}

void* reserve_space(void* context, size_t n) {
  SharedWeights* s = self(context);
  std::free(s->pending);  // an earlier reservation XNNPACK did not insert (its op failed)
  const size_t rounded = (n + kBlockAlignment - 1) / kBlockAlignment * kBlockAlignment;
  s->pending = std::aligned_alloc(kBlockAlignment, rounded == 0 ? kBlockAlignment : rounded);
  s->pending_size = n;
  return s->pending;
}

// Whether the Program's segments are a read-only file mapping (asked once).
// Whether the weights of `source` may be dropped: its region is a read-only file mapping
// (asked once per region).
bool droppable(SharedWeights* s, const SharedWeights::Source& source) {
  SharedWeights::Region& r = s->regions[source.region];
  if (r.file_mapped < 0) r.file_mapped = is_read_only_file_mapping(r.bytes.data(), r.bytes.size()) ? 1 : 0;
  return r.file_mapped == 1;
}

// XNNPACK has just packed `key` (it reads a filter only while packing it): gives back the pages
// of a large filter at once, so a runtime that packs many never holds all of them twice. Small
// ones wait for drop_sources after the runtime is created (the kernel's fault-around maps
// pages around each later read back in); so does every source once more, for the same reason.
void drop_packed(SharedWeights* s, const xnn_weights_cache_look_up_key* key) {
  constexpr size_t kEarlyDropBytes = 256 << 10;
  if (key == nullptr) return;
  for (const SharedWeights::Source& src : s->sources) {
    if (src.nbytes >= kEarlyDropBytes && (src.data == key->kernel || (key->bias != nullptr && src.data == key->bias)) &&
        droppable(s, src)) {
      drop_whole_pages(src.data, src.nbytes);
    }
  }
}

size_t look_up_or_insert(void* context, const xnn_weights_cache_look_up_key* key, void* ptr, size_t size) {
  SharedWeights* s = self(context);
  // Convolutions call this with no weights after a look-up hit: answer with that hit.
  if (ptr == nullptr) return key == nullptr ? SIZE_MAX : look_up(context, key);
  if (ptr != s->pending || size > s->pending_size) return SIZE_MAX;  // not ours
  s->pending = nullptr;
  // Depthwise convolutions pack before asking: a mapped block with the same bytes replaces
  // the fresh copy (a block that differs is stale; the fresh one is kept and recorded).
  if (const void* mapped = s->file.find(key, size)) {
    if (std::memcmp(mapped, ptr, size) == 0) {
      std::free(ptr);
      void* data = const_cast<void*>(mapped);
      s->keys.push_back(Key{key->seed, key->kernel, key->bias, data});
      drop_packed(s, key);
      return as_offset(data);
    }
  }
  const ContentDigest digest = content_digest(ptr, size);
  void* data = nullptr;
  for (const Block& b : s->blocks) {
    if (b.size == size && b.digest == digest && std::memcmp(b.data, ptr, size) == 0) {
      data = b.data;
      break;
    }
  }
  if (data != nullptr) {
    std::free(ptr);
    s->stats.reuses++;
  } else if ((data = hold_existing(ptr, size, digest)) != nullptr) {
    // Another program holds these packed bytes: share its copy.
    std::free(ptr);
    s->blocks.push_back(Block{data, size, digest});
    s->stats.packings++;
    s->stats.packed_bytes += size;
    s->stats.shared_with_other_programs_bytes += size;
  } else {
    s->blocks.push_back(Block{ptr, size, digest});
    g_blocks.emplace(digest.lo, ProcessBlock{Block{ptr, size, digest}, 1});
    g_held_bytes += size;
    note_packed_in_memory(size);
    s->stats.packings++;
    s->stats.packed_bytes += size;
    data = ptr;
  }
  if (key != nullptr) {
    s->keys.push_back(Key{key->seed, key->kernel, key->bias, data});
    // Weights packed from scales that failed their check never reach a file (the creation
    // fails; a later run must check them again).
    if (!s->bad_scale.found) s->file.record(key, data, size, digest);
  }
  drop_packed(s, key);
  return as_offset(data);
}

// Blocks never move: every stage of XNNPACK that waits for a finalised cache may go on.
bool is_finalized(void*) { return true; }

void* offset_to_addr(void*, size_t offset) { return reinterpret_cast<void*>(offset); }

// Never deleted through XNNPACK: release_weights_cache frees the blocks.
xnn_status delete_cache(void*) { return xnn_status_invalid_state; }

// Gives back the pages of the filters this creation packed (or found packed), when the
// program is a read-only file mapping; forgets them either way.
void drop_sources(SharedWeights* s) {
  for (const SharedWeights::Source& src : s->sources) {
    if (!droppable(s, src)) continue;
    drop_whole_pages(src.data, src.nbytes);
    s->stats.dropped_source_bytes += src.nbytes;
  }
  s->sources.clear();
}

void free_blocks(SharedWeights* s) {
  s->file.close();  // after every runtime that read the mappings is gone
  for (const Block& b : s->blocks) let_go(b);
  std::free(s->pending);
  s->blocks.clear();
  s->blocks.shrink_to_fit();
  s->keys.clear();
  s->pending = nullptr;
}

}  // namespace

SharedWeights* acquire_weights_cache(const Program* program) {
  if (program == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  SharedWeights* free_slot = nullptr;
  for (SharedWeights& s : g_table) {
    if (s.refs > 0 && s.program == program) {
      s.refs++;
      return &s;
    }
    if (s.refs == 0 && free_slot == nullptr) free_slot = &s;
  }
  if (free_slot == nullptr) return nullptr;
  SharedWeights& s = *free_slot;
  s.program = program;
  s.refs = 1;
  s.provider = xnn_weights_cache_provider{&s, look_up, reserve_space, look_up_or_insert, is_finalized,
                                          offset_to_addr, delete_cache};
  s.stats = WeightsCacheStats();
  std::vector<ProgramFileCache::Region> weights{{program->segment_area(), program->content_digest()}};
  s.regions.clear();
  s.regions.push_back(SharedWeights::Region{program->segment_area(), -1});
  for (size_t i = 0; i < program->num_data_files(); ++i) {
    const DataFile* data = program->data_file(i);
    s.regions.push_back(SharedWeights::Region{data->segment_area(), -1});
    weights.push_back(ProgramFileCache::Region{data->segment_area(), data->content_digest()});
  }
  s.file.open(configured_weights_cache_dir(), weights);
  s.sources.clear();
  return &s;
}

void release_weights_cache(SharedWeights* shared) {
  if (shared == nullptr) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (shared->refs == 0 || --shared->refs > 0) return;
  free_blocks(shared);
  shared->program = nullptr;
}

xnn_status create_runtime_with_cache(SharedWeights* shared, xnn_subgraph_t subgraph, xnn_workspace_t workspace,
                                     pthreadpool_t pool, uint32_t flags, const BlockScaleCheck* checks,
                                     size_t num_checks, xnn_runtime_t* runtime, BadBlockScale* bad) {
  std::lock_guard<std::mutex> lock(g_mutex);
  shared->bad_scale = BadBlockScale();
  shared->scale_checks = checks;
  shared->num_scale_checks = num_checks;
  xnn_status s = xnn_create_runtime_v4(subgraph, &shared->provider, workspace, pool, flags, runtime);
  shared->scale_checks = nullptr;
  shared->num_scale_checks = 0;
  if (s == xnn_status_success && shared->bad_scale.found) {
    xnn_delete_runtime(*runtime);
    *runtime = nullptr;
    if (bad != nullptr) *bad = shared->bad_scale;
    s = xnn_status_invalid_parameter;
  }
  if (s == xnn_status_success) {
    shared->file.flush();  // new packings to files, for the next run
    drop_sources(shared);
  }
  shared->keys.clear();  // see weights_cache.h: pointers are only trusted within one creation
  std::free(shared->pending);
  shared->pending = nullptr;
  if (s != xnn_status_success) *runtime = nullptr;
  return s;
}

void note_packed_source(SharedWeights* shared, const void* data, size_t nbytes) {
  if (shared == nullptr || data == nullptr || nbytes == 0) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  const uint8_t* p = static_cast<const uint8_t*>(data);
  for (size_t r = 0; r < shared->regions.size(); ++r) {
    const Span<const uint8_t> area = shared->regions[r].bytes;
    if (p >= area.data() && nbytes <= area.size() && p - area.data() <= static_cast<ptrdiff_t>(area.size() - nbytes)) {
      shared->sources.push_back(SharedWeights::Source{data, nbytes, r});
      return;
    }
  }
  // Not the program's segments nor a data file's (inline in a blob, a copy): never dropped.
}

uint64_t packed_bytes_held_in_process() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_held_bytes;
}

WeightsCacheStats weights_cache_stats(const SharedWeights* shared) {
  if (shared == nullptr) return WeightsCacheStats();
  std::lock_guard<std::mutex> lock(g_mutex);
  WeightsCacheStats out = shared->stats;
  out.file = shared->file.stats();
  return out;
}

}  // namespace xnnpack
}  // namespace ember
