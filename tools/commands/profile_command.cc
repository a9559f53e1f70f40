// `ember profile MODEL.pte [--method NAME] [--input FILE.npy ...] [--iterations N]
//  [--warmup N] [--threads N] [--top N] [--trace OUT.json] [--svg OUT.svg]`
//
// Runs the method with an event tracer attached (delegates built with per-operator
// profiling), prints the operators by total time (kernels, operators inside delegates, and
// each delegate call's time outside its operators) and optionally writes a Chrome
// trace-event JSON (open in https://ui.perfetto.dev) and a timeline SVG of the last run.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/core/event_tracer.h"
#include "extension/module/module.h"
#include "tools/commands/command_registry.h"
#include "tools/commands/command_util.h"
#include "tools/devtools/trace_report.h"

namespace ember {
namespace tools {
namespace {

// Init events and the warm-up runs; the measured runs get a buffer sized from the warm-up.
constexpr size_t kWarmupEventCapacity = 1 << 16;

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  return static_cast<bool>(f);
}

}  // namespace

int profile_command(int argc, char** argv) {
  std::string model_path, method = "forward", trace_path, svg_path;
  std::vector<std::string> input_files;
  size_t iterations = 20, warmup = 2, threads = 1, top = 25;
  ModuleOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ember profile: %s needs a value\n", flag);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--method") {
      method = value("--method");
    } else if (a == "--input") {
      input_files.push_back(value("--input"));
    } else if (a == "--iterations") {
      if (!parse_count(value("--iterations"), &iterations)) {
        return usage_error("profile", "--iterations must be a positive integer");
      }
    } else if (a == "--warmup") {
      const char* v = value("--warmup");
      if (std::string(v) == "0") {
        warmup = 0;
      } else if (!parse_count(v, &warmup)) {
        return usage_error("profile", "--warmup must be a non-negative integer");
      }
    } else if (a == "--threads") {
      if (!parse_count(value("--threads"), &threads)) return usage_error("profile", "--threads must be a positive integer");
    } else if (take_data_flag(a, [&] { return value(a.c_str()); }, &options)) {
    } else if (a == "--top") {
      const char* v = value("--top");
      if (std::string(v) == "0") {
        top = 0;
      } else if (!parse_count(v, &top)) {
        return usage_error("profile", "--top must be a non-negative integer");
      }
    } else if (a == "--trace") {
      trace_path = value("--trace");
    } else if (a == "--svg") {
      svg_path = value("--svg");
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: ember profile MODEL.pte [--method NAME] [--input FILE.npy ...] [--iterations N] "
                  "[--warmup N] [--threads N] [--top N] [--trace OUT.json] [--svg OUT.svg]\n"
                  "Times every instruction and every operator inside XNNPACK delegates; --trace writes a "
                  "Chrome trace (open in ui.perfetto.dev), --svg a timeline of the last run.\n%s",
                  kDataFlagsUsage);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("profile", ("unknown flag " + a).c_str());
    } else if (model_path.empty()) {
      model_path = a;
    } else {
      return usage_error("profile", ("unexpected argument " + a).c_str());
    }
  }
  if (model_path.empty()) return usage_error("profile", "missing MODEL.pte");

  std::vector<TraceEvent> warm_events(kWarmupEventCapacity);
  BufferEventTracer warm_tracer(warm_events.data(), warm_events.size());
  options.event_tracer = &warm_tracer;  // given at load: delegates build with profiling
  Module module(model_path, options);
  Status status = module.set_num_threads(threads);
  if (status.ok()) status = module.load_method(method);
  if (!status.ok()) return report_error("profile", status);
  MethodMeta meta = *module.method_meta(method);

  std::vector<TensorPtr> tensors;
  if (input_files.empty()) {
    Expected<std::vector<TensorPtr>> generated = generate_inputs(meta, 0);
    if (!generated.ok()) return report_error("profile", generated.error());
    tensors = std::move(*generated);
  } else {
    if (input_files.size() != meta.num_inputs()) {
      return report_error("profile", Status(Error::InvalidArgument,
                                            "method '" + method + "' takes " + std::to_string(meta.num_inputs()) +
                                                " inputs, --input gave " + std::to_string(input_files.size())));
    }
    for (const std::string& f : input_files) {
      Expected<TensorPtr> t = read_npy(f);
      if (!t.ok()) return report_error("profile", t.error());
      tensors.push_back(*t);
    }
  }
  std::vector<Input> inputs(tensors.begin(), tensors.end());
  // At least one warm-up run: it sizes the buffer of the measured runs.
  for (size_t i = 0; i < std::max<size_t>(warmup, 1); ++i) {
    Expected<Outputs> out = module.execute(method, inputs);
    if (!out.ok()) return report_error("profile", out.error());
  }
  std::vector<OwnedEvent> init_events;
  size_t per_run = 0;
  for (const TraceEvent& e : warm_tracer.events()) {
    if (e.kind == TraceEventKind::ProgramLoad || e.kind == TraceEventKind::MethodInit ||
        e.kind == TraceEventKind::DelegateInit) {
      init_events.push_back(copy_events(&e, 1)[0]);
    } else if (e.run == 0) {
      ++per_run;
    }
  }
  if (warm_tracer.dropped() > 0) {
    std::fprintf(stderr, "ember profile: warm-up dropped %zu events (more than %zu per run?)\n",
                 warm_tracer.dropped(), kWarmupEventCapacity);
  }

  std::vector<TraceEvent> events(per_run * iterations + 16);
  BufferEventTracer tracer(events.data(), events.size());
  module.method(method)->set_event_tracer(&tracer);
  for (size_t i = 0; i < iterations; ++i) {
    Expected<Outputs> out = module.execute(method, inputs);
    if (!out.ok()) return report_error("profile", out.error());
  }
  module.method(method)->set_event_tracer(nullptr);
  if (tracer.dropped() > 0) {
    std::fprintf(stderr, "ember profile: the trace buffer overflowed: %zu events dropped\n", tracer.dropped());
  }
  std::vector<OwnedEvent> measured = copy_events(events.data(), tracer.size());

  std::printf("%s, method '%s', %zu threads, %zu events per run\n", model_path.c_str(), method.c_str(), threads,
              per_run);
  for (const OwnedEvent& e : init_events) {
    const char* what = e.kind == TraceEventKind::ProgramLoad  ? "program load"
                       : e.kind == TraceEventKind::MethodInit ? "init"
                                                              : "delegate init";
    std::printf("  %s %s: %.3f ms\n", what, e.name.c_str(),
                e.duration_ns() / 1e6);
  }
  const ProfileSummary summary = summarize(measured);
  std::fputs(format_table(summary, top).c_str(), stdout);
  std::fputs(format_type_table(summary, top == 0 ? 0 : std::min<size_t>(top, 10)).c_str(), stdout);

  if (!trace_path.empty()) {
    std::vector<OwnedEvent> all = init_events;
    all.insert(all.end(), measured.begin(), measured.end());
    if (!write_file(trace_path, chrome_trace_json(all))) {
      return report_error("profile", Status(Error::InvalidArgument, "cannot write " + trace_path));
    }
    std::printf("wrote %s (%zu events; open in https://ui.perfetto.dev)\n", trace_path.c_str(), all.size());
  }
  if (!svg_path.empty()) {
    if (!write_file(svg_path, timeline_svg(measured, static_cast<uint32_t>(iterations - 1)))) {
      return report_error("profile", Status(Error::InvalidArgument, "cannot write " + svg_path));
    }
    std::printf("wrote %s (timeline of the last run)\n", svg_path.c_str());
  }
  return 0;
}

}  // namespace tools
}  // namespace ember

EMBER_REGISTER_COMMAND(profile, "time every operator (kernels and inside delegates); Chrome trace, SVG",
                       ember::tools::profile_command);
