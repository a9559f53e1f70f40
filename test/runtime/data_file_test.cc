// .ptd data files (runtime/program/data_file.h) and programs whose weights live in them
// (Program::ExternalData, runtime/program/external_data.cc): every way a data file can be
// missing, damaged, crafted or mismatched must end in a precise error (code + a message naming
// the tensor), never a crash (run under --config=asan too); a program that binds runs exactly
// like the same model exported with its weights inline. Hand-built data files on their own:
// data_file_format_test.cc.
//
// Programs and data files come from the exporter (shared/models/small_cnn and dynamic_mlp,
// exported in-process with ExportOptions::external_weights) or from DataFileWriter (re-written
// entries). The tests skip when ../shared is absent.

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "exporter/emit/data_file_writer.h"
#include "exporter/exporter.h"
#include "exporter/util/npy.h"
#include "runtime/executor/method.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/memory/memory_allocator.h"
#include "runtime/program/data_file.h"
#include "runtime/program/file_header.h"
#include "runtime/program/program.h"
#include "schema/program_generated.h"
#include "test/exporter/shared_dir.h"
#include "test/runtime/data_file_test_util.h"

namespace ember {
namespace {

using exporter::DataFileWriter;
using exporter::ExportOptions;
using exporter::NpyArray;
using namespace data_file_testing;

std::string temp_path(const std::string& name) {
  std::string path = ::testing::TempDir();
  if (!path.empty() && path.back() != '/') path += '/';
  path += name;
  std::remove(path.c_str());  // export_* appends to an existing file: start from none
  return path;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

// Program::load(Full) of `pte` against `files`.
Result<Program> load_program(const PteBytes& pte, std::vector<const DataFile*> files, bool allow_updated,
                             Diagnostic* diag) {
  BufferDataLoader loader(pte.data(), pte.size());
  Program::ExternalData data;
  data.files = Span<const DataFile* const>(files.data(), files.size());
  data.allow_updated_weights = allow_updated;
  return Program::load(&loader, Program::Verification::Full, diag, data);
}

// The first external segment of an exported program: (graph name, key). Its bytes are the
// ones a missing data file is reported for.
struct ExternalRef {
  std::string name, key;
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> sizes;
};
std::vector<ExternalRef> external_refs(const PteBytes& pte) {
  std::vector<ExternalRef> refs;
  const schema::Program* p = schema::GetProgram(pte.data() + kFileHeaderSize);
  if (p->segments() == nullptr) return refs;
  for (const schema::Segment* s : *p->segments()) {
    if (s->external() == nullptr) continue;
    ExternalRef r;
    r.key = s->external()->key()->str();
    r.name = s->external()->name() != nullptr ? s->external()->name()->str() : r.key;
    r.dtype = static_cast<ScalarType>(s->external()->dtype());
    if (s->external()->sizes() != nullptr) r.sizes.assign(s->external()->sizes()->begin(), s->external()->sizes()->end());
    refs.push_back(r);
  }
  return refs;
}

// Runs method "forward" of `program` on `inputs`; returns output 0's bytes, or "" + error.
struct RunResult {
  std::string error;            // empty on success
  std::vector<uint8_t> output;  // output 0, contiguous
  std::vector<int64_t> shape;
};
RunResult run_forward(const Program& program, const std::vector<NpyArray>& inputs) {
  RunResult r;
  Result<MethodMeta> meta = program.method_meta("forward");
  if (!meta.ok()) return RunResult{"no method forward", {}, {}};
  std::vector<PteBytes> arenas;
  std::vector<Span<uint8_t>> spans;
  for (size_t i = 0; i < meta->num_arenas(); ++i) arenas.emplace_back(*meta->arena_size(i), 0);
  for (PteBytes& a : arenas) spans.emplace_back(a.data(), a.size());
  PteBytes method_mem(1 << 20), temp_mem(1 << 20);
  MemoryAllocator method_alloc(method_mem.data(), method_mem.size());
  MemoryAllocator temp_alloc(temp_mem.data(), temp_mem.size());
  MemoryManager mm;
  mm.method_allocator = &method_alloc;
  mm.temp_allocator = &temp_alloc;
  mm.planned_arenas = Span<Span<uint8_t>>(spans.data(), spans.size());
  Diagnostic diag;
  Result<Method> method = program.load_method("forward", &mm, &diag);
  if (!method.ok()) return RunResult{std::string("load_method: ") + diag.message, {}, {}};
  std::vector<Tensor> tensors(inputs.size());
  std::vector<std::vector<int64_t>> sizes(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    sizes[i] = inputs[i].shape;
    Tensor& t = tensors[i];
    t.dtype = inputs[i].dtype;
    t.rank = static_cast<uint8_t>(sizes[i].size());
    t.sizes = sizes[i].data();
    t.max_sizes = sizes[i].data();
    t.data = const_cast<uint8_t*>(inputs[i].data.data());
    t.capacity_bytes = inputs[i].data.size();
    EValue v;
    v.tag = ValueTag::Tensor;
    v.as_tensor = &t;
    if (method->set_input(i, v) != Error::Ok) return RunResult{method->last_error_message(), {}, {}};
  }
  if (method->execute() != Error::Ok) return RunResult{std::string("execute: ") + method->last_error_message(), {}, {}};
  const Tensor* out = method->output(0).as_tensor;
  if (out == nullptr) return RunResult{"output 0 is not a tensor", {}, {}};
  r.output.assign(static_cast<const uint8_t*>(out->data), static_cast<const uint8_t*>(out->data) + out->nbytes());
  r.shape.assign(out->sizes, out->sizes + out->rank);
  return r;
}

// Loads `pte` against `ptds` (each Full) and runs it; "" + output or the first error.
RunResult load_and_run(const PteBytes& pte, const std::vector<const PteBytes*>& ptds, bool allow_updated,
                       const std::vector<NpyArray>& inputs) {
  std::vector<std::unique_ptr<DataFile>> files;
  std::vector<const DataFile*> ptrs;
  Diagnostic diag;
  for (const PteBytes* ptd : ptds) {
    Result<DataFile> f = load_data(*ptd, Verification::Full, &diag);
    if (!f.ok()) return RunResult{std::string("DataFile::load: ") + diag.message, {}, {}};
    files.push_back(std::make_unique<DataFile>(std::move(*f)));
    ptrs.push_back(files.back().get());
  }
  Result<Program> program = load_program(pte, ptrs, allow_updated, &diag);
  if (!program.ok()) return RunResult{std::string("Program::load: ") + diag.message, {}, {}};
  return run_forward(*program, inputs);
}

// What every shared-model test starts from, exported once per process.
struct Exported {
  bool skip = false;       // no shared/
  std::string error;       // export failed
  PteBytes cnn_pte;        // small_cnn, weights in cnn_ptd
  PteBytes cnn_ptd;
  std::string cnn_ptd_name;  // the base name the program records as a hint
  exporter::DataFileStats cnn_stats;
  PteBytes cnn_inline_pte;   // small_cnn, weights inside
  PteBytes mlp_pte;          // dynamic_mlp, weights in mlp_ptd
  PteBytes mlp_ptd;
  std::vector<NpyArray> cnn_inputs, mlp_inputs;
};

const Exported& exported() {
  static Exported* e = [] {
    auto* out = new Exported();
    const std::string shared = testing::shared_dir();
    if (shared.empty()) {
      out->skip = true;
      return out;
    }
    auto export_model = [&](const std::string& model, const std::string& ptd_name, PteBytes* pte,
                            PteBytes* ptd) -> exporter::DataFileStats {
      ExportOptions options;
      if (!ptd_name.empty()) options.external_weights = temp_path(ptd_name);
      auto r = exporter::export_pt2_file(shared + "/models/" + model + "/model.pt2", options);
      if (!r.ok()) {
        out->error = model + ": " + std::string(r.status().message());
        return {};
      }
      *pte = aligned(r->pte);
      if (ptd != nullptr) *ptd = aligned(r->ptd);
      return r->data_file_stats;
    };
    out->cnn_ptd_name = "data_file_test_small_cnn.ptd";
    out->cnn_stats = export_model("small_cnn", out->cnn_ptd_name, &out->cnn_pte, &out->cnn_ptd);
    export_model("small_cnn", "", &out->cnn_inline_pte, nullptr);
    export_model("dynamic_mlp", "data_file_test_dynamic_mlp.ptd", &out->mlp_pte, &out->mlp_ptd);
    for (const char* model : {"small_cnn", "dynamic_mlp"}) {
      auto in = exporter::read_npy(shared + "/models/" + model + "/input_0.npy");
      if (!in.ok()) {
        out->error = std::string(model) + ": " + std::string(in.status().message());
        continue;
      }
      (std::string(model) == "small_cnn" ? out->cnn_inputs : out->mlp_inputs).push_back(*in);
    }
    return out;
  }();
  return *e;
}

#define REQUIRE_EXPORTED()                                              \
  do {                                                                  \
    if (exported().skip) GTEST_SKIP() << "shared/ data not found";      \
    ASSERT_EQ(exported().error, "") << "export failed";                 \
  } while (0)

// The entries of a data file, re-written through DataFileWriter by `edit` (which may change
// an entry's dtype, sizes and bytes; its key stays). Keys stay as they were (a fresh writer
// stores each tensor under its own name).
using EntryEdit = std::function<void(const std::string& key, ScalarType* dtype, std::vector<int64_t>* sizes,
                                     std::vector<uint8_t>* bytes)>;
PteBytes rewrite(const PteBytes& ptd, const EntryEdit& edit) {
  Diagnostic diag;
  Result<DataFile> file = load_data(ptd, Verification::Full, &diag);
  EXPECT_TRUE(file.ok()) << diag.message;
  if (!file.ok()) return {};
  DataFileWriter writer;
  for (size_t i = 0; i < file->num_entries(); ++i) {
    DataEntryView e = *file->entry(i);
    ScalarType dtype = e.dtype;
    std::vector<int64_t> sizes(e.sizes.begin(), e.sizes.end());
    std::vector<uint8_t> bytes(e.bytes.begin(), e.bytes.end());
    if (edit) edit(e.key, &dtype, &sizes, &bytes);
    const exporter::DataFileRef ref = writer.add(e.key, dtype, sizes, bytes);
    EXPECT_EQ(ref.key, e.key) << "the writer renamed an entry";
  }
  return aligned(writer.bytes());
}

// The byte offset in the file of entry `key`'s first data byte.
size_t data_offset_of(const PteBytes& ptd, const std::string& key) {
  Result<DataFile> file = load_data(ptd, Verification::Structure, nullptr);
  if (!file.ok()) return 0;
  Result<DataEntryView> e = file->find(key.data(), key.size());
  if (!e.ok()) return 0;
  return static_cast<size_t>(e->bytes.data() - ptd.data());
}

TEST(ExternalDataTest, ExportWroteExternalSegments) {
  REQUIRE_EXPORTED();
  const Exported& e = exported();
  std::vector<ExternalRef> refs = external_refs(e.cnn_pte);
  ASSERT_FALSE(refs.empty());
  EXPECT_EQ(e.cnn_stats.entries, refs.size());
  EXPECT_EQ(e.cnn_stats.added_entries, refs.size());
  EXPECT_EQ(e.cnn_stats.existing_entries, 0u);
  EXPECT_LT(e.cnn_pte.size(), e.cnn_inline_pte.size() / 4);  // the weights moved out
  Diagnostic diag;
  Result<DataFile> file = load_data(e.cnn_ptd, Verification::Full, &diag);
  ASSERT_TRUE(file.ok()) << diag.message;
  EXPECT_EQ(file->num_entries(), refs.size());
  EXPECT_FALSE(file->content_digest().is_zero());
  EXPECT_EQ(file->content_digest(), content_digest(e.cnn_ptd.data() + kFileHeaderSize, e.cnn_ptd.size() - kFileHeaderSize));
  for (size_t i = 0; i < file->num_entries(); ++i) {
    DataEntryView a = *file->entry(i);
    Result<DataEntryView> b = file->find(a.key, std::strlen(a.key));
    ASSERT_TRUE(b.ok()) << a.key;
    EXPECT_EQ(a.bytes.data(), b->bytes.data());
    EXPECT_EQ(content_digest(a.bytes.data(), a.bytes.size()), a.digest);
    if (i > 0) {
      EXPECT_LT(std::string(file->entry(i - 1)->key), std::string(a.key));
    }
  }
  for (const ExternalRef& r : refs) {
    Result<DataEntryView> entry = file->find(r.key.data(), r.key.size());
    ASSERT_TRUE(entry.ok()) << r.key;
    EXPECT_EQ(entry->dtype, r.dtype);
    EXPECT_EQ(std::vector<int64_t>(entry->sizes.begin(), entry->sizes.end()), r.sizes);
  }
}

TEST(ExternalDataTest, ProgramWithoutItsDataFileNamesTheFirstTensor) {
  REQUIRE_EXPORTED();
  const Exported& e = exported();
  const std::vector<ExternalRef> refs = external_refs(e.cnn_pte);
  ASSERT_FALSE(refs.empty());
  for (Program::Verification v : {Program::Verification::Minimal, Program::Verification::Full}) {
    BufferDataLoader loader(e.cnn_pte.data(), e.cnn_pte.size());
    Diagnostic diag;
    Result<Program> p = Program::load(&loader, v, &diag);
    EXPECT_EQ(p.error(), Error::NotFound);
    const std::string msg = diag.message;
    EXPECT_TRUE(contains(msg, "first tensor '" + refs[0].name + "'")) << msg;
    EXPECT_TRUE(contains(msg, "pass it")) << msg;
    EXPECT_TRUE(contains(msg, "--data")) << msg;
    EXPECT_TRUE(contains(msg, e.cnn_ptd_name)) << msg;  // the file the exporter wrote
  }
}

TEST(ExternalDataTest, DataFileOfAnotherModelIsNotFoundNamingTheTensor) {
  REQUIRE_EXPORTED();
  const Exported& e = exported();
  Diagnostic diag;
  Result<DataFile> other = load_data(e.mlp_ptd, Verification::Full, &diag);
  ASSERT_TRUE(other.ok()) << diag.message;
  const std::vector<ExternalRef> refs = external_refs(e.cnn_pte);
  ASSERT_FALSE(refs.empty());
  ASSERT_EQ(other->find(refs[0].key.data(), refs[0].key.size()).error(), Error::NotFound)
      << "the two models share a key; pick another pair";
  Result<Program> p = load_program(e.cnn_pte, {&*other}, false, &diag);
  EXPECT_EQ(p.error(), Error::NotFound);
  const std::string msg = diag.message;
  EXPECT_TRUE(contains(msg, "tensor '" + refs[0].name + "'")) << msg;
  EXPECT_TRUE(contains(msg, "none of the 1 data file(s)")) << msg;
  EXPECT_TRUE(contains(msg, e.cnn_ptd_name)) << msg;
}

TEST(ExternalDataTest, DataFileMissingOneKeyNamesThatTensor) {
  REQUIRE_EXPORTED();
  const Exported& e = exported();
  const std::vector<ExternalRef> refs = external_refs(e.cnn_pte);
  ASSERT_GE(refs.size(), 2u);
  const ExternalRef& dropped = refs.back();
  // Rebuild without the last segment's entry.
  Diagnostic diag;
  Result<DataFile> full = load_data(e.cnn_ptd, Verification::Full, &diag);
  ASSERT_TRUE(full.ok());
  DataFileWriter writer;
  for (size_t i = 0; i < full->num_entries(); ++i) {
    DataEntryView v = *full->entry(i);
    if (v.key == dropped.key) continue;
    writer.add(v.key, v.dtype, std::vector<int64_t>(v.sizes.begin(), v.sizes.end()),
               std::vector<uint8_t>(v.bytes.begin(), v.bytes.end()));
  }
  PteBytes partial = aligned(writer.bytes());
  Result<DataFile> file = load_data(partial, Verification::Full, &diag);
  ASSERT_TRUE(file.ok()) << diag.message;
  Result<Program> p = load_program(e.cnn_pte, {&*file}, false, &diag);
  EXPECT_EQ(p.error(), Error::NotFound);
  EXPECT_TRUE(contains(diag.message, "tensor '" + dropped.name + "'")) << diag.message;
}

TEST(ExternalDataTest, TruncatedDataFileIsInvalidAtEveryCutPoint) {
  REQUIRE_EXPORTED();
  const Exported& e = exported();
  const PteBytes& ptd = e.cnn_ptd;
  const std::vector<ExternalRef> refs = external_refs(e.cnn_pte);
  ASSERT_FALSE(refs.empty());
  const uint64_t fb_size = read_le(ptd.data() + 24, 8);
  const uint64_t area = read_le(ptd.data() + 32, 8);
  const size_t first_data = data_offset_of(ptd, refs[0].key);
  ASSERT_GT(first_data, 0u);
  std::vector<size_t> cuts = {0, 1, 8, 12, 47, 63,                       // inside the header
                              64, 65, 64 + 8, 64 + fb_size / 2, 64 + fb_size - 1,  // inside the index
                              static_cast<size_t>(area),                  // before the first tensor
                              first_data + 1, first_data + 63, ptd.size() / 2, ptd.size() - 64,
                              ptd.size() - 1};                            // inside tensor bytes
  for (size_t n = 0; n < ptd.size(); n += 997) cuts.push_back(n);  // and a sweep
  for (size_t n : cuts) {
    SCOPED_TRACE(n);
    ASSERT_LT(n, ptd.size());
    PteBytes cut = aligned(ptd.data(), n);
    for (Verification v : {Verification::Minimal, Verification::Structure, Verification::Full}) {
      Diagnostic diag;
      Result<DataFile> f = load_data(cut, v, &diag);
      EXPECT_EQ(f.error(), Error::InvalidProgram) << diag.message;
      EXPECT_NE(diag.message[0], '\0');
    }
  }
}

TEST(ExternalDataTest, ChangedTensorByteFailsFullNamingTheEntryButPassesStructure) {
  REQUIRE_EXPORTED();
  const Exported& e = exported();
  const std::vector<ExternalRef> refs = external_refs(e.cnn_pte);
  ASSERT_FALSE(refs.empty());
  for (const ExternalRef& r : refs) {
    SCOPED_TRACE(r.key);
    const size_t at = data_offset_of(e.cnn_ptd, r.key);
    ASSERT_GT(at, 0u);
    PteBytes damaged = e.cnn_ptd;
    damaged[at + 3] ^= 0x40;  // the high bits of the first float's exponent
    Diagnostic diag;
    Result<DataFile> full = load_data(damaged, Verification::Full, &diag);
    EXPECT_EQ(full.error(), Error::InvalidProgram);
    EXPECT_TRUE(contains(diag.message, "entry '" + r.key + "' does not match its recorded content hash"))
        << diag.message;
    // The trade-off: Structure checks the index (dtype, sizes, bounds, alignment, order) but
    // never reads the tensor bytes, so it loads in time independent of the weights' size
    // (and leaves an mmap'd file's pages untouched) -- and cannot see a byte changed inside a
    // tensor. The program's digest check compares the index's digest, which is unchanged, so
    // the program binds and computes with the damaged weight. Use Full for files that may
    // have been damaged (downloads, shared storage); Structure for files checked once.
    Result<DataFile> structure = load_data(damaged, Verification::Structure, &diag);
    ASSERT_TRUE(structure.ok()) << diag.message;
    Result<Program> p = load_program(e.cnn_pte, {&*structure}, false, &diag);
    EXPECT_TRUE(p.ok()) << diag.message;
  }
}

TEST(ExternalDataTest, EntryWithAnotherDtypeIsInvalidNamingBothTypes) {
  REQUIRE_EXPORTED();
  const Exported& e = exported();
  const ExternalRef target = external_refs(e.cnn_pte).at(0);
  ASSERT_EQ(target.dtype, ScalarType::Float32);
  // Same key and sizes, stored as float16 (half the bytes).
  PteBytes ptd = rewrite(e.cnn_ptd, [&](const std::string& key, ScalarType* dtype, std::vector<int64_t>*,
                                        std::vector<uint8_t>* bytes) {
    if (key != target.key) return;
    *dtype = ScalarType::Float16;
    bytes->resize(bytes->size() / 2);
  });
  Diagnostic diag;
  Result<DataFile> file = load_data(ptd, Verification::Full, &diag);
  ASSERT_TRUE(file.ok()) << diag.message;
  Result<Program> p = load_program(e.cnn_pte, {&*file}, false, &diag);
  EXPECT_EQ(p.error(), Error::InvalidProgram);
  const std::string msg = diag.message;
  EXPECT_TRUE(contains(msg, "tensor '" + target.name + "'")) << msg;
  EXPECT_TRUE(contains(msg, "is " + describe(ScalarType::Float16, target.sizes))) << msg;
  EXPECT_TRUE(contains(msg, "expects " + describe(ScalarType::Float32, target.sizes))) << msg;
  // allow_updated_weights does not relax dtype or shape.
  EXPECT_EQ(load_program(e.cnn_pte, {&*file}, true, &diag).error(), Error::InvalidProgram);
  // int32: same byte count, other dtype.
  PteBytes same_bytes = rewrite(e.cnn_ptd, [&](const std::string& key, ScalarType* dtype, std::vector<int64_t>*,
                                               std::vector<uint8_t>*) {
    if (key == target.key) *dtype = ScalarType::Int32;
  });
  Result<DataFile> f2 = load_data(same_bytes, Verification::Full, &diag);
  ASSERT_TRUE(f2.ok()) << diag.message;
  EXPECT_EQ(load_program(e.cnn_pte, {&*f2}, true, &diag).error(), Error::InvalidProgram);
  EXPECT_TRUE(contains(diag.message, "is " + describe(ScalarType::Int32, target.sizes))) << diag.message;
}

TEST(ExternalDataTest, EntryWithAnotherShapeIsInvalidNamingBothShapes) {
  REQUIRE_EXPORTED();
  const Exported& e = exported();
  const ExternalRef target = external_refs(e.cnn_pte).at(0);
  int64_t numel = 1;
  for (int64_t s : target.sizes) numel *= s;
  ASSERT_GT(numel, 1);
  // The same bytes viewed as a flat vector (same byte count), then one element fewer.
  for (bool fewer : {false, true}) {
    SCOPED_TRACE(fewer);
    const std::vector<int64_t> shape = {fewer ? numel - 1 : numel};
    PteBytes ptd = rewrite(e.cnn_ptd, [&](const std::string& key, ScalarType*, std::vector<int64_t>* sizes,
                                          std::vector<uint8_t>* bytes) {
      if (key != target.key) return;
      *sizes = shape;
      bytes->resize(static_cast<size_t>(shape[0]) * 4);
    });
    Diagnostic diag;
    Result<DataFile> file = load_data(ptd, Verification::Full, &diag);
    ASSERT_TRUE(file.ok()) << diag.message;
    for (bool allow : {false, true}) {
      Result<Program> p = load_program(e.cnn_pte, {&*file}, allow, &diag);
      EXPECT_EQ(p.error(), Error::InvalidProgram);
      const std::string msg = diag.message;
      EXPECT_TRUE(contains(msg, "tensor '" + target.name + "'")) << msg;
      EXPECT_TRUE(contains(msg, "is " + describe(ScalarType::Float32, shape))) << msg;
      EXPECT_TRUE(contains(msg, "expects " + describe(ScalarType::Float32, target.sizes))) << msg;
    }
  }
}

TEST(ExternalDataTest, UpdatedWeightsNeedConsentAndChangeTheOutput) {
  REQUIRE_EXPORTED();
  const Exported& e = exported();
  const std::vector<ExternalRef> refs = external_refs(e.cnn_pte);
  ASSERT_FALSE(refs.empty());
  // "Re-exported with other weights": same keys, dtypes and shapes; every float scaled.
  PteBytes updated = rewrite(e.cnn_ptd, [](const std::string&, ScalarType* dtype, std::vector<int64_t>*,
                                           std::vector<uint8_t>* bytes) {
    ASSERT_EQ(*dtype, ScalarType::Float32);
    for (size_t i = 0; i + 4 <= bytes->size(); i += 4) {
      float f;
      std::memcpy(&f, bytes->data() + i, 4);
      f = f * 1.25f + 0.01f;
      std::memcpy(bytes->data() + i, &f, 4);
    }
  });
  Diagnostic diag;
  Result<DataFile> file = load_data(updated, Verification::Full, &diag);
  ASSERT_TRUE(file.ok()) << diag.message;
  Result<Program> refused = load_program(e.cnn_pte, {&*file}, false, &diag);
  EXPECT_EQ(refused.error(), Error::InvalidProgram);
  const std::string msg = diag.message;
  EXPECT_TRUE(contains(msg, "tensor '" + refs[0].name + "'")) << msg;
  EXPECT_TRUE(contains(msg, "content hash mismatch")) << msg;
  EXPECT_TRUE(contains(msg, "allow_updated_weights")) << msg;

  RunResult original = load_and_run(e.cnn_pte, {&e.cnn_ptd}, false, e.cnn_inputs);
  ASSERT_EQ(original.error, "");
  RunResult changed = load_and_run(e.cnn_pte, {&updated}, true, e.cnn_inputs);
  ASSERT_EQ(changed.error, "");
  EXPECT_EQ(changed.shape, original.shape);
  ASSERT_EQ(changed.output.size(), original.output.size());
  EXPECT_NE(changed.output, original.output);
  // ... and the consent does not change what the original weights compute.
  RunResult allowed_original = load_and_run(e.cnn_pte, {&e.cnn_ptd}, true, e.cnn_inputs);
  ASSERT_EQ(allowed_original.error, "");
  EXPECT_EQ(allowed_original.output, original.output);
}

TEST(ExternalDataTest, ResolvedProgramMatchesInlineExportBitwise) {
  REQUIRE_EXPORTED();
  const Exported& e = exported();
  RunResult external = load_and_run(e.cnn_pte, {&e.cnn_ptd}, false, e.cnn_inputs);
  ASSERT_EQ(external.error, "");
  BufferDataLoader loader(e.cnn_inline_pte.data(), e.cnn_inline_pte.size());
  Diagnostic diag;
  Result<Program> inline_program = Program::load(&loader, Program::Verification::Full, &diag);
  ASSERT_TRUE(inline_program.ok()) << diag.message;
  EXPECT_EQ(inline_program->num_external_segments(), 0u);
  RunResult inline_run = run_forward(*inline_program, e.cnn_inputs);
  ASSERT_EQ(inline_run.error, "");
  EXPECT_EQ(external.shape, inline_run.shape);
  ASSERT_EQ(external.output.size(), inline_run.output.size());
  EXPECT_EQ(0, std::memcmp(external.output.data(), inline_run.output.data(), external.output.size()))
      << "external weights changed the result";
  // Through a Structure-verified data file too.
  Result<DataFile> file = load_data(e.cnn_ptd, Verification::Structure, &diag);
  ASSERT_TRUE(file.ok());
  Result<Program> p = load_program(e.cnn_pte, {&*file}, false, &diag);
  ASSERT_TRUE(p.ok()) << diag.message;
  EXPECT_EQ(p->num_external_segments(), external_refs(e.cnn_pte).size());
  // Every external segment reads its entry's bytes in place.
  const schema::Program* fb = p->flatbuffer();
  for (uint32_t i = 0; i < fb->segments()->size(); ++i) {
    const schema::ExternalData* ext = fb->segments()->Get(i)->external();
    if (ext == nullptr) continue;
    Result<Span<const uint8_t>> seg = p->segment(i);
    ASSERT_TRUE(seg.ok());
    EXPECT_EQ(seg->data(), file->find(ext->key()->data(), ext->key()->size())->bytes.data());
  }
  RunResult structure_run = run_forward(*p, e.cnn_inputs);
  ASSERT_EQ(structure_run.error, "");
  EXPECT_EQ(structure_run.output, inline_run.output);
}

TEST(ExternalDataTest, WeightsSplitOverTwoDataFiles) {
  REQUIRE_EXPORTED();
  const Exported& e = exported();
  Diagnostic diag;
  Result<DataFile> whole = load_data(e.cnn_ptd, Verification::Full, &diag);
  ASSERT_TRUE(whole.ok());
  ASSERT_GE(whole->num_entries(), 2u);
  DataFileWriter even, odd;
  for (size_t i = 0; i < whole->num_entries(); ++i) {
    DataEntryView v = *whole->entry(i);
    (i % 2 == 0 ? even : odd)
        .add(v.key, v.dtype, std::vector<int64_t>(v.sizes.begin(), v.sizes.end()),
             std::vector<uint8_t>(v.bytes.begin(), v.bytes.end()));
  }
  PteBytes a = aligned(even.bytes()), b = aligned(odd.bytes());
  RunResult both = load_and_run(e.cnn_pte, {&a, &b}, false, e.cnn_inputs);
  ASSERT_EQ(both.error, "");
  RunResult reference = load_and_run(e.cnn_pte, {&e.cnn_ptd}, false, e.cnn_inputs);
  EXPECT_EQ(both.output, reference.output);
  // Either half alone is missing a tensor.
  for (const PteBytes* half : {&a, &b}) {
    RunResult r = load_and_run(e.cnn_pte, {half}, false, e.cnn_inputs);
    EXPECT_TRUE(contains(r.error, "is in none of the 1 data file(s)")) << r.error;
  }
  // A file listed twice is harmless; one from another model beside it too.
  EXPECT_EQ(load_and_run(e.cnn_pte, {&a, &e.mlp_ptd, &b, &a}, false, e.cnn_inputs).error, "");
}

TEST(ExternalDataTest, BadExternalDataArguments) {
  REQUIRE_EXPORTED();
  const Exported& e = exported();
  Diagnostic diag;
  Result<DataFile> file = load_data(e.cnn_ptd, Verification::Full, &diag);
  ASSERT_TRUE(file.ok());
  std::vector<const DataFile*> too_many(Program::kMaxDataFiles + 1, &*file);
  EXPECT_EQ(load_program(e.cnn_pte, too_many, false, &diag).error(), Error::InvalidArgument);
  EXPECT_TRUE(contains(diag.message, "at most 8")) << diag.message;
  EXPECT_EQ(load_program(e.cnn_pte, {&*file, nullptr}, false, &diag).error(), Error::InvalidArgument);
  EXPECT_TRUE(contains(diag.message, "data file 1 is null")) << diag.message;
  std::vector<const DataFile*> max(Program::kMaxDataFiles, &*file);
  EXPECT_TRUE(load_program(e.cnn_pte, max, false, &diag).ok()) << diag.message;
  // A self-contained program ignores data files it does not need.
  EXPECT_TRUE(load_program(e.cnn_inline_pte, {&*file}, false, &diag).ok()) << diag.message;
}

TEST(ExternalDataTest, DataFileAsProgramAndProgramAsDataFile) {
  REQUIRE_EXPORTED();
  const Exported& e = exported();
  Diagnostic diag;
  EXPECT_EQ(load_data(e.cnn_pte, Verification::Full, &diag).error(), Error::InvalidProgram);
  EXPECT_TRUE(contains(diag.message, "this is an Ember program (.pte), not a data file")) << diag.message;
  BufferDataLoader loader(e.cnn_ptd.data(), e.cnn_ptd.size());
  EXPECT_EQ(Program::load(&loader, Program::Verification::Full, &diag).error(), Error::InvalidProgram);
  EXPECT_TRUE(contains(diag.message, "this is an Ember data file (.ptd), not a program")) << diag.message;
}

TEST(ExternalDataTest, ExportedDataFileHeaderVersions) {
  REQUIRE_EXPORTED();
  const Exported& e = exported();
  PteBytes newer = e.cnn_ptd;
  write_le(newer.data() + 8, kDataFileFormatVersion + 1, 4);
  EXPECT_TRUE(contains(expect_refused(newer, Error::VersionMismatch), "newer than this runtime"));
  PteBytes zero = e.cnn_ptd;
  write_le(zero.data() + 8, 0, 4);
  expect_refused(zero, Error::InvalidProgram);
  PteBytes magic = e.cnn_ptd;
  magic[7] = 'E';  // "EMBERPTE": a program's magic on a data file's layout
  EXPECT_TRUE(contains(expect_refused(magic, Error::InvalidProgram), "this is an Ember program"));
}

// open_for_append: a second model's weights join the first's file; the first program stays
// valid, and exporting the first model again stores nothing new.
TEST(ExternalDataTest, AppendKeepsEarlierProgramsValidAndReusesIdenticalTensors) {
  REQUIRE_EXPORTED();
  const Exported& e = exported();
  const std::string shared = testing::shared_dir();
  const std::string path = temp_path("data_file_test_append.ptd");
  ExportOptions options;
  options.external_weights = path;

  auto first = exporter::export_pt2_file(shared + "/models/small_cnn/model.pt2", options);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->data_file_stats.existing_entries, 0u);
  const size_t cnn_entries = first->data_file_stats.entries;
  ASSERT_GT(cnn_entries, 0u);
  ASSERT_NO_FATAL_FAILURE(write_file(path, first->ptd));
  PteBytes cnn_pte = aligned(first->pte), cnn_ptd = aligned(first->ptd);

  // The writer reads the file back as the runtime does.
  auto reopened = DataFileWriter::open_for_append(path);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ(reopened->stats().existing_entries, cnn_entries);
  EXPECT_EQ(reopened->bytes(), first->ptd);  // rewriting an unchanged file is the identity

  auto second = exporter::export_pt2_file(shared + "/models/dynamic_mlp/model.pt2", options);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->data_file_stats.existing_entries, cnn_entries);
  EXPECT_GT(second->data_file_stats.added_entries, 0u);
  EXPECT_EQ(second->data_file_stats.entries, cnn_entries + second->data_file_stats.added_entries);
  ASSERT_NO_FATAL_FAILURE(write_file(path, second->ptd));
  PteBytes mlp_pte = aligned(second->pte), both_ptd = aligned(second->ptd);

  // The first program runs against the grown file, exactly as before.
  RunResult before = load_and_run(cnn_pte, {&cnn_ptd}, false, e.cnn_inputs);
  ASSERT_EQ(before.error, "");
  RunResult after = load_and_run(cnn_pte, {&both_ptd}, false, e.cnn_inputs);
  ASSERT_EQ(after.error, "");
  EXPECT_EQ(after.output, before.output);
  // And so does the second.
  RunResult mlp = load_and_run(mlp_pte, {&both_ptd}, false, e.mlp_inputs);
  EXPECT_EQ(mlp.error, "");
  // Without the appended file the second program is missing its tensors.
  EXPECT_TRUE(contains(load_and_run(mlp_pte, {&cnn_ptd}, false, e.mlp_inputs).error, "is in none of"));

  // The first model again: every tensor is found in the file; nothing is added.
  auto third = exporter::export_pt2_file(shared + "/models/small_cnn/model.pt2", options);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(third->data_file_stats.reused_entries, cnn_entries);
  EXPECT_EQ(third->data_file_stats.added_entries, 0u);
  EXPECT_EQ(third->data_file_stats.added_bytes, 0u);
  EXPECT_EQ(third->ptd, second->ptd);
  EXPECT_EQ(third->pte, first->pte);

  // A file there that is not a data file is never silently replaced.
  ASSERT_NO_FATAL_FAILURE(write_file(path, std::vector<uint8_t>(first->pte.begin(), first->pte.end())));
  auto refused = exporter::export_pt2_file(shared + "/models/small_cnn/model.pt2", options);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(contains(std::string(refused.status().message()), "cannot be appended to")) << refused.status();
  std::remove(path.c_str());
}

// A name already stored with other bytes gets a new key; the older program keeps its tensor.
TEST(ExternalDataTest, SameNameOtherBytesGetsANewKey) {
  REQUIRE_EXPORTED();
  const Exported& e = exported();
  const ExternalRef target = external_refs(e.cnn_pte).at(0);
  auto writer = DataFileWriter::from_bytes(e.cnn_ptd.data(), e.cnn_ptd.size());
  ASSERT_TRUE(writer.ok()) << writer.status();
  Diagnostic diag;
  Result<DataFile> orig = load_data(e.cnn_ptd, Verification::Full, &diag);
  DataEntryView v = *orig->find(target.key.data(), target.key.size());
  std::vector<uint8_t> bytes(v.bytes.begin(), v.bytes.end());
  bytes[0] ^= 1;
  exporter::DataFileRef ref = writer->add(target.name, v.dtype, std::vector<int64_t>(v.sizes.begin(), v.sizes.end()), bytes);
  EXPECT_NE(ref.key, target.key);
  EXPECT_EQ(ref.key.rfind(target.name + "~", 0), 0u) << ref.key;
  PteBytes grown = aligned(writer->bytes());
  EXPECT_EQ(load_and_run(e.cnn_pte, {&grown}, false, e.cnn_inputs).error, "");
}

}  // namespace
}  // namespace ember