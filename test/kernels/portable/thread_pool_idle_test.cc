// A new pool's workers sleep until the first task (third_party/xnnpack/patches/pthreadpool):
// pthreadpool's workers spin up to a million pause instructions waiting for work, tens of
// milliseconds of a core each, and they did so right after creation too. A Module creates
// its pool before any delegate exists, and a delegate that runs on a pool of its own left
// the Module's workers spinning on every core while it initialised: MobileNetV3-small's warm
// start-up on the 16-core machine was 20 ms instead of 3 (docs/benchmarks.md).
#include <gtest/gtest.h>

#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "kernels/portable/threadpool/pthreadpool_thread_pool.h"

namespace ember {
namespace {

double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

TEST(ThreadPoolIdle, NewWorkersSleepUntilTheFirstTask) {
  PthreadpoolThreadPool pool(4);
  ASSERT_EQ(pool.num_threads(), 4u);
  const double before = process_cpu_ms();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const double idle_cpu_ms = process_cpu_ms() - before;
  // Spinning, 3 workers take 3 x 3..50 ms (the pause instruction's cost varies by CPU);
  // sleeping, next to nothing.
  EXPECT_LT(idle_cpu_ms, 3.0) << "the new pool's idle workers used " << idle_cpu_ms << " ms of CPU in 100 ms";

  // And they wake for work.
  std::atomic<size_t> sum{0};
  auto add = [](void* context, size_t i) { static_cast<std::atomic<size_t>*>(context)->fetch_add(i + 1); };
  pool.parallel_for(1000, add, &sum);
  EXPECT_EQ(sum.load(), 1000u * 1001u / 2u);
}

}  // namespace
}  // namespace ember
