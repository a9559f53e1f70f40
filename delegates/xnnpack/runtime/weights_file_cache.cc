#include "delegates/xnnpack/runtime/weights_file_cache.h"

#include <cpuinfo.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <atomic>
#include <mutex>

#include "delegates/xnnpack/runtime/xnnpack_backend.h"
#include "runtime/platform/cache_files.h"
#include "runtime/platform/log.h"

namespace ember {
namespace xnnpack {

namespace {

std::mutex g_dir_mutex;

// Process-wide counters (weights_file_totals()).
std::atomic<uint64_t> g_hits{0}, g_mapped_blocks{0}, g_mapped_bytes{0}, g_written_blocks{0}, g_index_writes{0},
    g_indexes_loaded{0}, g_indexes_refused{0}, g_packed_blocks{0}, g_packed_bytes{0};
bool g_dir_set = false;
std::string g_dir;

// Process-wide block mappings, shared by every program (callers hold the weights cache lock).
struct Mapping {
  ContentDigest digest;
  void* base;
  size_t length;
  size_t refs;
};
std::vector<Mapping>& mappings() {
  static std::vector<Mapping>* table = new std::vector<Mapping>();  // outlives static destructors
  return *table;
}

std::string hex(const ContentDigest& d) {
  char text[33];
  digest_hex(d, text);
  return text;
}

bool read_all(int fd, void* data, size_t size, off_t offset) {
  uint8_t* p = static_cast<uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::pread(fd, p, size, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
    offset += n;
  }
  return true;
}

// A valid block file of `digest` and `size` at `path`: mapped read-only (null when not).
// Opens the block file at `path` when its header names a block of `digest` and `size`: the
// descriptor (caller closes it) and the file's size; -1 and why not otherwise.
int open_valid_block(const std::string& path, const ContentDigest& digest, uint64_t size, size_t* file_size,
                     const char** why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = "block file missing";
    return -1;
  }
  struct stat st;
  uint8_t header[kBlockHeaderBytes];
  if (::fstat(fd, &st) != 0 || !read_all(fd, header, sizeof(header), 0)) {
    *why = "block file unreadable";
  } else if ((*why = check_block_header(header, static_cast<uint64_t>(st.st_size), digest, size)) == nullptr) {
    *file_size = static_cast<size_t>(st.st_size);
    return fd;
  }
  ::close(fd);
  return -1;
}

// A valid block file mapped read-only (null and why not otherwise).
void* map_block(const std::string& path, const ContentDigest& digest, uint64_t size, size_t* length,
                const char** why) {
  size_t file_size = 0;
  const int fd = open_valid_block(path, digest, size, &file_size, why);
  if (fd < 0) return nullptr;
  void* base = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);  // the mapping keeps the file referenced
  if (base == MAP_FAILED) {
    *why = "mmap failed";
    return nullptr;
  }
  *length = file_size;
  return base;
}

bool block_file_valid(const std::string& path, const ContentDigest& digest, uint64_t size) {
  size_t file_size = 0;
  const char* why = nullptr;
  const int fd = open_valid_block(path, digest, size, &file_size, &why);
  if (fd >= 0) ::close(fd);
  return fd >= 0;
}

}  // namespace

void set_weights_cache_dir(const char* dir) {
  std::lock_guard<std::mutex> lock(g_dir_mutex);
  g_dir_set = true;
  g_dir = dir == nullptr ? "" : dir;
}

WeightsFileTotals weights_file_totals() {
  WeightsFileTotals t;
  t.hits = g_hits;
  t.mapped_blocks = g_mapped_blocks;
  t.mapped_bytes = g_mapped_bytes;
  t.written_blocks = g_written_blocks;
  t.index_writes = g_index_writes;
  t.indexes_loaded = g_indexes_loaded;
  t.indexes_refused = g_indexes_refused;
  t.packed_blocks = g_packed_blocks;
  t.packed_bytes = g_packed_bytes;
  return t;
}

void note_packed_in_memory(size_t bytes) {
  g_packed_blocks++;
  g_packed_bytes += bytes;
}

std::string configured_weights_cache_dir() {
  std::lock_guard<std::mutex> lock(g_dir_mutex);
  if (g_dir_set) return g_dir;
  const char* env = std::getenv("EMBER_XNNPACK_WEIGHTS_CACHE");
  return env == nullptr ? "" : env;
}

const ContentDigest& weights_environment() {
  static const ContentDigest digest = [] {
    ContentDigester d;
    const char tag[32] = "ember xnnpack weights v1";
    d.update(tag, sizeof(tag));
    // XNNPACK's microkernel build (which kernels exist, how they pack).
    const size_t id_size = xnn_experimental_get_build_identifier_size();
    uint8_t id[64] = {0};
    std::memcpy(id, xnn_experimental_get_build_identifier_data(), id_size < sizeof(id) ? id_size : sizeof(id));
    d.update(id, sizeof(id));
    // What XNNPACK picks kernels by: the ISA features and the cores' microarchitectures.
    uint8_t isa[512] = {0};
    if (cpuinfo_initialize()) {
      std::memcpy(isa, &cpuinfo_isa, sizeof(cpuinfo_isa) < sizeof(isa) ? sizeof(cpuinfo_isa) : sizeof(isa));
      d.update(isa, sizeof(isa));
      for (uint32_t i = 0; i < cpuinfo_get_uarchs_count(); ++i) {
        uint8_t u[32] = {0};
        const uint32_t uarch = static_cast<uint32_t>(cpuinfo_get_uarch(i)->uarch);
        std::memcpy(u, &uarch, sizeof(uarch));
        d.update(u, sizeof(u));
      }
    }
    return d.finish();
  }();
  return digest;
}

bool ProgramFileCache::open(const std::string& dir, const std::vector<Region>& regions) {
  close();
  stats_ = FileCacheStats();
  if (dir.empty() || regions.empty()) return false;
  for (const Region& r : regions) {
    if (!r.digest.is_zero()) continue;
    EMBER_LOG(Info, "xnnpack: the program or one of its data files has no content digest (exported before it "
                    "existed): packed weights are not cached in %s; re-export to cache them", dir.c_str());
    return false;
  }
  // One program: its own digest (the index name it always had). With data files: a digest of
  // all of theirs, in order.
  ContentDigest program = regions[0].digest;
  if (regions.size() > 1) {
    ContentDigester d;
    for (const Region& r : regions) {
      const uint64_t words[2] = {r.digest.lo, r.digest.hi};
      d.update(words, sizeof(words));
    }
    program = d.finish();
  }
  regions_.clear();
  uint64_t next = 0;
  for (const Region& r : regions) {
    regions_.push_back(Span64{r.bytes.data(), r.bytes.size(), next});
    next += r.bytes.size();
  }
  dir_ = dir;
  index_ = IndexFile();
  index_.program = program;
  index_.environment = weights_environment();
  index_path_ = dir_ + "/" + hex(program) + "-" + hex(index_.environment).substr(0, 16) + ".index";
  open_ = true;
  read_only_ = false;
  warned_ = false;
  index_dirty_ = false;
  stats_.enabled = true;
  const int fd = ::open(index_path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;  // first run on this machine: packed, then written
  struct stat st;
  std::vector<uint8_t> bytes;
  bool read = ::fstat(fd, &st) == 0 && st.st_size >= 0 && st.st_size < (64 << 20);
  if (read) {
    bytes.resize(static_cast<size_t>(st.st_size));
    read = read_all(fd, bytes.data(), bytes.size(), 0);
  }
  ::close(fd);
  const char* why = read ? parse_index(bytes.data(), bytes.size(), index_.program, index_.environment, &index_)
                         : "unreadable or over 64 MiB";
  if (why != nullptr) {
    index_.entries.clear();
    index_dirty_ = true;  // rewritten after packing
    warn_once(index_path_.c_str(), why);
    g_indexes_refused++;
  } else {
    stats_.index_loaded = true;
    g_indexes_loaded++;
  }
  return true;
}

bool ProgramFileCache::stable(const xnn_weights_cache_look_up_key* key, uint64_t* kernel, uint64_t* bias) const {
  auto offset_of = [&](const void* p, uint64_t* out) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    for (const Span64& r : regions_) {
      const uintptr_t base = reinterpret_cast<uintptr_t>(r.base);
      if (r.size == 0 || a < base || a - base >= r.size) continue;
      *out = r.first_offset + static_cast<uint64_t>(a - base);
      return true;
    }
    return false;
  };
  if (key == nullptr || key->kernel == nullptr || !offset_of(key->kernel, kernel)) return false;
  *bias = kNoOffset;
  return key->bias == nullptr || offset_of(key->bias, bias);
}

IndexEntry* ProgramFileCache::entry_for(uint32_t seed, uint64_t kernel, uint64_t bias) {
  for (IndexEntry& e : index_.entries) {
    if (e.same_key(seed, kernel, bias)) return &e;
  }
  return nullptr;
}

void ProgramFileCache::warn_once(const char* what, const char* why) {
  if (warned_) return;
  warned_ = true;
  EMBER_LOG(Warning, "xnnpack weights cache: %s: %s; packing in memory instead (correct, slower to start)", what, why);
}

const void* ProgramFileCache::find(const xnn_weights_cache_look_up_key* key, size_t size) {
  uint64_t kernel = 0, bias = 0;
  if (!open_ || !stable(key, &kernel, &bias)) return nullptr;
  IndexEntry* e = entry_for(key->seed, kernel, bias);
  if (e == nullptr || e->ambiguous || (size != 0 && e->size != size)) return nullptr;
  std::vector<Mapping>& table = mappings();
  Mapping* m = nullptr;
  for (Mapping& candidate : table) {
    if (candidate.digest == e->block) m = &candidate;
  }
  if (m == nullptr) {
    const std::string path = dir_ + "/blocks/" + hex(e->block) + ".bin";
    size_t length = 0;
    const char* why = nullptr;
    void* base = map_block(path, e->block, e->size, &length, &why);
    if (base == nullptr) {
      warn_once(path.c_str(), why);
      // Forget the entry: the packing that follows records it again with a fresh block.
      *e = index_.entries.back();
      index_.entries.pop_back();
      index_dirty_ = true;
      return nullptr;
    }
    table.push_back(Mapping{e->block, base, length, 0});
    m = &table.back();
  }
  bool mine = false;
  for (const ContentDigest& d : mapped_) mine = mine || d == m->digest;
  if (!mine) {
    m->refs++;
    mapped_.push_back(m->digest);
    stats_.mapped_blocks++;
    stats_.mapped_bytes += e->size;
    g_mapped_blocks++;
    g_mapped_bytes += e->size;
  }
  stats_.hits++;
  g_hits++;
  return static_cast<const uint8_t*>(m->base) + kBlockHeaderBytes;
}

void ProgramFileCache::record(const xnn_weights_cache_look_up_key* key, const void* data, size_t size,
                              const ContentDigest& digest) {
  uint64_t kernel = 0, bias = 0;
  if (!open_ || read_only_ || !stable(key, &kernel, &bias)) return;
  if (IndexEntry* e = entry_for(key->seed, kernel, bias)) {
    if (!e->ambiguous && (e->block != digest || e->size != size)) {
      e->ambiguous = true;  // one key, two packings: never served from the file
      index_dirty_ = true;
    }
    return;
  }
  IndexEntry e;
  e.seed = key->seed;
  e.kernel_offset = kernel;
  e.bias_offset = bias;
  e.size = size;
  e.block = digest;
  index_.entries.push_back(e);
  index_dirty_ = true;
  for (const Pending& p : pending_) {
    if (p.digest == digest) return;
  }
  pending_.push_back(Pending{data, size, digest});
}

void ProgramFileCache::flush() {
  if (!open_ || read_only_ || (!index_dirty_ && pending_.empty())) {
    pending_.clear();
    return;
  }
  const std::string blocks = dir_ + "/blocks";
  if (!make_directories(blocks, 0755)) {
    read_only_ = true;
    warn_once(dir_.c_str(), "cannot create the directory; the cache is read-only for this process");
    pending_.clear();
    return;
  }
  for (const Pending& p : pending_) {
    const std::string path = blocks + "/" + hex(p.digest) + ".bin";
    if (block_file_valid(path, p.digest, p.size)) continue;  // another program wrote it
    uint8_t header[kBlockHeaderBytes];
    encode_block_header(p.digest, p.size, header);
    if (const int err = write_file_atomically(path, header, sizeof(header), p.data, p.size); err != 0) {
      read_only_ = true;
      warn_once(path.c_str(), std::strerror(err));
      pending_.clear();
      return;
    }
    stats_.written_blocks++;
    g_written_blocks++;
  }
  pending_.clear();
  const std::vector<uint8_t> bytes = encode_index(index_);
  if (const int err = write_file_atomically(index_path_, bytes.data(), bytes.size()); err != 0) {
    read_only_ = true;
    warn_once(index_path_.c_str(), std::strerror(err));
    return;
  }
  stats_.index_writes++;
  g_index_writes++;
  index_dirty_ = false;
}

void ProgramFileCache::close() {
  std::vector<Mapping>& table = mappings();
  for (const ContentDigest& d : mapped_) {
    for (size_t i = 0; i < table.size(); ++i) {
      if (table[i].digest != d) continue;
      if (--table[i].refs == 0) {
        ::munmap(table[i].base, table[i].length);
        table[i] = table.back();
        table.pop_back();
      }
      break;
    }
  }
  mapped_.clear();
  pending_.clear();
  index_.entries.clear();
  open_ = false;
}

}  // namespace xnnpack
}  // namespace ember
