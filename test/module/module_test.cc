// Module API tests on real exported programs: loading modes, execution against PyTorch's
// reference outputs, zero-copy I/O, threads, state, and every error case.
#include "extension/module/module.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "exporter/exporter.h"
#include "extension/threadpool/thread_pool_factory.h"
#include "test/exporter/shared_dir.h"
#include "test/support/allocation_counter.h"

namespace ember {
namespace {

std::string export_to_temp(const std::string& model) {
  std::string shared = testing::shared_dir();
  if (shared.empty()) return "";
  auto result = exporter::export_pt2_file(shared + "/models/" + model + "/model.pt2", exporter::ExportOptions());
  if (!result.ok()) {
    ADD_FAILURE() << result.status().message();
    return "";
  }
  std::string path = std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") + "/" + model + ".pte";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(result->pte.data()), static_cast<std::streamsize>(result->pte.size()));
  return path;
}

double relative_l2(const Output& out, const TensorPtr& ref) {
  if (out.numel() != ref.numel()) return 1e30;
  double num = 0, den = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    double r = element_as_double(ref.tensor(), i);
    double d = element_as_double(out.tensor(), i) - r;
    num += d * d;
    den += r * r;
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-12);
}

class ModuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    shared_ = testing::shared_dir();
    if (shared_.empty()) GTEST_SKIP() << "shared/ data not found";
    pte_ = export_to_temp("small_cnn");
    ASSERT_FALSE(pte_.empty());
    input_ = *read_npy(shared_ + "/models/small_cnn/input_0.npy");
    reference_ = *read_npy(shared_ + "/models/small_cnn/output_0.npy");
  }
  std::string shared_, pte_;
  TensorPtr input_, reference_;
};

TEST_F(ModuleTest, LoadsLazilyAndMatchesPyTorch) {
  Module model(pte_);
  EXPECT_FALSE(model.is_loaded());
  auto out = model.forward({input_});
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_TRUE(model.is_loaded());
  ASSERT_EQ(out->size(), 1u);
  EXPECT_LE(relative_l2(out->at(0), reference_), 1e-4);
}

TEST_F(ModuleTest, EveryLoadModeGivesTheSameResult) {
  for (ModuleLoadMode mode : {ModuleLoadMode::File, ModuleLoadMode::Mmap, ModuleLoadMode::MmapUseMlock}) {
    ModuleOptions options;
    options.load_mode = mode;
    Module model(pte_, options);
    auto out = model.forward({input_});
    if (!out.ok() && mode == ModuleLoadMode::MmapUseMlock && out.error().code() == Error::AccessFailed) {
      continue;  // RLIMIT_MEMLOCK too small in this environment
    }
    ASSERT_TRUE(out.ok()) << out.error().to_string();
    EXPECT_LE(relative_l2(out->at(0), reference_), 1e-4);
  }
}

TEST_F(ModuleTest, LoadsFromCallerBuffer) {
  std::ifstream in(pte_, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  TensorPtr buffer = empty({static_cast<int64_t>(bytes.size())}, ScalarType::UInt8);
  std::memcpy(buffer.raw_data(), bytes.data(), bytes.size());
  Module model(buffer.raw_data(), bytes.size());
  auto out = model.forward({input_});
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_LE(relative_l2(out->at(0), reference_), 1e-4);
}

TEST_F(ModuleTest, MetadataWithoutRunning) {
  Module model(pte_);
  auto names = model.method_names();
  ASSERT_TRUE(names.ok());
  ASSERT_EQ(names->size(), 1u);
  EXPECT_EQ((*names)[0], "forward");
  auto meta = model.method_meta("forward");
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->num_inputs(), 1u);
  EXPECT_EQ(meta->num_outputs(), 1u);
  auto info = meta->input_tensor_info(0);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->dtype, ScalarType::Float32);
  ASSERT_EQ(info->max_sizes.size(), 4u);
  EXPECT_EQ(info->max_sizes[2], 32);
  EXPECT_GT(*meta->arena_size(0), 0u);
  EXPECT_FALSE(model.is_method_loaded("forward"));
}

TEST_F(ModuleTest, ErrorsSayWhatIsWrong) {
  Module model(pte_);
  auto too_many = model.forward({input_, input_});
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.error().code(), Error::InvalidArgument);
  EXPECT_NE(too_many.error().message().find("takes 1 inputs, got 2"), std::string::npos);

  TensorPtr wrong_dtype = zeros({1, 3, 32, 32}, ScalarType::Int64);
  auto dtype = model.forward({wrong_dtype});
  ASSERT_FALSE(dtype.ok());
  EXPECT_NE(dtype.error().message().find("must be float32, got int64"), std::string::npos);

  TensorPtr wrong_rank = zeros({3, 32, 32});
  auto rank = model.forward({wrong_rank});
  ASSERT_FALSE(rank.ok());
  EXPECT_NE(rank.error().message().find("rank 4"), std::string::npos);

  TensorPtr too_big = zeros({1, 3, 33, 32});
  auto size = model.forward({too_big});
  ASSERT_FALSE(size.ok());
  EXPECT_NE(size.error().message().find("dimension 2"), std::string::npos);

  auto missing = model.execute("decode", {input_});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), Error::NotFound);
  EXPECT_NE(missing.error().message().find("forward"), std::string::npos);

  // Errors lose nothing: a correct call afterwards still works.
  auto ok = model.forward({input_});
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
  EXPECT_LE(relative_l2(ok->at(0), reference_), 1e-4);
}

TEST(ModuleErrors, MissingAndCorruptFiles) {
  Module missing("/nonexistent/model.pte");
  auto out = missing.forward({});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code(), Error::AccessFailed);
  EXPECT_NE(out.error().message().find("/nonexistent/model.pte"), std::string::npos);

  std::string path = std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") + "/garbage.pte";
  std::ofstream(path) << "this is not a program, just text that is long enough to have a header.......";
  Module garbage(path);
  Status s = garbage.load();
  EXPECT_EQ(s.code(), Error::InvalidProgram);
  EXPECT_NE(s.message().find("magic"), std::string::npos);
}

TEST_F(ModuleTest, CallerOwnedOutputBuffer) {
  Module model(pte_);
  std::vector<float> logits(10, -1.f);
  ASSERT_TRUE(model.set_output_buffer("forward", 0, logits.data(), logits.size() * sizeof(float)).ok());
  auto out = model.forward({input_});
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_EQ(out->at(0).data<float>(), logits.data());
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(logits[i], reference_.data<float>()[i], 1e-5);
  Status small = model.set_output_buffer("forward", 0, logits.data(), 8);
  EXPECT_EQ(small.code(), Error::OutOfMemory);
}

TEST_F(ModuleTest, NothingAllocatedPerCallAfterTheFirst) {
  Module model(pte_);
  std::vector<Input> inputs = {input_};
  ASSERT_TRUE(model.forward(inputs).ok());
  const uint64_t before = testing::allocation_count();  // every new/delete form is counted
  for (int i = 0; i < 20; ++i) {
    auto out = model.forward(inputs);
    ASSERT_TRUE(out.ok());
  }
  EXPECT_EQ(testing::allocation_count(), before);
}

TEST_F(ModuleTest, ThreadsGiveTheSameResult) {
  Module single(pte_), multi(pte_);
  ASSERT_TRUE(multi.set_num_threads(2).ok());
  EXPECT_EQ(multi.num_threads(), std::min<size_t>(2, available_cpus()));
  auto a = single.forward({input_});
  auto b = multi.forward({input_});
  ASSERT_TRUE(a.ok() && b.ok());
  for (int64_t i = 0; i < a->at(0).numel(); ++i) {
    EXPECT_NEAR(a->at(0).data<float>()[i], b->at(0).data<float>()[i], 1e-6);
  }
  EXPECT_EQ(multi.set_num_threads(0).code(), Error::InvalidArgument);
}

// More threads than the CPUs the process may run on only spin against each other: the Module
// caps the pool (pinned to one CPU: 4 requested, 1 used, same result).
TEST_F(ModuleTest, ThreadsCappedAtTheAvailableCpus) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  int first = -1;
  for (int c = 0; c < CPU_SETSIZE && first < 0; ++c) first = CPU_ISSET(c, &saved) ? c : -1;
  ASSERT_GE(first, 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  EXPECT_EQ(available_cpus(), 1u);
  Module model(pte_);
  ASSERT_TRUE(model.set_num_threads(4).ok());
  EXPECT_EQ(model.num_threads(), 1u);
  auto out = model.forward({input_});
  EXPECT_TRUE(out.ok());
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_EQ(available_cpus(), static_cast<size_t>(CPU_COUNT(&saved)));
}

TEST(ModuleState, KvCacheCarriesOverAndResets) {
  std::string shared = testing::shared_dir();
  if (shared.empty()) GTEST_SKIP() << "shared/ data not found";
  std::string pte = export_to_temp("tiny_llama_kv");
  ASSERT_FALSE(pte.empty());
  std::string dir = shared + "/models/tiny_llama_kv/";
  TensorPtr tokens = *read_npy(dir + "input_0.npy"), pos = *read_npy(dir + "input_1.npy");
  TensorPtr step_tokens = *read_npy(dir + "step_input_0.npy"), step_pos = *read_npy(dir + "step_input_1.npy");
  TensorPtr step_ref = *read_npy(dir + "step_output_0.npy");
  Module model(pte);
  ASSERT_TRUE(model.forward({tokens, pos}).ok());
  auto step = model.forward({step_tokens, step_pos});
  ASSERT_TRUE(step.ok()) << step.error().to_string();
  EXPECT_LE(relative_l2(step->at(0), step_ref), 1e-4);
  // Without the prefill the step's answer differs; after reset + prefill it matches again.
  ASSERT_TRUE(model.reset_state("forward").ok());
  auto cold = model.forward({step_tokens, step_pos});
  ASSERT_TRUE(cold.ok());
  EXPECT_GT(relative_l2(cold->at(0), step_ref), 1e-3);
  ASSERT_TRUE(model.reset_state("forward").ok());
  ASSERT_TRUE(model.forward({tokens, pos}).ok());
  auto again = model.forward({step_tokens, step_pos});
  ASSERT_TRUE(again.ok());
  EXPECT_LE(relative_l2(again->at(0), step_ref), 1e-4);
}

}  // namespace
}  // namespace ember
