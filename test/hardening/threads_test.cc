// Several Module instances of the same .pte, one per std::thread, running concurrently:
// results are bit-identical to a single-threaded run. (Contract: a Module/Method is not
// thread-safe, but separate instances share nothing mutable; a loaded Program is immutable.)
// Meant for --config=asan too; with a TSan build it checks for data races.
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/executor/method.h"
#include "runtime/loader/buffer_data_loader.h"
#include "extension/module/module.h"
#include "runtime/program/program.h"
#include "test/hardening/model_fixture.h"

namespace ember {
namespace {

using testing::AlignedBytes;
using testing::exported_model;

constexpr int kThreads = 4;
constexpr int kRuns = 25;

std::vector<uint8_t> output_bytes(const Output& out) {
  const uint8_t* p = out.data<uint8_t>();
  return std::vector<uint8_t>(p, p + out.tensor().nbytes());
}

// Per-run input: the reference input scaled by a run-dependent factor, so threads do not
// all compute the same thing at the same time.
TensorPtr input_for(const TensorPtr& base, int run) {
  TensorPtr x = zeros(base.sizes(), base.dtype());
  std::memcpy(x.raw_data(), base.raw_data(), base.nbytes());
  if (x.dtype() == ScalarType::Float32) {
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] *= 1.0f + 0.01f * static_cast<float>(run);
  }
  return x;
}

class Threads : public ::testing::TestWithParam<const char*> {};

TEST_P(Threads, SeparateModulesGiveBitIdenticalResults) {
  const testing::ExportedModel& model = exported_model(GetParam());
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(model);
  AlignedBytes bytes(model.pte);
  // Single-threaded expectations.
  std::vector<std::vector<uint8_t>> expected;
  {
    Module single(bytes.data(), bytes.size());
    for (int r = 0; r < kRuns; ++r) {
      auto out = single.forward({input_for(model.input, r)});
      ASSERT_TRUE(out.ok()) << out.error().to_string();
      expected.push_back(output_bytes(out->at(0)));
    }
  }
  std::atomic<int> mismatches{0}, failures{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t]() {
      Module module(bytes.data(), bytes.size());  // each thread its own Module
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < kRuns; ++i) {
        int r = (i + t * 7) % kRuns;  // different threads, different inputs at a time
        auto out = module.forward({input_for(model.input, r)});
        if (!out.ok()) {
          ++failures;
          continue;
        }
        if (output_bytes(out->at(0)) != expected[r]) ++mismatches;
      }
    });
  }
  go = true;
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Models, Threads, ::testing::Values("small_cnn", "dynamic_mlp", "keyword_lstm"));

// One Program shared by several threads, each with its own Method and memory.
TEST(ThreadsSharedProgram, MethodsOfOneProgramRunConcurrently) {
  const testing::ExportedModel& model = exported_model("small_cnn");
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(model);
  AlignedBytes bytes(model.pte);
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok());
  MethodMeta meta = *program->method_meta("forward");
  std::vector<uint8_t> expected;
  std::atomic<int> mismatches{0}, failures{0};
  auto worker = [&](std::vector<uint8_t>* result, int runs) {
    std::vector<std::vector<uint8_t>> arenas;
    std::vector<Span<uint8_t>> spans;
    for (size_t i = 0; i < meta.num_arenas(); ++i) {
      arenas.emplace_back(*meta.arena_size(i) + 8);
      spans.emplace_back(arenas.back().data(), *meta.arena_size(i));
    }
    std::vector<uint8_t> method_mem(4 << 20), temp_mem(8 << 20);
    MemoryAllocator method_alloc(method_mem.data(), method_mem.size());
    MemoryAllocator temp_alloc(temp_mem.data(), temp_mem.size());
    MemoryManager mm{&method_alloc, Span<Span<uint8_t>>(spans.data(), spans.size()), &temp_alloc};
    Result<Method> method = program->load_method("forward", &mm);
    if (!method.ok()) {
      ++failures;
      return;
    }
    for (int r = 0; r < runs; ++r) {
      if (method->bind_input(0, model.input.tensor()) != Error::Ok || method->execute() != Error::Ok) {
        ++failures;
        return;
      }
      const Tensor& out = *method->output(0).as_tensor;
      std::vector<uint8_t> got(static_cast<const uint8_t*>(out.data),
                               static_cast<const uint8_t*>(out.data) + out.nbytes());
      if (result != nullptr) {
        *result = got;
      } else if (got != expected) {
        ++mismatches;
      }
    }
  };
  worker(&expected, 1);
  ASSERT_EQ(failures.load(), 0);
  ASSERT_FALSE(expected.empty());
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, nullptr, kRuns);
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace ember
