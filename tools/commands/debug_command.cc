// `ember debug MODEL.pt2 --backend xnnpack|vulkan|qnn [--input FILE.npy ...] [--method NAME]
//  [--rtol R] [--atol A] [--all] [--fp16]`
//
// Finds the first operator whose delegated output differs from the portable kernels beyond
// the tolerance (see tools/devtools/numerical_debug.h for how), and the largest delegated
// error; --all lists every compared output. Exit status: 0 when no operator exceeds the
// tolerance, 3 when one does, 1/2 on errors.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "exporter/partition/backend_registry.h"
#include "tools/commands/command_registry.h"
#include "tools/commands/command_util.h"
#include "tools/devtools/numerical_debug.h"

namespace ember {
namespace tools {
namespace {

void usage() {
  std::printf(
      "usage: ember debug MODEL.pt2 --backend xnnpack|vulkan|qnn [--input FILE.npy ...] [--method NAME]\n"
      "                  [--rtol R] [--atol A] [--all] [--fp16]\n"
      "Exports the model twice (portable kernels; the backend with one delegate call per operator),\n"
      "runs both on the same inputs capturing every operator's output, and names the first operator\n"
      "whose output differs by relative L2 > R (default 1e-3) and max abs > A (default 1e-4).\n"
      "  --input FILE.npy  one per method input (default: uniform [0, 1) floats, integers in [0, 2))\n"
      "  --all             list every compared output\n"
      "  --fp16            the backend's fp16 mode (--xnnpack-fp16 / --vulkan-fp16 of ember export)\n"
      "Vulkan may run on a CPU Vulkan device (lavapipe) here; qnn takes int8 programs (an integer\n"
      "output one step apart shows as max abs 1). Exit status 3: an operator exceeds.\n");
}

bool parse_double(const char* text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text, &end);
  return end != text && *end == 0 && *out >= 0;
}

}  // namespace

int debug_command(int argc, char** argv) {
  std::string model, backend;
  std::vector<std::string> input_files;
  NumericalDebugOptions options;
  bool all = false, fp16 = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ember debug: %s needs a value\n", flag);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else if (a == "--backend") {
      backend = value("--backend");
    } else if (a == "--input") {
      input_files.push_back(value("--input"));
    } else if (a == "--method") {
      options.method = value("--method");
    } else if (a == "--rtol") {
      if (!parse_double(value("--rtol"), &options.rel_tolerance)) return usage_error("debug", "--rtol needs a number >= 0");
    } else if (a == "--atol") {
      if (!parse_double(value("--atol"), &options.abs_tolerance)) return usage_error("debug", "--atol needs a number >= 0");
    } else if (a == "--all") {
      all = true;
    } else if (a == "--fp16") {
      fp16 = true;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("debug", ("unknown flag " + a).c_str());
    } else if (model.empty()) {
      model = a;
    } else {
      return usage_error("debug", ("unexpected argument " + a).c_str());
    }
  }
  if (model.empty()) return usage_error("debug", "missing MODEL.pt2");
  if (backend == "portable" || exporter::find_backend(backend) == nullptr) {
    return usage_error("debug", "--backend must name a delegate backend (xnnpack or vulkan)");
  }
  exporter::BackendOptions backend_options;
  if (fp16) backend_options["fp16"] = "1";
  if (backend == "vulkan") backend_options["allow_cpu"] = "1";  // debugging numerics is as meaningful on lavapipe
  auto made = exporter::make_partitioner(backend, backend_options);
  if (!made.ok()) return usage_error("debug", std::string(made.status().message()).c_str());
  std::shared_ptr<exporter::Partitioner> partitioner = *made;
  std::vector<TensorPtr> inputs;
  for (const std::string& f : input_files) {
    Expected<TensorPtr> t = read_npy(f);
    if (!t.ok()) return report_error("debug", t.error());
    inputs.push_back(*t);
  }
  auto report = debug_numerics(model, partitioner, inputs, options);
  if (!report.ok()) {
    std::fprintf(stderr, "ember debug: %s\n", std::string(report.status().message()).c_str());
    return 1;
  }
  std::fputs(format_report(*report, options, all).c_str(), stdout);
  return report->first_exceeding >= 0 ? 3 : 0;
}

}  // namespace tools
}  // namespace ember

EMBER_REGISTER_COMMAND(debug, "find the first operator a delegate computes differently from the portable kernels",
                       ember::tools::debug_command);
