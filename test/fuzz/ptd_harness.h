// The ptd fuzzer's harness, shared with the regression tests (test/hardening): loads bytes as
// a .ptd data file (runtime/program/data_file.h) at Structure and Full verification and checks
// what a loaded file promises; then builds small programs whose external segments refer to
// the file's entries (runtime/program/external_data.cc) and loads and runs them. Never crashes
// on any bytes; reports what happened, and in `violation` any broken invariant (the fuzzer
// aborts on one, the regression test fails).
//
// Invariants checked:
//   - Full accepts only what Structure accepts; both fail alike when Structure fails, and
//     Full's only extra refusal is a content hash mismatch; Minimal accepts a file Structure
//     accepted and indexes it identically.
//   - A loaded file: entry(i) works for every i < num_entries() (NotFound at the end); its key,
//     sizes and bytes lie inside the file, the bytes 64-byte aligned and exactly numel x
//     element size; keys strictly increase; find(key) returns that same entry; after Full,
//     each entry's bytes hash to its recorded digest.
//   - The derived program (method "forward": y_i = x_i * w_i for up to kMaxBoundEntries
//     float32 entries w_i of the file, recorded with the entry's own dtype, sizes and digest)
//     loads against the file, runs on x_i = 1 and returns each w_i (NaNs as NaNs); recorded
//     with a wrong digest it is refused (content hash) unless allow_updated_weights; with
//     another dtype, another shape or an absent key it is refused naming the tensor.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "flatbuffers/flatbuffers.h"
#include "runtime/core/content_digest.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/tensor.h"
#include "runtime/executor/method.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/memory/memory_allocator.h"
#include "runtime/program/data_file.h"
#include "runtime/program/file_header.h"
#include "runtime/program/program.h"
#include "schema/data_file_generated.h"
#include "schema/program_generated.h"
#include "test/fuzz/pte_harness.h"  // Buffer

namespace ember {
namespace fuzz {

struct PtdOutcome {
  Error structure = Error::Ok;  // DataFile::load at Structure
  Error full = Error::Ok;       // ... and at Full
  std::string structure_message, full_message;
  size_t entries = 0;
  size_t bound_entries = 0;          // entries the derived program read
  int programs_loaded = 0;           // derived programs Program::load accepted
  int executions_ok = 0;
  std::vector<std::string> messages;  // why derived programs were refused, in order
  std::string violation;              // non-empty: an invariant broke
};

constexpr size_t kMaxBoundEntries = 4;
constexpr int64_t kMaxBoundNumel = 1 << 16;

// One external segment of a derived program.
struct ExternalSpec {
  std::string key;
  ScalarType dtype = ScalarType::Float32;  // recorded in the program
  std::vector<int64_t> sizes;               // recorded in the program
  ContentDigest digest;                     // recorded in the program
  std::vector<int64_t> tensor_sizes;        // of the float32 tensors that read it
};

// A program (64-byte header + FlatBuffer, no segment area) whose method "forward" has, per
// spec i, a float32 input x_i, a constant w_i in external segment i and an output
// y_i = aten::mul.Tensor(x_i, w_i). Its bytes, 64-byte aligned.
inline std::unique_ptr<Buffer> build_external_program(const std::vector<ExternalSpec>& specs) {
  namespace fb = ::flatbuffers;
  namespace sc = ::ember::schema;
  fb::FlatBufferBuilder b(1024);
  std::vector<fb::Offset<sc::Value>> values;
  std::vector<fb::Offset<sc::Instruction>> instructions;
  std::vector<uint32_t> inputs, outputs;
  uint64_t arena = 0;
  auto place = [&](uint64_t nbytes) {
    const uint64_t offset = (arena + 63) / 64 * 64;
    arena = offset + nbytes;
    return offset;
  };
  auto tensor = [&](const std::vector<int64_t>& sizes, sc::DataLocation location, uint64_t arena_offset,
                    uint32_t segment, uint64_t nbytes) {
    auto sizes_vec = b.CreateVector(sizes);
    auto t = sc::CreateTensor(b, sc::ScalarType::Float32, sizes_vec, 0, sc::ShapeDynamism::Static, location, 0,
                              arena_offset, segment, 0, nbytes);
    values.push_back(sc::CreateValue(b, sc::ValueKind::Tensor, t.Union()));
    return static_cast<int32_t>(values.size() - 1);
  };
  for (size_t i = 0; i < specs.size(); ++i) {
    uint64_t numel = 1;
    for (int64_t s : specs[i].tensor_sizes) numel *= static_cast<uint64_t>(s);
    const uint64_t nbytes = numel * 4;
    const int32_t x = tensor(specs[i].tensor_sizes, sc::DataLocation::CallerInput, place(nbytes), 0, nbytes);
    const int32_t w = tensor(specs[i].tensor_sizes, sc::DataLocation::Constant, 0, static_cast<uint32_t>(i), nbytes);
    const int32_t y = tensor(specs[i].tensor_sizes, sc::DataLocation::Arena, place(nbytes), 0, nbytes);
    const std::vector<int32_t> args = {x, w, y};
    instructions.push_back(sc::CreateInstruction(b, sc::InstructionKind::KernelCall,
                                                 sc::CreateKernelCallDirect(b, 0, &args, 1).Union()));
    inputs.push_back(static_cast<uint32_t>(x));
    outputs.push_back(static_cast<uint32_t>(y));
  }
  const std::vector<fb::Offset<sc::Operator>> ops = {sc::CreateOperatorDirect(b, "aten::mul", "Tensor")};
  const std::vector<uint64_t> arena_sizes = {(arena + 63) / 64 * 64};
  const std::vector<fb::Offset<sc::Delegate>> delegates;
  const std::vector<uint32_t> mutable_inputs;
  std::vector<fb::Offset<sc::Method>> methods = {sc::CreateMethodDirect(
      b, "forward", &values, &inputs, &outputs, &ops, &instructions, &delegates, &arena_sizes, &mutable_inputs, true)};
  std::vector<fb::Offset<sc::Segment>> segments;
  for (size_t i = 0; i < specs.size(); ++i) {
    const ExternalSpec& s = specs[i];
    uint64_t numel = 1;
    for (int64_t d : s.tensor_sizes) numel *= static_cast<uint64_t>(d);
    auto key = b.CreateString(s.key);
    auto sizes = b.CreateVector(s.sizes);
    auto name = b.CreateString("w" + std::to_string(i));
    auto ext = sc::CreateExternalData(b, key, static_cast<sc::ScalarType>(s.dtype), sizes, s.digest.lo, s.digest.hi,
                                      name);
    segments.push_back(sc::CreateSegment(b, 0, numel * 4, ext));
  }
  auto methods_vec = b.CreateVector(methods);
  auto segments_vec = b.CreateVector(segments);
  auto data_files = b.CreateVector(std::vector<fb::Offset<fb::String>>{b.CreateString("fuzz.ptd")});
  b.Finish(sc::CreateProgram(b, kFormatVersionExternalData, methods_vec, segments_vec, 0, 0, data_files), "EMB1");

  FileHeader h;
  h.format_version = kFormatVersionExternalData;
  h.header_size = kFileHeaderSize;
  h.flatbuffer_offset = kFileHeaderSize;
  h.flatbuffer_size = b.GetSize();
  auto out = std::make_unique<Buffer>(kFileHeaderSize + b.GetSize());
  write_file_header(h, out->data);
  std::memcpy(out->data + kFileHeaderSize, b.GetBufferPointer(), b.GetSize());
  return out;
}

namespace ptd_detail {

inline int compare_keys(const char* a, size_t a_size, const char* b, size_t b_size) {
  const int c = std::memcmp(a, b, a_size < b_size ? a_size : b_size);
  if (c != 0) return c;
  return a_size < b_size ? -1 : (a_size > b_size ? 1 : 0);
}

inline bool inside(const void* p, size_t n, const Buffer& file) {
  const uint8_t* q = static_cast<const uint8_t*>(p);
  return q >= file.data && n <= file.size && static_cast<size_t>(q - file.data) <= file.size - n;
}

// The index invariants of a file loaded at Structure or Full; "" when they hold.
inline std::string check_index(const DataFile& file, const Buffer& bytes) {
  const schema::DataFile* fb = schema::GetDataFile(bytes.data + kFileHeaderSize);
  const size_t n = file.num_entries();
  if (n != (fb->entries() == nullptr ? 0 : fb->entries()->size())) return "num_entries disagrees with the index";
  if (file.entry(n).error() != Error::NotFound) return "entry(num_entries()) is not NotFound";
  const char* prev_key = nullptr;
  size_t prev_size = 0;
  for (size_t i = 0; i < n; ++i) {
    Result<DataEntryView> e = file.entry(i);
    if (!e.ok()) return "entry(" + std::to_string(i) + ") failed after verification";
    const size_t key_size = fb->entries()->Get(static_cast<flatbuffers::uoffset_t>(i))->key()->size();
    if (e->key == nullptr || !inside(e->key, key_size + 1, bytes)) return "a key lies outside the file";
    if (!is_valid_scalar_type(static_cast<int>(e->dtype))) return "an entry has an invalid dtype";
    if (e->sizes.size() > static_cast<size_t>(kMaxRank)) return "an entry's rank is above kMaxRank";
    if (!e->sizes.empty() && !inside(e->sizes.data(), e->sizes.size() * sizeof(int64_t), bytes)) {
      return "an entry's sizes lie outside the file";
    }
    unsigned __int128 want = element_size(e->dtype);
    for (int64_t s : e->sizes) {
      if (s < 0) return "an entry has a negative size";
      want *= static_cast<uint64_t>(s);
      if (want > (static_cast<unsigned __int128>(1) << 64)) want = static_cast<unsigned __int128>(1) << 64;
    }
    if (want != e->bytes.size()) return "entry '" + std::string(e->key) + "' bytes != numel x element size";
    if (e->bytes.size() != 0) {
      if (!inside(e->bytes.data(), e->bytes.size(), bytes)) return "an entry's bytes lie outside the file";
      if ((e->bytes.data() - bytes.data) % kSegmentAlignment != 0) return "an entry's bytes are not 64-byte aligned";
    }
    if (prev_key != nullptr && compare_keys(prev_key, prev_size, e->key, key_size) >= 0) {
      return "keys are not strictly increasing";
    }
    prev_key = e->key;
    prev_size = key_size;
    Result<DataEntryView> f = file.find(e->key, key_size);
    if (!f.ok()) return "find(entry(" + std::to_string(i) + ").key) failed";
    if (f->key != e->key || f->bytes.data() != e->bytes.data() || f->bytes.size() != e->bytes.size() ||
        f->dtype != e->dtype || f->sizes.data() != e->sizes.data() || f->digest != e->digest) {
      return "find() and entry() disagree on '" + std::string(e->key) + "'";
    }
  }
  return "";
}

// Runs the derived program's "forward" on ones; "" when every output equals its weight.
inline std::string run_and_compare(const Program& program, const std::vector<DataEntryView>& weights,
                                   PtdOutcome* outcome) {
  Result<MethodMeta> meta = program.method_meta("forward");
  if (!meta.ok()) return "the derived program has no method";
  std::vector<std::unique_ptr<Buffer>> arenas;
  std::vector<Span<uint8_t>> spans;
  for (size_t i = 0; i < meta->num_arenas(); ++i) {
    arenas.emplace_back(new Buffer(*meta->arena_size(i)));
    spans.emplace_back(arenas.back()->data, arenas.back()->size);
  }
  static Buffer* method_mem = new Buffer(1u << 20);
  static Buffer* temp_mem = new Buffer(1u << 20);
  MemoryAllocator method_alloc(method_mem->data, method_mem->size);
  MemoryAllocator temp_alloc(temp_mem->data, temp_mem->size);
  MemoryManager mm;
  mm.method_allocator = &method_alloc;
  mm.temp_allocator = &temp_alloc;
  mm.planned_arenas = Span<Span<uint8_t>>(spans.data(), spans.size());
  Diagnostic diag;
  Result<Method> method = program.load_method("forward", &mm, &diag);
  if (!method.ok()) return std::string("load_method failed: ") + diag.message;
  std::vector<std::vector<float>> ones(weights.size());
  std::vector<std::vector<int64_t>> sizes(weights.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    ones[i].assign(weights[i].bytes.size() / 4, 1.0f);
    sizes[i].assign(weights[i].sizes.begin(), weights[i].sizes.end());
    Tensor t;
    t.dtype = ScalarType::Float32;
    t.rank = static_cast<uint8_t>(sizes[i].size());
    t.sizes = sizes[i].data();
    t.max_sizes = sizes[i].data();
    t.data = ones[i].data();
    t.capacity_bytes = ones[i].size() * 4;
    EValue v;
    v.tag = ValueTag::Tensor;
    v.as_tensor = &t;
    if (method->set_input(i, v) != Error::Ok) {
      return "set_input " + std::to_string(i) + " failed: " + method->last_error_message();
    }
  }
  if (method->execute() != Error::Ok) return std::string("execute failed: ") + method->last_error_message();
  ++outcome->executions_ok;
  for (size_t i = 0; i < weights.size(); ++i) {
    const Tensor* out = method->output(i).as_tensor;
    if (out == nullptr || out->nbytes() != weights[i].bytes.size()) return "output " + std::to_string(i) + " has the wrong size";
    for (size_t k = 0; k < weights[i].bytes.size() / 4; ++k) {
      float got, want;
      std::memcpy(&got, static_cast<const uint8_t*>(out->data) + 4 * k, 4);
      std::memcpy(&want, weights[i].bytes.data() + 4 * k, 4);
      if (std::isnan(got) && std::isnan(want)) continue;
      if (std::memcmp(&got, &want, 4) != 0) {
        return "output " + std::to_string(i) + " element " + std::to_string(k) + " is not the weight '" +
               weights[i].key + "' read from the data file";
      }
    }
  }
  return "";
}

inline Result<Program> load_derived(const Buffer& pte, const DataFile& file, bool allow_updated, Diagnostic* diag) {
  BufferDataLoader loader(pte.data, pte.size);
  const DataFile* files[1] = {&file};
  Program::ExternalData data;
  data.files = Span<const DataFile* const>(files, 1);
  data.allow_updated_weights = allow_updated;
  return Program::load(&loader, Program::Verification::Full, diag, data);
}

inline bool contains(const char* haystack, const char* needle) { return std::strstr(haystack, needle) != nullptr; }

// The derived programs against `file` (loaded at Structure from `bytes`); "" when every
// expectation holds.
inline std::string check_programs(const DataFile& file, const Buffer& bytes, PtdOutcome* outcome) {
  const schema::DataFile* fb = schema::GetDataFile(bytes.data + kFileHeaderSize);
  std::vector<DataEntryView> picked;
  std::vector<ExternalSpec> specs;
  for (size_t i = 0; i < file.num_entries() && picked.size() < kMaxBoundEntries; ++i) {
    Result<DataEntryView> e = file.entry(i);
    // The key's bytes (a NUL inside is allowed; the program stores them all); an empty key is
    // refused by the program side, so it is left out.
    const flatbuffers::String* key = fb->entries()->Get(static_cast<flatbuffers::uoffset_t>(i))->key();
    if (!e.ok() || e->dtype != ScalarType::Float32 || key->size() == 0) continue;
    int64_t numel = 1;
    bool small = true;
    for (int64_t s : e->sizes) {
      if (s < 1 || s > kMaxBoundNumel || numel * s > kMaxBoundNumel) {
        small = false;
        break;
      }
      numel *= s;
    }
    if (!small) continue;
    ExternalSpec s;
    s.key.assign(key->data(), key->size());
    s.dtype = e->dtype;
    s.sizes.assign(e->sizes.begin(), e->sizes.end());
    s.tensor_sizes = s.sizes;
    s.digest = e->digest;
    specs.push_back(s);
    picked.push_back(*e);
  }
  Diagnostic diag;
  if (specs.empty()) {
    // Nothing to bind: a program reading an absent key must be NotFound.
    ExternalSpec s;
    s.key = "\x01" "absent";
    s.sizes = {1};
    s.tensor_sizes = {1};
    if (file.find(s.key.data(), s.key.size()).ok()) return "";
    std::unique_ptr<Buffer> pte = build_external_program({s});
    Result<Program> p = load_derived(*pte, file, true, &diag);
    if (p.error() != Error::NotFound) return std::string("absent key: expected NotFound, got ") + error_name(p.error()) + ": " + diag.message;
    outcome->messages.push_back(diag.message);
    return "";
  }
  outcome->bound_entries = specs.size();

  // As recorded: binds and computes with the file's bytes.
  {
    std::unique_ptr<Buffer> pte = build_external_program(specs);
    Result<Program> p = load_derived(*pte, file, false, &diag);
    if (!p.ok()) return std::string("the derived program was refused: ") + diag.message;
    ++outcome->programs_loaded;
    for (size_t i = 0; i < specs.size(); ++i) {
      Result<Span<const uint8_t>> seg = p->segment(static_cast<uint32_t>(i));
      if (!seg.ok() || seg->data() != picked[i].bytes.data()) return "segment() does not read the entry in place";
    }
    std::string r = run_and_compare(*p, picked, outcome);
    if (!r.empty()) return r;
  }
  // Another digest: refused by default, accepted (and the same bytes read) when allowed.
  {
    std::vector<ExternalSpec> changed = specs;
    changed.back().digest.lo ^= 1;
    std::unique_ptr<Buffer> pte = build_external_program(changed);
    Result<Program> refused = load_derived(*pte, file, false, &diag);
    if (refused.error() != Error::InvalidProgram || !contains(diag.message, "content hash mismatch")) {
      return std::string("digest mismatch not refused: ") + error_name(refused.error()) + ": " + diag.message;
    }
    outcome->messages.push_back(diag.message);
    Result<Program> allowed = load_derived(*pte, file, true, &diag);
    if (!allowed.ok()) return std::string("allow_updated_weights refused: ") + diag.message;
    ++outcome->programs_loaded;
    std::string r = run_and_compare(*allowed, picked, outcome);
    if (!r.empty()) return r;
  }
  // Another dtype, another shape (a leading 1), an absent key: refused naming the tensor.
  for (int variant = 0; variant < 3; ++variant) {
    std::vector<ExternalSpec> changed = specs;
    ExternalSpec& s = changed.front();
    Error want = Error::InvalidProgram;
    if (variant == 0) s.dtype = ScalarType::Int32;
    if (variant == 1) {
      if (s.sizes.size() >= static_cast<size_t>(kMaxRank)) continue;
      s.sizes.insert(s.sizes.begin(), 1);
    }
    if (variant == 2) {
      s.key += "\x01" "absent";
      if (file.find(s.key.data(), s.key.size()).ok()) continue;
      want = Error::NotFound;
    }
    std::unique_ptr<Buffer> pte = build_external_program(changed);
    Result<Program> p = load_derived(*pte, file, true, &diag);
    if (p.error() != want || !contains(diag.message, "tensor 'w0'")) {
      return "variant " + std::to_string(variant) + ": expected " + error_name(want) + " naming 'w0', got " +
             error_name(p.error()) + ": " + diag.message;
    }
    outcome->messages.push_back(diag.message);
  }
  return "";
}

}  // namespace ptd_detail

inline PtdOutcome run_ptd_bytes(const uint8_t* data, size_t size) {
  PtdOutcome outcome;
  // An exactly sized, 64-byte aligned copy: ASan then sees reads past the end of the file.
  Buffer bytes(size);
  if (size > 0) std::memcpy(bytes.data, data, size);
  BufferDataLoader loader(bytes.data, size);
  Diagnostic sdiag, fdiag;
  Result<DataFile> structure = DataFile::load(&loader, DataFile::Verification::Structure, &sdiag);
  Result<DataFile> full = DataFile::load(&loader, DataFile::Verification::Full, &fdiag);
  outcome.structure = structure.error();
  outcome.full = full.error();
  outcome.structure_message = sdiag.message;
  outcome.full_message = fdiag.message;
  if (!structure.ok()) {
    if (full.error() != structure.error() || outcome.full_message != outcome.structure_message) {
      outcome.violation = "Full and Structure refuse a file differently: " + outcome.structure_message + " / " +
                          outcome.full_message;
    } else if (outcome.structure_message.empty()) {
      outcome.violation = std::string("refused without a message: ") + error_name(structure.error());
    }
    return outcome;
  }
  outcome.entries = structure->num_entries();
  outcome.violation = ptd_detail::check_index(*structure, bytes);
  if (!outcome.violation.empty()) return outcome;
  // Minimal reads the same index.
  {
    Result<DataFile> minimal = DataFile::load(&loader, DataFile::Verification::Minimal, nullptr);
    if (!minimal.ok() || minimal->num_entries() != outcome.entries) {
      outcome.violation = "Minimal refuses or miscounts a file Structure accepted";
      return outcome;
    }
    for (size_t i = 0; i < outcome.entries; ++i) {
      if (!minimal->entry(i).ok() || minimal->entry(i)->bytes.data() != structure->entry(i)->bytes.data()) {
        outcome.violation = "Minimal and Structure index a file differently";
        return outcome;
      }
    }
  }
  bool all_match = true;
  for (size_t i = 0; i < outcome.entries; ++i) {
    DataEntryView e = *structure->entry(i);
    if (content_digest(e.bytes.data(), e.bytes.size()) != e.digest) all_match = false;
  }
  if (full.ok() != all_match) {
    outcome.violation = std::string("Full ") + (full.ok() ? "accepted" : "refused") + " a file whose digests " +
                        (all_match ? "all match" : "do not all match") + ": " + outcome.full_message;
    return outcome;
  }
  if (!full.ok()) {
    if (full.error() != Error::InvalidProgram || !ptd_detail::contains(fdiag.message, "recorded content hash")) {
      outcome.violation = std::string("Full refused a Structure-valid file for another reason: ") + fdiag.message;
      return outcome;
    }
  } else {
    std::string v = ptd_detail::check_index(*full, bytes);
    if (!v.empty()) {
      outcome.violation = "after Full: " + v;
      return outcome;
    }
  }
  outcome.violation = ptd_detail::check_programs(*structure, bytes, &outcome);
  return outcome;
}

}  // namespace fuzz
}  // namespace ember
