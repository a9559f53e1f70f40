// Measures one core's float32 fused-multiply-add throughput with 256-bit (AVX2/FMA3) and
// 512-bit (AVX-512F) vectors, so GEMM figures can be put against the core's peak: a kernel
// above the 256-bit peak is using 512-bit vectors; a kernel near the peak cannot get faster.
// Build and run (x86-64, gcc or clang): cc -O2 tools/bench/fma_peak.c -o /tmp/fma_peak && /tmp/fma_peak
// Pin it (taskset -c 0) for a per-core figure. Benchmark only: nothing in the runtime uses it.
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

enum { kIterations = 200 * 1000 * 1000 / 16, kChains = 12 };  // 12 chains hide 4-cycle FMA latency on 2+ ports

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// Returns the sum of the accumulators so the compiler cannot drop the loop.
__attribute__((target("avx2,fma"))) static float fma256(long iterations) {
  __m256 acc[kChains];
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps((float)c);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  float sum = 0;
  for (int c = 0; c < kChains; ++c) sum += _mm256_cvtss_f32(acc[c]);
  return sum;
}

__attribute__((target("avx512f"))) static float fma512(long iterations) {
  __m512 acc[kChains];
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps((float)c);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  float sum = 0;
  for (int c = 0; c < kChains; ++c) sum += _mm512_reduce_add_ps(acc[c]);
  return sum;
}

// Best of three runs, in GFLOP/s (one FMA = 2 flops per lane).
static double measure(float (*kernel)(long), int lanes, float* sink) {
  double best = 0;
  for (int run = 0; run < 3; ++run) {
    const double start = now_seconds();
    *sink += kernel(kIterations);
    const double seconds = now_seconds() - start;
    const double gflops = 2.0 * lanes * kChains * (double)kIterations / seconds * 1e-9;
    if (gflops > best) best = gflops;
  }
  return best;
}

int main(void) {
  float sink = 0;
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    printf("fma_peak: this CPU has no AVX2/FMA3\n");
    return 1;
  }
  printf("fp32 FMA peak, one core: 256-bit %.1f GFLOP/s", measure(fma256, 8, &sink));
  if (__builtin_cpu_supports("avx512f")) {
    printf(", 512-bit %.1f GFLOP/s", measure(fma512, 16, &sink));
  } else {
    printf(", no AVX-512F");
  }
  printf(" (checksum %g)\n", (double)sink);
  return 0;
}
