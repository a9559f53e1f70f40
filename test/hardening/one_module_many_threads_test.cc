// One Module, several threads (module.h, "Thread-safety"): a Module runs one call at a time. A
// call made from a second thread while one is running returns InvalidState at once, naming the
// fix, and touches nothing; the running call completes with the right result, and the Module
// stays usable. Deterministic: the program's one kernel blocks until the test releases it, so
// the second thread's calls are made while the first is certainly inside execute(). Run under
// --config=tsan in CI (step 2b), where any data race fails it.
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "extension/module/module.h"
#include "runtime/kernel/kernel_context.h"
#include "runtime/kernel/kernel_registry.h"
#include "test/support/program_builder.h"

namespace ember {
namespace {

std::atomic<bool> g_entered{false};
std::atomic<bool> g_release{false};

// hardening::wait_copy(x, out): copies x to out once the test releases it.
Error wait_copy_kernel(KernelContext& ctx, EValue** args, size_t n) {
  if (n != 2 || !args[0]->is_tensor() || !args[1]->is_tensor()) {
    return ctx.fail(Error::InvalidArgument, "wait_copy takes (x, out)");
  }
  g_entered.store(true, std::memory_order_release);
  while (!g_release.load(std::memory_order_acquire)) std::this_thread::yield();
  const Tensor& x = *args[0]->as_tensor;
  std::memcpy(args[1]->as_tensor->data, x.data, x.nbytes());
  return Error::Ok;
}

const bool g_registered = register_kernel("hardening::wait_copy.default", wait_copy_kernel);

testing::PteBytes wait_program() {
  testing::ProgramBuilder pb;
  testing::MethodBuilder& m = pb.method("forward");
  const uint32_t x = m.input_tensor(ScalarType::Float32, {4});
  const uint32_t y = m.planned_tensor(ScalarType::Float32, {4});
  m.kernel("hardening::wait_copy", "default", {static_cast<int32_t>(x), static_cast<int32_t>(y)});
  m.set_inputs({x}).set_outputs({y});
  return pb.build();
}

bool is_busy(const Status& s) {
  return s.code() == Error::InvalidState && s.message().find("another thread") != std::string::npos &&
         s.message().find("own Module") != std::string::npos;
}

TEST(OneModuleManyThreads, SecondThreadsCallsAreRefusedWhileOneRuns) {
  ASSERT_TRUE(g_registered);
  const testing::PteBytes pte = wait_program();
  Module module(pte.data(), pte.size());
  float a[4] = {1, 2, 3, 4};
  g_entered = false;
  g_release = false;
  Status first_status;
  std::vector<float> first_output;
  std::thread first([&] {
    auto out = module.forward({from_blob(a, {4})});
    first_status = out.ok() ? Status::Ok() : out.error();
    if (out.ok()) first_output.assign(out->at(0).data<float>(), out->at(0).data<float>() + 4);
  });
  while (!g_entered.load(std::memory_order_acquire)) std::this_thread::yield();

  // Every public call from this thread is refused while `first` is inside execute().
  float b[4] = {5, 6, 7, 8};
  auto second = module.forward({from_blob(b, {4})});
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(is_busy(second.error())) << second.error().to_string();
  EXPECT_TRUE(is_busy(module.set_input("forward", 0, from_blob(b, {4}))));
  EXPECT_TRUE(is_busy(module.load_method("forward")));
  EXPECT_TRUE(is_busy(module.reset_state()));
  EXPECT_TRUE(is_busy(module.set_num_threads(2)));
  EXPECT_TRUE(is_busy(module.method_names().error()));
  EXPECT_TRUE(is_busy(module.memory_usage("forward").error()));
  EXPECT_EQ(module.method("forward"), nullptr);

  g_release = true;
  first.join();
  ASSERT_TRUE(first_status.ok()) << first_status.to_string();
  EXPECT_EQ(first_output, std::vector<float>({1, 2, 3, 4}));  // the refused calls bound nothing

  // Taking turns is fine: the Module serves this thread now.
  auto again = module.forward({from_blob(b, {4})});
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_EQ(std::vector<float>(again->at(0).data<float>(), again->at(0).data<float>() + 4),
            std::vector<float>({5, 6, 7, 8}));
  EXPECT_NE(module.method("forward"), nullptr);
}

// Threads hammering one Module without coordination: each call runs whole or is refused;
// under TSan no access races (the outputs are not read here: another thread's next call may
// overwrite them, as documented). Afterwards the Module computes the right result.
TEST(OneModuleManyThreads, UncoordinatedCallsRunWholeOrAreRefused) {
  const testing::PteBytes pte = wait_program();
  Module module(pte.data(), pte.size());
  g_release = true;  // the kernel does not wait here
  constexpr int kThreads = 4, kCalls = 200;
  std::atomic<int> ran{0}, refused{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> x(4, static_cast<float>(t));
      for (int i = 0; i < kCalls; ++i) {
        auto out = module.forward({from_blob(x.data(), {4})});
        if (out.ok()) {
          ran++;
        } else if (is_busy(out.error())) {
          refused++;
        } else {
          other++;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(ran.load() + refused.load(), kThreads * kCalls);
  EXPECT_GT(ran.load(), 0);
  std::printf("[one module, %d threads] %d calls ran, %d refused\n", kThreads, ran.load(), refused.load());
  float c[4] = {9, 8, 7, 6};
  auto out = module.forward({from_blob(c, {4})});
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_EQ(std::vector<float>(out->at(0).data<float>(), out->at(0).data<float>() + 4),
            std::vector<float>({9, 8, 7, 6}));
}

}  // namespace
}  // namespace ember
