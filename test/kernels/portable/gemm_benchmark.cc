// Throughput of the portable SGEMM and convolution kernels at 1 and 2 threads.
//   bazel run -c opt //test/kernels/portable:gemm_benchmark -- --benchmark_filter=Gemm
// Counters: GFLOP/s = 2*M*N*K (or 2*N*OC*OH*OW*IC/g*KH*KW) per second of wall time.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "kernels/portable/linalg/gemm.h"
#include "kernels/portable/threadpool/pthreadpool_thread_pool.h"
#include "runtime/core/evalue.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"
#include "runtime/kernel/kernel_registry.h"
#include "runtime/memory/memory_allocator.h"

namespace ember {
namespace {

constexpr size_t kTempBytes = size_t{32} << 20;

std::vector<float> random_vector(size_t n) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Owns a temp buffer, a pthreadpool of `threads` workers and a KernelContext over them.
struct Harness {
  explicit Harness(size_t threads)
      : temp_buffer(new uint8_t[kTempBytes]), temp(temp_buffer.get(), kTempBytes), pool(threads) {
    ctx.temp = &temp;
    ctx.thread_pool = &pool;
  }
  std::unique_ptr<uint8_t[]> temp_buffer;
  MemoryAllocator temp;
  PthreadpoolThreadPool pool;
  KernelContext ctx;
};

// args: M, N, K, threads, B transposed (linear weight layout)
void BM_Gemm(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const bool b_transposed = state.range(4) != 0;
  Harness h(static_cast<size_t>(state.range(3)));
  std::vector<float> a = random_vector(static_cast<size_t>(m * k));
  std::vector<float> b = random_vector(static_cast<size_t>(k * n));
  std::vector<float> c(static_cast<size_t>(m * n));
  portable::GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = portable::GemmMatrix{a.data(), k, 1};
  p.b = b_transposed ? portable::GemmMatrix{b.data(), 1, k} : portable::GemmMatrix{b.data(), n, 1};
  p.c = c.data();
  p.ldc = n;
  for (auto _ : state) {
    h.temp.reset();
    portable::gemm(h.ctx, p);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2e-9 * double(m) * double(n) * double(k), benchmark::Counter::kIsIterationInvariantRate);
}

void gemm_args(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2}) {
    for (int s : {64, 128, 256, 512, 1024}) b->Args({s, s, s, threads, 0});
    b->Args({197, 576, 192, threads, 1});    // vit_tiny linear (tokens x 3*dim x dim)
    b->Args({1, 1024, 1024, threads, 1});    // decode-time linear (GEMV)
    b->Args({64, 3136, 576, threads, 0});    // resnet 3x3 conv as GEMM
  }
}
BENCHMARK(BM_Gemm)->Apply(gemm_args)->UseRealTime()->ArgNames({"M", "N", "K", "threads", "bT"});

struct ConvCase {
  int64_t c, h, w, oc, k, stride, pad, groups;
};
const ConvCase kConvs[] = {
    {64, 56, 56, 64, 3, 1, 1, 1},      // resnet18 layer1 3x3
    {3, 224, 224, 64, 7, 2, 3, 1},     // resnet18 stem
    {32, 112, 112, 32, 3, 1, 1, 32},   // mobilenet_v2 depthwise
    {96, 56, 56, 24, 1, 1, 0, 1},      // mobilenet_v2 1x1 projection
    {256, 14, 14, 256, 3, 1, 1, 1},    // resnet18 layer3 3x3
};

// args: case index, threads
void BM_Conv(benchmark::State& state) {
  const ConvCase& cc = kConvs[state.range(0)];
  Harness h(static_cast<size_t>(state.range(1)));
  const int64_t oh = (cc.h + 2 * cc.pad - cc.k) / cc.stride + 1, ow = (cc.w + 2 * cc.pad - cc.k) / cc.stride + 1;
  std::vector<float> x = random_vector(static_cast<size_t>(cc.c * cc.h * cc.w));
  std::vector<float> w = random_vector(static_cast<size_t>(cc.oc * (cc.c / cc.groups) * cc.k * cc.k));
  std::vector<float> bias = random_vector(static_cast<size_t>(cc.oc));
  std::vector<float> y(static_cast<size_t>(cc.oc * oh * ow));
  int64_t xs[4] = {1, cc.c, cc.h, cc.w}, ws[4] = {cc.oc, cc.c / cc.groups, cc.k, cc.k}, bs[1] = {cc.oc},
          ys[4] = {1, cc.oc, oh, ow};
  auto make = [](float* data, int64_t* sizes, int rank) {
    Tensor t;
    t.rank = static_cast<uint8_t>(rank);
    t.sizes = sizes;
    t.max_sizes = sizes;
    t.data = data;
    t.capacity_bytes = static_cast<size_t>(t.numel()) * sizeof(float);
    return t;
  };
  Tensor tx = make(x.data(), xs, 4), tw = make(w.data(), ws, 4), tb = make(bias.data(), bs, 1), ty = make(y.data(), ys, 4);
  int64_t stride[2] = {cc.stride, cc.stride}, pad[2] = {cc.pad, cc.pad}, dil[2] = {1, 1}, opad[2] = {0, 0};
  EValue v[10];
  Tensor* tensors[4] = {&tx, &tw, &tb, &ty};
  const int tensor_slots[4] = {0, 1, 2, 9};
  for (int i = 0; i < 4; ++i) {
    v[tensor_slots[i]].tag = ValueTag::Tensor;
    v[tensor_slots[i]].as_tensor = tensors[i];
  }
  int64_t* lists[4] = {stride, pad, dil, opad};
  const int list_slots[4] = {3, 4, 5, 7};
  for (int i = 0; i < 4; ++i) {
    v[list_slots[i]].tag = ValueTag::IntList;
    v[list_slots[i]].as_int_list = IntListValue{lists[i], nullptr, nullptr, 2};
  }
  v[6].tag = ValueTag::Bool;
  v[6].as_bool = false;
  v[8].tag = ValueTag::Int;
  v[8].as_int = cc.groups;
  EValue* args[10];
  for (int i = 0; i < 10; ++i) args[i] = &v[i];
  KernelFn fn = find_kernel("aten::convolution.default");
  if (fn == nullptr) {
    state.SkipWithError("aten::convolution.default is not registered");
    return;
  }
  for (auto _ : state) {
    h.temp.reset();
    if (fn(h.ctx, args, 10) != Error::Ok) {
      state.SkipWithError("convolution failed");
      break;
    }
    benchmark::DoNotOptimize(y.data());
  }
  const double flops = 2.0 * double(cc.oc) * oh * ow * double(cc.c / cc.groups) * cc.k * cc.k;
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Conv)
    ->ArgsProduct({{0, 1, 2, 3, 4}, {1, 2}})
    ->UseRealTime()
    ->ArgNames({"case", "threads"});

}  // namespace
}  // namespace ember
