// Weights outside the program (`ember export --external-weights W.ptd`, docs/pte-format.md
// "Data files"): a program exported with them runs exactly as the self-contained one (portable
// kernels and XNNPACK, bitwise equal outputs); programs exported one after another into one data
// file reuse its tensors and all stay valid; several methods and several programs over one file
// share one mapping of it in a process.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "delegates/xnnpack/runtime/xnnpack_backend.h"
#include "exporter/exporter.h"
#include "extension/module/module.h"
#include "extension/module/shared_data_file.h"
#include "test/exporter/shared_dir.h"
#include "test/exporter/shared_models.h"

namespace ember {
namespace {

std::string runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  return (srcdir && ws ? std::string(srcdir) + "/" + ws + "/" : "") + path;
}

// A scratch directory for the test's files (Bazel's TEST_TMPDIR, else /tmp).
std::string scratch(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return std::string(tmp ? tmp : "/tmp") + "/" + name;
}

void write(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(static_cast<bool>(f)) << path;
}

exporter::ExportOptions options(bool xnnpack, const std::string& external = "") {
  exporter::ExportOptions o;
  if (xnnpack) o.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  o.external_weights = external;
  return o;
}

// Every output of `method` on dir/input_<i>.npy, as raw bytes.
std::vector<std::vector<uint8_t>> run(Module& m, const std::string& dir, const std::string& method = "forward") {
  std::vector<exporter::NpyArray> inputs = testing::read_npy_series(dir, "input_");
  std::vector<TensorPtr> tensors;
  tensors.reserve(inputs.size());
  std::vector<Input> bound;
  for (exporter::NpyArray& x : inputs) {
    tensors.push_back(from_blob(x.data.data(), x.shape, x.dtype));
    bound.emplace_back(tensors.back());
  }
  auto out = m.execute(method, bound);
  EXPECT_TRUE(out.ok()) << dir << ": " << out.error().to_string();
  std::vector<std::vector<uint8_t>> result;
  if (!out.ok()) return result;
  for (const Output& o : *out) {
    if (!o.is_tensor()) continue;
    const uint8_t* p = static_cast<const uint8_t*>(o.tensor().data);
    result.emplace_back(p, p + o.tensor().nbytes());
  }
  return result;
}

// How many mappings of `path` this process has (/proc/self/maps lines naming it).
int mappings_of(const std::string& path) {
  char real[4096];
  if (realpath(path.c_str(), real) == nullptr) return -1;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  int n = 0;
  while (std::getline(maps, line)) {
    const size_t at = line.find('/');
    n += at != std::string::npos && line.compare(at, std::string::npos, real) == 0 ? 1 : 0;
  }
  return n;
}

// Resident KiB of this process's mapping of `path` (/proc/self/smaps "Rss:"; -1 when unmapped).
long resident_kib_of(const std::string& path) {
  char real[4096];
  if (realpath(path.c_str(), real) == nullptr) return -1;
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_mapping = false;
  long kib = -1;
  while (std::getline(smaps, line)) {
    const size_t at = line.find('/');
    if (line.find(':') != std::string::npos && line.find(' ') > line.find(':')) {  // "Key:   value" lines
      if (in_mapping && line.rfind("Rss:", 0) == 0) kib = (kib < 0 ? 0 : kib) + std::atol(line.c_str() + 4);
      continue;
    }
    in_mapping = at != std::string::npos && line.compare(at, std::string::npos, real) == 0;
  }
  return kib;
}

struct Case {
  const char* model;
  bool xnnpack;
};

class ExternalWeightsTest : public ::testing::TestWithParam<Case> {};

// The program with its weights in a data file computes exactly what the self-contained one
// does, holds almost none of the weight bytes itself, and refuses to load without the file.
TEST_P(ExternalWeightsTest, RunsExactlyAsTheInlineProgram) {
  const std::string shared = testing::shared_dir();
  if (shared.empty()) GTEST_SKIP() << "shared/ data not found";
  const Case c = GetParam();
  const std::string dir = shared + "/models/" + c.model;
  const std::string stem = scratch(std::string(c.model) + (c.xnnpack ? "_xnnpack" : "_portable"));
  std::remove((stem + ".ptd").c_str());
  auto inline_export = exporter::export_pt2_file(dir + "/model.pt2", options(c.xnnpack));
  ASSERT_TRUE(inline_export.ok()) << inline_export.status();
  auto external = exporter::export_pt2_file(dir + "/model.pt2", options(c.xnnpack, stem + ".ptd"));
  ASSERT_TRUE(external.ok()) << external.status();
  ASSERT_FALSE(external->ptd.empty());
  EXPECT_GT(external->stats.external_segments, 0u);
  EXPECT_TRUE(inline_export->ptd.empty());
  // The weights moved: the program shrank by the bytes the data file now holds, less the few
  // its references take (key, name, sizes, digest: under 256 bytes each).
  EXPECT_LE(external->pte.size() + external->stats.external_bytes,
            inline_export->pte.size() + 256 * external->stats.external_segments)
      << "program " << external->pte.size() << " + data " << external->stats.external_bytes << " vs inline "
      << inline_export->pte.size();
  ASSERT_NO_FATAL_FAILURE(write(stem + ".pte", external->pte));
  ASSERT_NO_FATAL_FAILURE(write(stem + ".ptd", external->ptd));
  ASSERT_NO_FATAL_FAILURE(write(stem + "_inline.pte", inline_export->pte));

  Module reference(stem + "_inline.pte");
  Module with_data(stem + ".pte", {stem + ".ptd"});
  auto want = run(reference, dir);
  auto got = run(with_data, dir);
  ASSERT_FALSE(want.empty());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(got[i] == want[i]) << c.model << " output " << i << " differs";
  if (c.xnnpack && std::string(c.model) == "mobilenet_v3_small") {
    // XNNPACK packed the weights; the data file's pages it read were given back (one copy of
    // the weights in the process, as for a self-contained mapped program).
    const long resident = resident_kib_of(stem + ".ptd");
    EXPECT_GE(resident, 0);
    EXPECT_LT(resident * 1024.0, 0.2 * double(external->ptd.size())) << resident << " KiB of the data file resident";
  }

  Module without(stem + ".pte");
  Status s = without.load();
  EXPECT_EQ(s.code(), Error::NotFound);
  EXPECT_NE(s.message().find("data file"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(".ptd"), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(SharedModels, ExternalWeightsTest,
                         ::testing::Values(Case{"small_cnn", false}, Case{"small_cnn", true},
                                           Case{"keyword_lstm", false}, Case{"keyword_lstm", true},
                                           Case{"bert_tiny", false}, Case{"bert_tiny", true},
                                           Case{"mobilenet_v3_small", true}, Case{"tiny_llama", false},
                                           Case{"tiny_llama", true}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.model) + (info.param.xnnpack ? "_xnnpack" : "_portable");
                         });

// Two programs of one model (portable and XNNPACK) exported one after the other into one data
// file: the second reuses the tensors the first stored, the first program stays valid, and
// both loaded in one process map the file once.
TEST(ExternalWeights, ProgramsShareOneDataFile) {
  const std::string shared = testing::shared_dir();
  if (shared.empty()) GTEST_SKIP() << "shared/ data not found";
  const std::string dir = shared + "/models/mobilenet_v3_small";
  const std::string ptd = scratch("shared_base.ptd");
  std::remove(ptd.c_str());
  auto first = exporter::export_pt2_file(dir + "/model.pt2", options(false, ptd));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_NO_FATAL_FAILURE(write(ptd, first->ptd));
  auto second = exporter::export_pt2_file(dir + "/model.pt2", options(true, ptd));
  ASSERT_TRUE(second.ok()) << second.status();
  const exporter::DataFileStats& st = second->data_file_stats;
  EXPECT_EQ(st.existing_entries, first->data_file_stats.entries);
  EXPECT_GT(st.reused_entries, 0u);
  // XNNPACK reads the same weights (a few constants it needs in another layout may be new).
  EXPECT_LT(double(st.added_bytes), 0.1 * double(first->stats.external_bytes))
      << st.added_bytes << " new bytes of " << first->stats.external_bytes;
  ASSERT_NO_FATAL_FAILURE(write(ptd, second->ptd));
  ASSERT_NO_FATAL_FAILURE(write(scratch("shared_a.pte"), first->pte));
  ASSERT_NO_FATAL_FAILURE(write(scratch("shared_b.pte"), second->pte));

  const size_t open_before = num_open_shared_data_files();
  {
    Module a(scratch("shared_a.pte"), {ptd});
    Module b(scratch("shared_b.pte"), {ptd});
    auto out_a = run(a, dir);
    auto out_b = run(b, dir);
    ASSERT_EQ(out_a.size(), 1u);
    ASSERT_EQ(out_b.size(), 1u);
    EXPECT_EQ(num_open_shared_data_files(), open_before + 1);
    EXPECT_EQ(mappings_of(ptd), 1) << "two programs over one data file should map it once";
    // Both match the model's reference outputs.
    auto expected = testing::read_npy_series(dir, "output_");
    ASSERT_EQ(expected.size(), 1u);
    for (const auto* got : {&out_a[0], &out_b[0]}) {
      ASSERT_EQ(got->size(), expected[0].data.size());
      exporter::NpyArray g = expected[0];
      std::memcpy(g.data.data(), got->data(), got->size());
      EXPECT_LT(testing::relative_l2(g, expected[0]), 1e-4);
    }
  }
  EXPECT_EQ(num_open_shared_data_files(), open_before);
  EXPECT_EQ(mappings_of(ptd), 0) << "the data file is unmapped when its last program goes";
}

// A program of several methods keeps one copy of the weights its methods share in the data file.
TEST(ExternalWeights, SeveralMethodsOverOneDataFile) {
  const std::string ed = runfile("test/models/encoder_decoder");
  const std::string ptd = scratch("encoder_decoder.ptd");
  std::remove(ptd.c_str());
  auto r = exporter::export_pt2_files({{"encode", ed + "/encode/model.pt2"}, {"decode", ed + "/decode/model.pt2"}},
                                      options(false, ptd));
  ASSERT_TRUE(r.ok()) << r.status();
  auto inline_r = exporter::export_pt2_files({{"encode", ed + "/encode/model.pt2"}, {"decode", ed + "/decode/model.pt2"}},
                                             options(false));
  ASSERT_TRUE(inline_r.ok()) << inline_r.status();
  // The shared embedding is one entry: the data file holds what the inline program's segments did.
  EXPECT_LE(r->ptd.size(), inline_r->stats.constant_bytes + 64 * r->data_file_stats.entries + 4096);
  EXPECT_GT(r->stats.deduplicated_segments, 0u);
  ASSERT_NO_FATAL_FAILURE(write(ptd, r->ptd));
  ASSERT_NO_FATAL_FAILURE(write(scratch("encoder_decoder.pte"), r->pte));
  ASSERT_NO_FATAL_FAILURE(write(scratch("encoder_decoder_inline.pte"), inline_r->pte));
  Module m(scratch("encoder_decoder.pte"), {ptd});
  Module ref(scratch("encoder_decoder_inline.pte"));
  for (const char* method : {"encode", "decode"}) {
    auto got = run(m, ed + "/" + method, method);
    auto want = run(ref, ed + "/" + method, method);
    ASSERT_EQ(got.size(), 1u) << method;
    EXPECT_TRUE(got == want) << method;
  }
}

// LoRA as the worked example (test/models/lora, tools/models/export_lora.py): a small Llama and
// two adapters applied at run time, so the base weights are byte-identical in the three
// archives. Exported one after another into one data file, the adapters' programs add only
// their adapter tensors; each matches PyTorch, and the two loaded together map the base once.
TEST(ExternalWeights, LoraAdaptersShareOneBaseDataFile) {
  const std::string lora = runfile("test/models/lora");
  const std::string ptd = scratch("lora_base.ptd");
  std::remove(ptd.c_str());
  size_t base_bytes = 0;
  for (const char* program : {"base", "adapter_a", "adapter_b"}) {
    auto r = exporter::export_pt2_file(lora + "/" + program + "/model.pt2", options(false, ptd));
    ASSERT_TRUE(r.ok()) << program << ": " << r.status();
    const exporter::DataFileStats& st = r->data_file_stats;
    if (std::string(program) == "base") {
      base_bytes = st.added_bytes;
    } else {
      // Only the adapter matrices are new: 2 layers x (q: A [4, 32], B [32, 4]; v: A [4, 32],
      // B [16, 4] (2 kv heads of 8)), float32.
      EXPECT_EQ(st.added_entries, 8u) << program;
      EXPECT_EQ(st.added_bytes, 2u * (4 * 32 + 32 * 4 + 4 * 32 + 16 * 4) * sizeof(float)) << program;
    }
    ASSERT_NO_FATAL_FAILURE(write(ptd, r->ptd));
    ASSERT_NO_FATAL_FAILURE(write(scratch(std::string("lora_") + program + ".pte"), r->pte));
  }
  EXPECT_GT(base_bytes, 20u * 3584u) << "the base should dwarf the adapters";
  Module a(scratch("lora_adapter_a.pte"), {ptd});
  Module b(scratch("lora_adapter_b.pte"), {ptd});
  for (auto [m, dir] : {std::make_pair(&a, lora + "/adapter_a"), std::make_pair(&b, lora + "/adapter_b")}) {
    auto got = run(*m, dir);
    auto want = testing::read_npy_series(dir, "output_");
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(want.size(), 1u);
    exporter::NpyArray g = want[0];
    ASSERT_EQ(got[0].size(), g.data.size());
    std::memcpy(g.data.data(), got[0].data(), got[0].size());
    EXPECT_LT(testing::relative_l2(g, want[0]), 1e-5) << dir;
  }
  EXPECT_EQ(mappings_of(ptd), 1);
}

// Two XNNPACK programs over the same weights keep one packed copy in the process: the second
// packs them too (XNNPACK packs before the cache sees the bytes) but its copy is dropped for the
// first's, which lives until the last program holding it goes.
TEST(ExternalWeights, XnnpackProgramsOverOneDataFileHoldOnePackedCopy) {
  const std::string shared = testing::shared_dir();
  if (shared.empty()) GTEST_SKIP() << "shared/ data not found";
  const std::string dir = shared + "/models/mobilenet_v3_small";
  const std::string ptd = scratch("xnn_shared.ptd");
  std::remove(ptd.c_str());
  for (const char* name : {"xnn_a", "xnn_b"}) {
    auto r = exporter::export_pt2_file(dir + "/model.pt2", options(true, ptd));
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_NO_FATAL_FAILURE(write(ptd, r->ptd));
    ASSERT_NO_FATAL_FAILURE(write(scratch(std::string(name) + ".pte"), r->pte));
  }
  const uint64_t before = xnnpack::packed_weights_bytes_in_process();
  auto a = std::make_unique<Module>(scratch("xnn_a.pte"), std::vector<std::string>{ptd});
  const auto out_a = run(*a, dir);
  const uint64_t one = xnnpack::packed_weights_bytes_in_process();
  EXPECT_GT(one, before + 1000000) << "mobilenet_v3_small packs megabytes of weights";
  auto b = std::make_unique<Module>(scratch("xnn_b.pte"), std::vector<std::string>{ptd});
  const auto out_b = run(*b, dir);
  EXPECT_EQ(xnnpack::packed_weights_bytes_in_process(), one) << "the second program packed a second copy";
  EXPECT_TRUE(out_a == out_b);
  a.reset();
  EXPECT_EQ(xnnpack::packed_weights_bytes_in_process(), one) << "b still uses the packed weights";
  EXPECT_TRUE(run(*b, dir) == out_b);
  b.reset();
  EXPECT_EQ(xnnpack::packed_weights_bytes_in_process(), before);
}

}  // namespace
}  // namespace ember
