// Direct vs Winograd convolutions layer by layer: XNNPACK's fp32 IGEMM against the Winograd
// operators of patch 0005 (F(4x4, 3x3) and F(2x2, 3x3) tiles) on the same shapes, threads and
// data, as ratios in one run. The shapes are ResNet's 3x3 stride-1 layers at 224x224 plus the
// edges of the exporter's choice (exporter/xnnpack_winograd.h: channels, tiles).
//   bazel build -c opt //test/delegates/xnnpack:xnnpack_winograd_benchmark
//   taskset -c 0 bazel-bin/test/delegates/xnnpack/xnnpack_winograd_benchmark 1 [cold]
// `cold` evicts the caches (writes 192 MB) before every timed run, as a layer inside a model
// finds its filters: from memory, not from the cache a repeated run warms. Prints one line per
// shape: median ms of 30 runs after 3 warm-ups.
#include <pthreadpool.h>
#include <xnnpack.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

std::vector<char> evict(192u << 20);

double median_ms(xnn_operator_t op, pthreadpool_t pool, bool cold) {
  std::vector<double> t;
  for (int i = 0; i < 33; ++i) {
    if (cold) std::memset(evict.data(), i, evict.size());
    const auto start = std::chrono::steady_clock::now();
    xnn_run_operator(op, pool);
    const std::chrono::duration<double, std::milli> d = std::chrono::steady_clock::now() - start;
    if (i >= 3) t.push_back(d.count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const size_t threads = argc > 1 ? size_t(std::atoi(argv[1])) : 1;
  const bool cold = argc > 2 && std::strcmp(argv[2], "cold") == 0;
  if (xnn_initialize(nullptr) != xnn_status_success) return 1;
  pthreadpool_t pool = threads > 1 ? pthreadpool_create(threads) : nullptr;
  struct Shape {
    size_t hw, c, k;
  } shapes[] = {{56, 64, 64},  {28, 128, 128}, {14, 256, 256}, {7, 512, 512}, {4, 512, 512},
                {56, 16, 16},  {56, 32, 32},   {28, 32, 64},   {14, 64, 64},  {7, 64, 64}};
  std::printf("threads %zu%s\n| output | in | out | direct ms | F(4x4) ms | F(2x2) ms | direct / F(4x4) | direct / F(2x2) |\n"
              "|---|---|---|---|---|---|---|---|\n",
              threads, cold ? ", caches evicted before each run" : "");
  const uint32_t variants[3] = {0, XNN_FLAG_WINOGRAD_CONVOLUTION,
                                XNN_FLAG_WINOGRAD_CONVOLUTION | XNN_FLAG_WINOGRAD_2X2_TILES};
  for (const Shape& s : shapes) {
    std::vector<float> x(s.hw * s.hw * s.c + 64), f(s.k * 9 * s.c), b(s.k), y(s.hw * s.hw * s.k + 64);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7) * 0.1f;
    for (size_t i = 0; i < f.size(); ++i) f[i] = float(i % 5) * 0.01f;
    double ms[3] = {0, 0, 0};
    for (int v = 0; v < 3; ++v) {
      xnn_operator_t op = nullptr;
      if (xnn_create_convolution2d_nhwc_f32(1, 1, 1, 1, 3, 3, 1, 1, 1, 1, 1, s.c, s.k, s.c, s.k, f.data(), b.data(),
                                            0.0f, INFINITY, variants[v], nullptr, nullptr, &op) != xnn_status_success) {
        return 1;
      }
      size_t workspace_size = 0, alignment = 0;
      if (xnn_reshape_convolution2d_nhwc_f32(op, 1, s.hw, s.hw, &workspace_size, &alignment, nullptr, nullptr, pool) !=
          xnn_status_success) {
        return 1;
      }
      std::vector<char> workspace(workspace_size + 64);
      void* aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(workspace.data()) + 63) & ~uintptr_t(63));
      if (xnn_setup_convolution2d_nhwc_f32(op, aligned, x.data(), y.data()) != xnn_status_success) return 1;
      ms[v] = median_ms(op, pool, cold);
      xnn_delete_operator(op);
    }
    std::printf("| %zux%zu | %zu | %zu | %.3f | %.3f | %.3f | %.2f | %.2f |\n", s.hw, s.hw, s.c, s.k, ms[0], ms[1], ms[2],
                ms[0] / ms[1], ms[0] / ms[2]);
  }
  if (pool != nullptr) pthreadpool_destroy(pool);
  return 0;
}
