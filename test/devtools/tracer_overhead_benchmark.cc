// Cost of event tracing in Method::execute().
//
//   BM_Chain/<traced>   256 test::add kernels on float32[16] (per-instruction overhead at its
//                       worst: each kernel takes ~20 ns); traced = 0 none, 1 BufferEventTracer
//   BM_Pte/<mode>       the program in $EMBER_TRACER_BENCH_PTE (e.g. bert_tiny exported with
//                       --backend xnnpack); mode 0 untraced, 1 tracer attached after init
//                       (instructions only), 2 tracer given at init (XNNPACK operators too)
//   BM_Interleaved      untraced and traced executes alternating in one loop (robust on a busy
//                       machine); counters: median ns of each and traced_over_untraced.
//
//   bazel run -c opt //test/devtools:tracer_overhead_benchmark
//   EMBER_TRACER_BENCH_PTE=$PWD/bert.pte bazel run -c opt //test/devtools:tracer_overhead_benchmark
//
// Built with -DEMBER_TRACER_BENCH_BASELINE (runtime sources from before tracing existed),
// only the untraced benchmarks are compiled: the tracer-off overhead is BM_Chain/0 there vs here.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "runtime/executor/method.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/platform/platform.h"
#include "runtime/program/program.h"
#include "test/support/test_programs.h"

namespace ember {
namespace {

constexpr int kChain = 256;

std::vector<uint8_t> chain_program() {
  testing::ProgramBuilder pb;
  testing::MethodBuilder& m = pb.method("forward");
  uint32_t x = m.input_tensor(ScalarType::Float32, {16});
  uint32_t prev = x;
  for (int i = 0; i < kChain; ++i) {
    uint32_t y = m.planned_tensor(ScalarType::Float32, {16});
    m.kernel("test::add", "default", {static_cast<int32_t>(prev), static_cast<int32_t>(x), static_cast<int32_t>(y)});
    prev = y;
  }
  m.set_inputs({x}).set_outputs({prev});
  testing::PteBytes bytes = pb.build();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

// A loaded program and method with owned memory; zero inputs at their upper-bound sizes.
struct Loaded {
  std::vector<uint8_t> file;
  std::unique_ptr<BufferDataLoader> loader;
  std::unique_ptr<Program> program;
  std::vector<std::vector<uint8_t>> arenas;
  std::vector<Span<uint8_t>> spans;
  std::vector<uint8_t> method_mem, temp_mem;
  MemoryAllocator method_alloc, temp_alloc;
  MemoryManager memory;
  std::unique_ptr<Method> method;
  std::vector<std::vector<uint8_t>> input_data;
  std::vector<std::vector<int64_t>> input_sizes;
  std::vector<Tensor> inputs;

  bool load(const std::vector<uint8_t>& bytes, EventTracer* tracer) {
    file.assign(bytes.size() + 64, 0);
    uint8_t* base = file.data() + (64 - reinterpret_cast<uintptr_t>(file.data()) % 64) % 64;
    std::copy(bytes.begin(), bytes.end(), base);
    loader.reset(new BufferDataLoader(base, bytes.size()));
    Result<Program> p = Program::load(loader.get(), Program::Verification::Full);
    if (!p.ok()) return false;
    program.reset(new Program(std::move(*p)));
    MethodMeta meta = *program->method_meta("forward");
    for (size_t i = 0; i < meta.num_arenas(); ++i) arenas.emplace_back(*meta.arena_size(i) + 64);
    for (auto& a : arenas) {
      uint8_t* aligned = a.data() + (64 - reinterpret_cast<uintptr_t>(a.data()) % 64) % 64;
      spans.emplace_back(aligned, a.size() - 64);
    }
    method_mem.resize(32 << 20);
    temp_mem.resize(32 << 20);
    method_alloc = MemoryAllocator(method_mem.data(), method_mem.size());
    temp_alloc = MemoryAllocator(temp_mem.data(), temp_mem.size());
    memory.method_allocator = &method_alloc;
    memory.temp_allocator = &temp_alloc;
    memory.planned_arenas = Span<Span<uint8_t>>(spans.data(), spans.size());
#ifdef EMBER_TRACER_BENCH_BASELINE
    (void)tracer;
    Result<Method> m = program->load_method("forward", &memory);
#else
    Result<Method> m = program->load_method("forward", &memory, nullptr, nullptr, tracer);
#endif
    if (!m.ok()) return false;
    method.reset(new Method(std::move(*m)));
    inputs.resize(meta.num_inputs());
    input_sizes.resize(meta.num_inputs());
    input_data.resize(meta.num_inputs());
    for (size_t i = 0; i < meta.num_inputs(); ++i) {
      Result<TensorInfo> info = meta.input_tensor_info(i);
      if (!info.ok()) return false;
      input_sizes[i].assign(info->max_sizes.begin(), info->max_sizes.end());
      input_data[i].assign(info->nbytes + 64, 0);
      Tensor& t = inputs[i];
      t.dtype = info->dtype;
      t.rank = static_cast<uint8_t>(input_sizes[i].size());
      t.sizes = input_sizes[i].data();
      t.max_sizes = input_sizes[i].data();
      t.data = input_data[i].data();
      t.capacity_bytes = input_data[i].size();
      if (method->bind_input(i, t) != Error::Ok) return false;
    }
    return method->execute() == Error::Ok;
  }
};

std::vector<uint8_t> bench_pte() {
  const char* path = std::getenv("EMBER_TRACER_BENCH_PTE");
  if (path == nullptr) return {};
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

#ifndef EMBER_TRACER_BENCH_BASELINE
// Large enough for the benchmark's iterations; cleared when full (no allocation in the loop).
struct Buffer {
  std::vector<TraceEvent> events = std::vector<TraceEvent>(1 << 20);
  BufferEventTracer tracer{events.data(), events.size()};
  void make_room(size_t per_run) {
    if (tracer.size() + per_run > tracer.capacity()) tracer.clear();
  }
};
#endif

void run_loop(benchmark::State& state, Loaded& l, size_t per_run, void* buffer) {
  for (auto _ : state) {
#ifndef EMBER_TRACER_BENCH_BASELINE
    if (buffer != nullptr) static_cast<Buffer*>(buffer)->make_room(per_run);
#endif
    if (l.method->execute() != Error::Ok) {
      state.SkipWithError(l.method->last_error_message());
      return;
    }
  }
}

void BM_Chain(benchmark::State& state) {
  const bool traced = state.range(0) != 0;
  Loaded l;
  if (!l.load(chain_program(), nullptr)) return state.SkipWithError("chain program failed to load");
  void* buffer = nullptr;
#ifndef EMBER_TRACER_BENCH_BASELINE
  Buffer b;
  if (traced) {
    l.method->set_event_tracer(&b.tracer);
    buffer = &b;
  }
#else
  if (traced) return state.SkipWithError("no tracer in the baseline build");
#endif
  run_loop(state, l, kChain + 1, buffer);
  state.counters["ns_per_instruction"] =
      benchmark::Counter(kChain, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Chain)->Arg(0)
#ifndef EMBER_TRACER_BENCH_BASELINE
    ->Arg(1)
#endif
    ;

void BM_Pte(benchmark::State& state) {
  std::vector<uint8_t> pte = bench_pte();
  if (pte.empty()) return state.SkipWithError("set EMBER_TRACER_BENCH_PTE to a .pte");
  Loaded l;
  void* buffer = nullptr;
#ifndef EMBER_TRACER_BENCH_BASELINE
  Buffer b;
  if (!l.load(pte, state.range(0) == 2 ? &b.tracer : nullptr)) return state.SkipWithError("load failed");
  if (state.range(0) != 0) {
    l.method->set_event_tracer(&b.tracer);
    buffer = &b;
  }
#else
  if (!l.load(pte, nullptr)) return state.SkipWithError("load failed");
#endif
  run_loop(state, l, 4096, buffer);
}
BENCHMARK(BM_Pte)->Arg(0)
#ifndef EMBER_TRACER_BENCH_BASELINE
    ->Arg(1)->Arg(2)
#endif
    ->Unit(benchmark::kMicrosecond);

#ifndef EMBER_TRACER_BENCH_BASELINE
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Untraced and traced alternate on the same method: the ratio of medians is robust against
// a machine whose load changes during the run. Arg 0: the chain program; 1: the .pte with
// the tracer given at init (delegate operators profiled in the traced executes only; the
// untraced ones run the same profiling-enabled XNNPACK runtime).
void BM_Interleaved(benchmark::State& state) {
  std::vector<uint8_t> pte = state.range(0) == 0 ? chain_program() : bench_pte();
  if (pte.empty()) return state.SkipWithError("set EMBER_TRACER_BENCH_PTE to a .pte");
  Buffer b;
  Loaded l;
  if (!l.load(pte, state.range(0) == 0 ? nullptr : &b.tracer)) return state.SkipWithError("load failed");
  std::vector<double> off, on;
  off.reserve(1 << 16);
  on.reserve(1 << 16);
  for (auto _ : state) {
    uint64_t t0 = platform_monotonic_ns();
    l.method->set_event_tracer(nullptr);
    Error e1 = l.method->execute();
    uint64_t t1 = platform_monotonic_ns();
    b.make_room(4096);
    l.method->set_event_tracer(&b.tracer);
    Error e2 = l.method->execute();
    uint64_t t2 = platform_monotonic_ns();
    if (e1 != Error::Ok || e2 != Error::Ok) return state.SkipWithError(l.method->last_error_message());
    if (off.size() < off.capacity()) {
      off.push_back(static_cast<double>(t1 - t0));
      on.push_back(static_cast<double>(t2 - t1));
    }
  }
  const double m_off = median(off), m_on = median(on);
  state.counters["untraced_ns"] = m_off;
  state.counters["traced_ns"] = m_on;
  state.counters["traced_over_untraced"] = m_off > 0 ? m_on / m_off : 0.0;
}
BENCHMARK(BM_Interleaved)->Arg(0)->Arg(1);
#endif

}  // namespace
}  // namespace ember
