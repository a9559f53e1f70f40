// State shared by the methods of one program: a Llama exported as a prefill method (8 tokens)
// and a decode method (1 token) whose KV cache buffers have the same names is one program in
// which decode reads what prefill wrote. Checked against PyTorch run in the same order on one
// model (tools/models/export_lora.py wrote test/models/prefill_decode): prefill's logits, the
// decode step after it, and greedy generation token for token; with --separate-state the
// decode step sees an empty cache and differs (the comparison can fail).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "exporter/exporter.h"
#include "exporter/util/npy.h"
#include "extension/module/module.h"
#include "test/support/faulty_module_memory.h"

namespace ember {
namespace {

std::string data(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  return (srcdir && ws ? std::string(srcdir) + "/" + ws + "/" : "") + "test/models/prefill_decode/" + path;
}

exporter::NpyArray npy(const std::string& path) {
  auto a = exporter::read_npy(data(path));
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? std::move(*a) : exporter::NpyArray();
}

struct Program {
  explicit Program(const std::vector<uint8_t>& pte) : bytes(pte.size() + 64) {
    uint8_t* p = bytes.data() + (64 - reinterpret_cast<uintptr_t>(bytes.data()) % 64) % 64;
    std::memcpy(p, pte.data(), pte.size());
    module = std::make_unique<Module>(p, pte.size());
  }
  std::vector<uint8_t> bytes;
  std::unique_ptr<Module> module;
};

absl::StatusOr<exporter::ProgramExport> export_pair(bool xnnpack, bool share) {
  exporter::ExportOptions o;
  if (xnnpack) o.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  o.share_state = share;
  return exporter::export_pt2_files({{"prefill", data("prefill/model.pt2")}, {"decode", data("decode/model.pt2")}}, o);
}

// Runs `method` on tokens [1, n] and positions [n] (int64); the logits' values.
std::vector<float> step(Module& m, const std::string& method, std::vector<int64_t> tokens, std::vector<int64_t> pos) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  auto out = m.execute(method, {from_blob(tokens.data(), {1, n}, ScalarType::Int64),
                                from_blob(pos.data(), {n}, ScalarType::Int64)});
  EXPECT_TRUE(out.ok()) << method << ": " << out.error().to_string();
  if (!out.ok()) return {};
  return std::vector<float>(out->at(0).data<float>(), out->at(0).data<float>() + out->at(0).numel());
}

double max_abs_diff(const std::vector<float>& got, const exporter::NpyArray& want) {
  const float* w = reinterpret_cast<const float*>(want.data.data());
  if (static_cast<int64_t>(got.size()) != want.numel()) return INFINITY;
  double d = 0;
  for (size_t i = 0; i < got.size(); ++i) d = std::max(d, std::fabs(double(got[i]) - w[i]));
  return d;
}

int64_t argmax_last_row(const std::vector<float>& logits, size_t vocab) {
  const float* row = logits.data() + logits.size() - vocab;
  return static_cast<int64_t>(std::max_element(row, row + vocab) - row);
}

std::vector<int64_t> ints(const exporter::NpyArray& a) {
  const int64_t* p = reinterpret_cast<const int64_t*>(a.data.data());
  return std::vector<int64_t>(p, p + a.numel());
}

class SharedStateTest : public ::testing::TestWithParam<bool> {};

TEST_P(SharedStateTest, DecodeReadsTheCachePrefillWrote) {
  auto r = export_pair(GetParam(), true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->shared_state.size(), 4u);  // k and v caches of 2 layers
  // The cache lives once in the program's shared state, not in either method's arena.
  auto separate = export_pair(GetParam(), false);
  ASSERT_TRUE(separate.ok()) << separate.status();
  const size_t cache_bytes = 4 * 1 * 2 * 32 * 8 * sizeof(float);  // 4 x [1, kv 2, max_seq 32, head 8]
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(separate->methods[i].second.plan.arena_size - r->methods[i].second.plan.arena_size, cache_bytes) << i;
  }
  Program p(r->pte);
  Module& m = *p.module;
  const std::vector<int64_t> prompt = ints(npy("prefill/input_0.npy"));
  const std::vector<int64_t> prompt_pos = ints(npy("prefill/input_1.npy"));
  const std::vector<int64_t> token = ints(npy("decode/input_0.npy"));
  const std::vector<int64_t> token_pos = ints(npy("decode/input_1.npy"));
  for (int round = 0; round < 2; ++round) {  // the second round after reset_state()
    EXPECT_LT(max_abs_diff(step(m, "prefill", prompt, prompt_pos), npy("prefill/output_0.npy")), 1e-4) << round;
    EXPECT_LT(max_abs_diff(step(m, "decode", token, token_pos), npy("decode/output_0.npy")), 1e-4) << round;
    ASSERT_TRUE(m.reset_state().ok());
  }
}

TEST_P(SharedStateTest, GreedyGenerationMatchesPyTorch) {
  auto r = export_pair(GetParam(), true);
  ASSERT_TRUE(r.ok()) << r.status();
  Program p(r->pte);
  Module& m = *p.module;
  const std::vector<int64_t> prompt = ints(npy("prompt.npy"));
  const std::vector<int64_t> want = ints(npy("greedy.npy"));
  std::vector<int64_t> pos(prompt.size());
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int64_t>(i);
  const size_t vocab = 256;
  std::vector<int64_t> got = {argmax_last_row(step(m, "prefill", prompt, pos), vocab)};
  while (got.size() < want.size()) {
    const int64_t at = static_cast<int64_t>(prompt.size() + got.size() - 1);
    got.push_back(argmax_last_row(step(m, "decode", {got.back()}, {at}), vocab));
  }
  EXPECT_EQ(got, want);
}

// Every buffer the Module takes from its ModuleMemory (the 4 shared caches first, then each
// method's arenas and allocators) fails in turn: OutOfMemory, nothing kept of the attempt, and
// the same Module then computes prefill and decode right.
TEST_P(SharedStateTest, EveryModuleAllocationFailsInTurn) {
  auto r = export_pair(GetParam(), true);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<uint8_t> bytes(r->pte.size() + 64);
  uint8_t* pte = bytes.data() + (64 - reinterpret_cast<uintptr_t>(bytes.data()) % 64) % 64;
  std::memcpy(pte, r->pte.data(), r->pte.size());
  const std::vector<int64_t> prompt = ints(npy("prefill/input_0.npy"));
  const std::vector<int64_t> prompt_pos = ints(npy("prefill/input_1.npy"));
  const std::vector<int64_t> token = ints(npy("decode/input_0.npy"));
  const std::vector<int64_t> token_pos = ints(npy("decode/input_1.npy"));
  size_t faults = 0;
  for (size_t k = 0; k < 64; ++k) {
    testing::FaultyModuleMemory memory(k);
    {
      ModuleOptions options;
      options.memory = &memory;
      options.temp_allocator_bytes = 1 << 20;
      Module m(pte, r->pte.size(), options);
      Status s = m.load_method("prefill");
      if (s.ok()) s = m.load_method("decode");
      if (memory.calls() <= k) {
        ASSERT_TRUE(s.ok()) << s.to_string();
        break;
      }
      faults++;
      EXPECT_EQ(s.code(), Error::OutOfMemory) << "allocation " << k << ": " << s.to_string();
      memory.fail_at(SIZE_MAX);
      EXPECT_LT(max_abs_diff(step(m, "prefill", prompt, prompt_pos), npy("prefill/output_0.npy")), 1e-4) << k;
      EXPECT_LT(max_abs_diff(step(m, "decode", token, token_pos), npy("decode/output_0.npy")), 1e-4) << k;
    }
    EXPECT_EQ(memory.live(), 0u) << "allocation " << k << ": blocks not given back";
  }
  EXPECT_GE(faults, 4u + 2 * 3) << "4 shared caches, then arenas, temp and method allocators of 2 methods";
}

TEST_P(SharedStateTest, SeparateStateIsEachMethodsOwn) {
  auto r = export_pair(GetParam(), false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->shared_state.empty());
  Program p(r->pte);
  Module& m = *p.module;
  step(m, "prefill", ints(npy("prefill/input_0.npy")), ints(npy("prefill/input_1.npy")));
  // Decode's own cache is empty: its logits are not the ones after the prompt.
  EXPECT_GT(max_abs_diff(step(m, "decode", ints(npy("decode/input_0.npy")), ints(npy("decode/input_1.npy"))),
                         npy("decode/output_0.npy")),
            1e-2);
}

INSTANTIATE_TEST_SUITE_P(Backends, SharedStateTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "xnnpack" : "portable"; });

}  // namespace
}  // namespace ember
