// `ember bench MODEL.pte [--method NAME] [--warmup N] [--iterations N] [--threads N]
//  [--json FILE]`: load/init/first-call times, latency statistics, memory, tokens/s.
//
// JSON fields (stable): model, method, threads, warmup, iterations, load_ms, init_ms,
// first_call_ms, latency_ms {min, median, mean, p90, trimmed_mean, max}, peak_rss_kb,
// planned_arena_bytes, method_allocator_bytes, temp_bytes, and for KV-cache programs with
// token inputs: prefill_tokens, prefill_tokens_per_s, decode_tokens, decode_tokens_per_s.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "extension/module/module.h"
#include "runtime/platform/platform.h"
#include "tools/commands/command_registry.h"
#include "tools/commands/command_util.h"

namespace ember {
namespace tools {
namespace {

double ms_since(uint64_t start) { return (platform_monotonic_ns() - start) / 1e6; }

long peak_rss_kb() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

struct Stats {
  double min = 0, median = 0, mean = 0, p90 = 0, trimmed_mean = 0, max = 0;
};

Stats compute_stats(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  s.min = v.front();
  s.max = v.back();
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / n;
  s.p90 = v[std::min(n - 1, static_cast<size_t>(0.9 * (n - 1) + 0.5))];
  size_t lo = n / 10, hi = n - n / 10;  // middle 80%
  double tsum = 0;
  for (size_t i = lo; i < hi; ++i) tsum += v[i];
  s.trimmed_mean = tsum / (hi - lo);
  return s;
}

void progress(const char* phase, size_t done, size_t total) {
  if (total < 10 || !isatty(STDERR_FILENO)) return;
  int width = 30, filled = static_cast<int>(width * done / total);
  std::fprintf(stderr, "\r%-8s [%.*s%*s] %zu/%zu", phase, filled,
               "##############################", width - filled, "", done, total);
  if (done == total) std::fprintf(stderr, "\n");
}

// A KV-cache decoder: mutable state plus integer inputs with a dynamic sequence dimension
// (tokens [1, S] and positions [S]).
bool is_token_decoder(const MethodMeta& meta) {
  if (meta.num_mutable_state_tensors() == 0 || meta.num_inputs() == 0) return false;
  for (size_t i = 0; i < meta.num_inputs(); ++i) {
    Result<TensorInfo> info = meta.input_tensor_info(i);
    if (!info.ok() || info->dtype != ScalarType::Int64 || !info->dynamic) return false;
  }
  return true;
}

// Inputs for `count` tokens starting at `position`: tokens are small ids, positions count up.
std::vector<TensorPtr> token_inputs(const MethodMeta& meta, int64_t count, int64_t position) {
  std::vector<TensorPtr> inputs;
  for (size_t i = 0; i < meta.num_inputs(); ++i) {
    TensorInfo info = *meta.input_tensor_info(i);
    std::vector<int64_t> sizes(info.max_sizes.begin(), info.max_sizes.end());
    sizes.back() = count;
    TensorPtr t = zeros(sizes, ScalarType::Int64);
    for (int64_t k = 0; k < count; ++k) t.data<int64_t>()[k] = i == 0 ? (k * 7 + 1) % 50 : position + k;
    inputs.push_back(t);
  }
  return inputs;
}

}  // namespace

int bench_command(int argc, char** argv) {
  std::string model_path, method = "forward", json_path;
  size_t warmup = 3, iterations = 20, threads = 1;
  ModuleOptions module_options;
  for (int i = 1; i < argc; ++i) {  // argv[0] is the subcommand name
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--method") {
      method = value();
    } else if (a == "--warmup") {
      const char* v = value();
      if (std::string(v) == "0") warmup = 0;
      else if (!parse_count(v, &warmup)) return usage_error("bench", "--warmup must be a count");
    } else if (a == "--iterations") {
      if (!parse_count(value(), &iterations)) return usage_error("bench", "--iterations must be a positive integer");
    } else if (a == "--threads") {
      if (!parse_count(value(), &threads)) return usage_error("bench", "--threads must be a positive integer");
    } else if (a == "--json") {
      json_path = value();
    } else if (take_data_flag(a, value, &module_options)) {
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: ember bench MODEL.pte [--method NAME] [--warmup N] [--iterations N] "
                  "[--threads N] [--json FILE] [--data FILE.ptd]\n%s", kDataFlagsUsage);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("bench", ("unknown flag " + a).c_str());
    } else if (model_path.empty()) {
      model_path = a;
    } else {
      return usage_error("bench", ("unexpected argument " + a).c_str());
    }
  }
  if (model_path.empty()) return usage_error("bench", "missing MODEL.pte");

  uint64_t t0 = platform_monotonic_ns();
  Module module(model_path, module_options);
  Status status = module.load();
  if (!status.ok()) return report_error("bench", status);
  double load_ms = ms_since(t0);
  status = module.set_num_threads(threads);
  if (!status.ok()) return report_error("bench", status);
  t0 = platform_monotonic_ns();
  status = module.load_method(method);
  if (!status.ok()) return report_error("bench", status);
  double init_ms = ms_since(t0);
  MethodMeta meta = *module.method_meta(method);
  const bool decoder = is_token_decoder(meta);

  // Fixed inputs, bound once: the timed loop allocates nothing.
  std::vector<TensorPtr> inputs;
  if (decoder) {
    TensorInfo info = *meta.input_tensor_info(0);
    inputs = token_inputs(meta, std::max<int64_t>(1, info.max_sizes[info.max_sizes.size() - 1] / 2), 0);
  } else {
    Expected<std::vector<TensorPtr>> generated = generate_inputs(meta, 0);
    if (!generated.ok()) return report_error("bench", generated.error());
    inputs = *generated;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    status = module.set_input(method, i, inputs[i]);
    if (!status.ok()) return report_error("bench", status);
  }
  t0 = platform_monotonic_ns();
  Expected<Outputs> first = module.execute(method);
  if (!first.ok()) return report_error("bench", first.error());
  double first_ms = ms_since(t0);
  for (size_t i = 0; i < warmup; ++i) {
    if (decoder) module.reset_state(method);
    if (!module.execute(method).ok()) return report_error("bench", Status(Error::Internal, "warmup failed"));
  }
  std::vector<double> latencies(iterations);
  for (size_t i = 0; i < iterations; ++i) {
    if (decoder) module.reset_state(method);  // each prefill starts from an empty cache
    uint64_t start = platform_monotonic_ns();
    Expected<Outputs> out = module.execute(method);
    latencies[i] = ms_since(start);
    if (!out.ok()) return report_error("bench", out.error());
    progress("latency", i + 1, iterations);
  }
  Stats s = compute_stats(latencies);

  int64_t prefill_tokens = 0, decode_tokens = 0;
  double prefill_tps = 0, decode_tps = 0;
  if (decoder) {
    prefill_tokens = inputs[0].sizes().back();
    prefill_tps = prefill_tokens / (s.median / 1e3);
    TensorInfo info = *meta.input_tensor_info(0);
    int64_t max_len = info.max_sizes[info.max_sizes.size() - 1];
    decode_tokens = std::max<int64_t>(1, std::min<int64_t>(max_len - prefill_tokens, 32));
    std::vector<std::vector<TensorPtr>> steps;
    for (int64_t k = 0; k < decode_tokens; ++k) steps.push_back(token_inputs(meta, 1, prefill_tokens + k));
    module.reset_state(method);
    module.execute(method);  // prefill, then timed single-token steps
    uint64_t start = platform_monotonic_ns();
    for (int64_t k = 0; k < decode_tokens; ++k) {
      for (size_t i = 0; i < steps[k].size(); ++i) module.set_input(method, i, steps[k][i]);
      if (!module.execute(method).ok()) return report_error("bench", Status(Error::Internal, "decode step failed"));
    }
    decode_tps = decode_tokens / (ms_since(start) / 1e3);
  }
  Module::MemoryUsage usage = *module.memory_usage(method);
  long rss = peak_rss_kb();

  if (module.num_threads() != threads) {
    std::printf("note: %zu threads requested, %zu CPUs available to this process: using %zu\n", threads,
                module.num_threads(), module.num_threads());
  }
  threads = module.num_threads();
  std::printf("model %s  method %s  threads %zu\n", model_path.c_str(), method.c_str(), threads);
  std::printf("load %.2f ms  init %.2f ms  first call %.2f ms\n", load_ms, init_ms, first_ms);
  std::printf("latency over %zu iterations (ms): min %.3f  median %.3f  mean %.3f  p90 %.3f  "
              "trimmed-mean %.3f  max %.3f\n", iterations, s.min, s.median, s.mean, s.p90,
              s.trimmed_mean, s.max);
  std::printf("memory: planned arenas %zu B  method allocator %zu B  temp %zu B  peak RSS %ld KB\n",
              usage.planned_arena_bytes, usage.method_allocator_bytes, usage.temp_bytes, rss);
  if (decoder) {
    std::printf("prefill %lld tokens: %.1f tokens/s  decode %lld tokens: %.1f tokens/s\n",
                static_cast<long long>(prefill_tokens), prefill_tps,
                static_cast<long long>(decode_tokens), decode_tps);
  }
  if (!json_path.empty()) {
    FILE* f = std::fopen(json_path.c_str(), "w");
    if (f == nullptr) return report_error("bench", Status(Error::AccessFailed, "cannot write " + json_path));
    std::fprintf(f,
                 "{\n  \"model\": \"%s\",\n  \"method\": \"%s\",\n  \"threads\": %zu,\n"
                 "  \"warmup\": %zu,\n  \"iterations\": %zu,\n  \"load_ms\": %.4f,\n"
                 "  \"init_ms\": %.4f,\n  \"first_call_ms\": %.4f,\n  \"latency_ms\": {\"min\": %.4f, "
                 "\"median\": %.4f, \"mean\": %.4f, \"p90\": %.4f, \"trimmed_mean\": %.4f, \"max\": %.4f},\n"
                 "  \"peak_rss_kb\": %ld,\n  \"planned_arena_bytes\": %zu,\n"
                 "  \"method_allocator_bytes\": %zu,\n  \"temp_bytes\": %zu",
                 model_path.c_str(), method.c_str(), threads, warmup, iterations, load_ms, init_ms,
                 first_ms, s.min, s.median, s.mean, s.p90, s.trimmed_mean, s.max, rss,
                 usage.planned_arena_bytes, usage.method_allocator_bytes, usage.temp_bytes);
    if (decoder) {
      std::fprintf(f,
                   ",\n  \"prefill_tokens\": %lld,\n  \"prefill_tokens_per_s\": %.3f,\n"
                   "  \"decode_tokens\": %lld,\n  \"decode_tokens_per_s\": %.3f",
                   static_cast<long long>(prefill_tokens), prefill_tps,
                   static_cast<long long>(decode_tokens), decode_tps);
    }
    std::fprintf(f, "\n}\n");
    std::fclose(f);
  }
  return 0;
}

}  // namespace tools
}  // namespace ember

EMBER_REGISTER_COMMAND(bench, "measure load, init and latency of a method", ember::tools::bench_command);
