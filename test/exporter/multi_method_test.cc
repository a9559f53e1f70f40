// Programs of several methods (`ember export --method NAME=A.pt2 --method ...`): each method
// runs and matches its own archive's eager outputs (portable kernels and XNNPACK); methods
// exported from archives with the same weights store them once (the program at most 5% larger
// than one method's); names and archives are checked.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "exporter/exporter.h"
#include "extension/module/module.h"

namespace ember {
namespace {

// A file of the workspace, in the test's runfiles under Bazel (else relative to the checkout).
std::string runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  return (srcdir && ws ? std::string(srcdir) + "/" + ws + "/" : "") + path;
}

std::string model(const std::string& name) { return runfile("test/models/recurrent/" + name); }
std::string encoder_decoder(const std::string& method) { return runfile("test/models/encoder_decoder/" + method); }
std::string example_model(const std::string& file) { return runfile("examples/models/" + file); }

exporter::ExportOptions options(bool xnnpack) {
  exporter::ExportOptions o;
  if (xnnpack) o.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  return o;
}

// A program held at a 64-byte aligned address for the Module.
struct Loaded {
  explicit Loaded(const std::vector<uint8_t>& pte) : bytes(pte.size() + 64) {
    data = bytes.data() + (64 - reinterpret_cast<uintptr_t>(bytes.data()) % 64) % 64;
    std::memcpy(data, pte.data(), pte.size());
    module = std::make_unique<Module>(data, pte.size());
  }
  std::vector<uint8_t> bytes;
  uint8_t* data = nullptr;
  std::unique_ptr<Module> module;
};

double relative_l2(const Output& got, const exporter::NpyArray& want) {
  const float* g = got.data<float>();
  const float* w = reinterpret_cast<const float*>(want.data.data());
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    num += (double(g[i]) - w[i]) * (double(g[i]) - w[i]);
    den += double(w[i]) * w[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// Runs `method` of `m` on the archive's inputs and compares every output with its reference.
void expect_matches(Module& m, const std::string& method, const std::string& dir, int num_inputs, int num_outputs) {
  std::vector<exporter::NpyArray> inputs;
  std::vector<Input> bound;
  std::vector<TensorPtr> tensors;
  tensors.reserve(size_t(num_inputs));  // inputs refer to these: no reallocation
  for (int i = 0; i < num_inputs; ++i) {
    auto x = exporter::read_npy(dir + "/input_" + std::to_string(i) + ".npy");
    ASSERT_TRUE(x.ok()) << x.status();
    inputs.push_back(std::move(*x));
  }
  for (exporter::NpyArray& x : inputs) {
    tensors.push_back(from_blob(x.data.data(), x.shape, x.dtype));
    bound.emplace_back(tensors.back());
  }
  auto out = m.execute(method, bound);
  ASSERT_TRUE(out.ok()) << method << ": " << out.error().to_string();
  ASSERT_EQ(out->size(), size_t(num_outputs)) << method;
  for (int i = 0; i < num_outputs; ++i) {
    auto want = exporter::read_npy(dir + "/output_" + std::to_string(i) + ".npy");
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_EQ(out->at(i).numel(), want->numel()) << method << " output " << i;
    EXPECT_LT(relative_l2(out->at(i), *want), 1e-4) << method << " output " << i;
  }
}

class MultiMethodTest : public ::testing::TestWithParam<bool> {};

TEST_P(MultiMethodTest, EachMethodMatchesItsArchive) {
  auto r = exporter::export_pt2_files({{"gru", model("gru_linear_head") + "/model.pt2"},
                                       {"gru_h0", model("gru_h0") + "/model.pt2"},
                                       {"lstm", model("lstm_proj_bidir") + "/model.pt2"}},
                                      options(GetParam()));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->methods.size(), 3u);
  Loaded p(r->pte);
  auto names = p.module->method_names();
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"gru", "gru_h0", "lstm"}));
  // Out of order and twice: each method keeps its own memory and state.
  expect_matches(*p.module, "lstm", model("lstm_proj_bidir"), 1, 3);
  expect_matches(*p.module, "gru", model("gru_linear_head"), 1, 2);
  expect_matches(*p.module, "gru_h0", model("gru_h0"), 2, 2);
  expect_matches(*p.module, "gru", model("gru_linear_head"), 1, 2);
  if (GetParam()) {  // XNNPACK takes the GRU's linear head
    ASSERT_EQ(r->methods[0].second.backends.size(), 1u);
    EXPECT_GE(r->methods[0].second.backends[0].delegates, 1);
  }
}

// The output of `method` on a fixed ramp input of the method's declared shape.
std::vector<float> run_on_ramp(Module& m, const std::string& method) {
  auto meta = m.method_meta(method);
  EXPECT_TRUE(meta.ok());
  if (!meta.ok()) return {};
  auto info = meta->input_tensor_info(0);
  EXPECT_TRUE(info.ok());
  std::vector<int64_t> sizes(info->max_sizes.begin(), info->max_sizes.end());
  std::vector<float> x(info->nbytes / sizeof(float));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 97) / 97.0f - 0.5f;
  auto out = m.execute(method, {from_blob(x.data(), sizes)});
  EXPECT_TRUE(out.ok()) << out.error().to_string();
  if (!out.ok()) return {};
  return std::vector<float>(out->at(0).data<float>(), out->at(0).data<float>() + out->at(0).numel());
}

TEST_P(MultiMethodTest, IdenticalWeightsAreStoredOnce) {
  // The trained Fashion-MNIST CNN (examples/models) exported once, and twice under two names.
  const std::string archive = example_model("fashion_cnn.pt2");
  auto one = exporter::export_pt2_file(archive, options(GetParam()));
  ASSERT_TRUE(one.ok()) << one.status();
  auto two = exporter::export_pt2_files({{"forward", archive}, {"again", archive}}, options(GetParam()));
  ASSERT_TRUE(two.ok()) << two.status();
  // The second method's constants (and its identical delegate blobs) are the first's segments.
  EXPECT_EQ(two->stats.constant_bytes, one->stats.constant_bytes);
  EXPECT_EQ(two->stats.num_segments, one->stats.num_segments);
  EXPECT_GE(two->stats.deduplicated_segments, one->stats.num_segments);
  EXPECT_LE(double(two->pte.size()), 1.05 * double(one->pte.size()))
      << "one method " << one->pte.size() << " bytes, two " << two->pte.size();
  Loaded single(one->pte), pair(two->pte);
  const std::vector<float> want = run_on_ramp(*single.module, "forward");
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(run_on_ramp(*pair.module, "forward"), want);
  EXPECT_EQ(run_on_ramp(*pair.module, "again"), want);
}

// A T5 / Whisper-shaped pair (tools/models/export_encoder_decoder.py): the decoder attends to
// the encoder's output; one embedding serves both. Each method matches PyTorch, the encoder's
// output from Ember feeds the decoder, and the shared embedding is stored once.
TEST_P(MultiMethodTest, EncoderDecoderPairSharesItsEmbedding) {
  auto enc = exporter::export_pt2_file(encoder_decoder("encode") + "/model.pt2", options(GetParam()));
  auto dec = exporter::export_pt2_file(encoder_decoder("decode") + "/model.pt2", options(GetParam()));
  ASSERT_TRUE(enc.ok() && dec.ok()) << enc.status() << dec.status();
  auto r = exporter::export_pt2_files({{"encode", encoder_decoder("encode") + "/model.pt2"},
                                       {"decode", encoder_decoder("decode") + "/model.pt2"}},
                                      options(GetParam()));
  ASSERT_TRUE(r.ok()) << r.status();
  const size_t embedding_bytes = 64 * 32 * sizeof(float);
  EXPECT_GE(r->stats.deduplicated_bytes, embedding_bytes);
  EXPECT_LE(r->stats.constant_bytes + embedding_bytes, enc->stats.constant_bytes + dec->stats.constant_bytes);
  Loaded p(r->pte);
  expect_matches(*p.module, "encode", encoder_decoder("encode"), 1, 1);
  expect_matches(*p.module, "decode", encoder_decoder("decode"), 2, 1);
  // Chained as an app would: Ember's encoder output is the decoder's memory.
  auto src = exporter::read_npy(encoder_decoder("encode") + "/input_0.npy");
  auto tgt = exporter::read_npy(encoder_decoder("decode") + "/input_0.npy");
  auto want = exporter::read_npy(encoder_decoder("decode") + "/output_0.npy");
  ASSERT_TRUE(src.ok() && tgt.ok() && want.ok());
  auto memory = p.module->execute("encode", {from_blob(src->data.data(), src->shape, src->dtype)});
  ASSERT_TRUE(memory.ok()) << memory.error().to_string();
  std::vector<float> kept(memory->at(0).data<float>(), memory->at(0).data<float>() + memory->at(0).numel());
  std::vector<int64_t> memory_sizes(memory->at(0).sizes().begin(), memory->at(0).sizes().end());
  auto logits = p.module->execute("decode", {from_blob(tgt->data.data(), tgt->shape, tgt->dtype),
                                             from_blob(kept.data(), memory_sizes, ScalarType::Float32)});
  ASSERT_TRUE(logits.ok()) << logits.error().to_string();
  EXPECT_LT(relative_l2(logits->at(0), *want), 1e-4);
}

// Hugging Face's own T5 and Whisper (transformers modules from configs with seeded weights;
// tools/models/export_hf_seq2seq.py), each an encode and a decode archive: one two-method
// program per model, each method matching PyTorch; T5's shared embedding (encoder input,
// decoder input and tied LM head) is stored once.
TEST_P(MultiMethodTest, HuggingFaceT5AndWhisperMatchPerMethod) {
  for (const char* model : {"t5", "whisper"}) {
    SCOPED_TRACE(model);
    const std::string dir = runfile(std::string("test/models/hf_seq2seq/") + model);
    auto r = exporter::export_pt2_files({{"encode", dir + "/encode/model.pt2"}, {"decode", dir + "/decode/model.pt2"}},
                                        options(GetParam()));
    ASSERT_TRUE(r.ok()) << r.status();
    if (std::string(model) == "t5") {
      EXPECT_GE(r->stats.deduplicated_bytes, 128u * 32 * sizeof(float));
    }
    Loaded p(r->pte);
    expect_matches(*p.module, "encode", dir + "/encode", 1, 1);
    expect_matches(*p.module, "decode", dir + "/decode", 2, 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, MultiMethodTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "xnnpack" : "portable"; });

TEST(MultiMethodErrors, NamesAndArchivesAreChecked) {
  const std::string archive = model("gru_linear_head") + "/model.pt2";
  auto twice = exporter::export_pt2_files({{"m", archive}, {"m", archive}}, options(false));
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(std::string(twice.status().message()).find("two methods are named 'm'"), std::string::npos)
      << twice.status();
  auto missing = exporter::export_pt2_files({{"m", archive}, {"dec", "/nonexistent/dec.pt2"}}, options(false));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(std::string(missing.status().message()).find("method 'dec'"), std::string::npos) << missing.status();
  EXPECT_FALSE(exporter::export_pt2_files({}, options(false)).ok());
  // A bundled case for a method the program lacks.
  exporter::ExportOptions o = options(false);
  o.bundled_cases.push_back({"case", {}, {}, "nope"});
  auto bad_case = exporter::export_pt2_files({{"m", archive}}, o);
  ASSERT_FALSE(bad_case.ok());
  EXPECT_NE(std::string(bad_case.status().message()).find("'nope'"), std::string::npos) << bad_case.status();
}

}  // namespace
}  // namespace ember
