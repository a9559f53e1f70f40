// `ember run MODEL.pte [--method NAME] [--input FILE.npy ...] [--then --input FILE.npy ...]
//  [--zeros | --random] [--output-dir DIR] [--threads N]`: one call per input group on the
// same loaded method. A call without --input needs --zeros or --random: outputs of made-up
// inputs look just as real as any others, so they are never the silent default.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "extension/module/module.h"
#include "tools/commands/command_registry.h"
#include "tools/commands/command_util.h"

namespace ember {
namespace tools {
namespace {

constexpr const char* kUsage =
    "usage: ember run MODEL.pte [--method NAME] [--input FILE.npy ...] [--then --input FILE.npy ...]\n"
    "         [--zeros | --random] [--output-dir DIR] [--threads N] [--data FILE.ptd]\n"
    "Runs a method once per input group (--then starts the next call on the same loaded method).\n"
    "  --input FILE.npy   one per method input, in order (`ember inspect` lists them)\n"
    "  --zeros            run calls without --input on all-zero inputs\n"
    "  --random           run calls without --input on seeded random inputs: floats uniform\n"
    "                     in [-1, 1), integers in [0, 10), bools 0/1 (the same every run)\n"
    "  --output-dir DIR   write output_<i>.npy (call k > 0: call<k>_output_<i>.npy)\n"
    "  --threads N        CPU threads (default 1)\n";

void print_summary(size_t call, size_t index, const Output& out) {
  if (!out.is_tensor()) {
    std::printf("call %zu output %zu: %s %g\n", call, index,
                out.value().is_int() ? "int" : out.value().is_bool() ? "bool" : "scalar",
                out.value().to_double());
    return;
  }
  const Tensor& t = out.tensor();
  std::printf("call %zu output %zu: %s %s  [", call, index, scalar_type_name(t.dtype),
              shape_string(t).c_str());
  int64_t n = t.numel();
  for (int64_t i = 0; i < std::min<int64_t>(n, 6); ++i) {
    std::printf("%s%.6g", i ? ", " : "", element_as_double(t, i));
  }
  std::printf("%s]\n", n > 6 ? ", ..." : "");
  // Top-5 for a vector or a batch of rows of scores.
  if (is_floating(t.dtype) && (t.rank == 1 || (t.rank == 2 && t.sizes[0] == 1)) && n > 1) {
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    int64_t k = std::min<int64_t>(5, n);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
      return element_as_double(t, a) > element_as_double(t, b);
    });
    std::printf("  top-%lld:", static_cast<long long>(k));
    for (int64_t i = 0; i < k; ++i) {
      std::printf(" %lld (%.4f)", static_cast<long long>(order[i]), element_as_double(t, order[i]));
    }
    std::printf("\n");
  }
}

}  // namespace

int run_command(int argc, char** argv) {
  std::string model_path, method = "forward", output_dir;
  std::vector<std::vector<std::string>> groups(1);
  size_t threads = 1;
  std::optional<SyntheticInputs> synthetic;  // --zeros / --random
  ModuleOptions module_options;
  for (int i = 1; i < argc; ++i) {  // argv[0] is the subcommand name
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ember run: %s needs a value\n", flag);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--method") {
      method = value("--method");
    } else if (a == "--input") {
      groups.back().push_back(value("--input"));
    } else if (a == "--then") {
      groups.emplace_back();
    } else if (a == "--zeros" || a == "--random") {
      const SyntheticInputs kind = a == "--zeros" ? SyntheticInputs::kZeros : SyntheticInputs::kRandom;
      if (synthetic && *synthetic != kind) return usage_error("run", "give at most one of --zeros and --random");
      synthetic = kind;
    } else if (a == "--output-dir") {
      output_dir = value("--output-dir");
    } else if (a == "--threads") {
      if (!parse_count(value("--threads"), &threads)) return usage_error("run", "--threads must be a positive integer");
    } else if (take_data_flag(a, [&] { return value(a.c_str()); }, &module_options)) {
    } else if (a == "-h" || a == "--help") {
      std::printf("%s%s", kUsage, kDataFlagsUsage);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("run", ("unknown flag " + a).c_str());
    } else if (model_path.empty()) {
      model_path = a;
    } else {
      return usage_error("run", ("unexpected argument " + a).c_str());
    }
  }
  if (model_path.empty()) return usage_error("run", "missing MODEL.pte");

  Module module(model_path, module_options);
  Status status = module.set_num_threads(threads);
  if (status.ok()) status = module.load_method(method);
  if (!status.ok()) return report_error("run", status);
  MethodMeta meta = *module.method_meta(method);
  bool some_call_without_inputs = false;
  for (const auto& files : groups) some_call_without_inputs = some_call_without_inputs || files.empty();
  if (some_call_without_inputs && meta.num_inputs() > 0 && !synthetic) {
    const size_t n = meta.num_inputs();
    std::fprintf(stderr,
                 "ember run: method '%s' takes %zu input%s and %s:\n%s"
                 "Pass one --input FILE.npy per input, in this order, or opt in to synthetic inputs: "
                 "--zeros (all zeros) or --random (seeded: floats in [-1, 1), integers in [0, 10)).\n",
                 method.c_str(), n, n == 1 ? "" : "s",
                 groups.size() == 1 ? "none was given" : "a call (--then) gives none",
                 describe_inputs(meta).c_str());
    return 2;
  }
  if (!output_dir.empty()) mkdir(output_dir.c_str(), 0755);

  for (size_t call = 0; call < groups.size(); ++call) {
    std::vector<TensorPtr> tensors;
    const std::vector<std::string>& files = groups[call];
    if (!files.empty() && files.size() != meta.num_inputs()) {
      return report_error("run", Status(Error::InvalidArgument,
                                        "method '" + method + "' takes " + std::to_string(meta.num_inputs()) +
                                            " inputs, call " + std::to_string(call) + " gave " +
                                            std::to_string(files.size())));
    }
    if (files.empty() && synthetic) {
      Expected<std::vector<TensorPtr>> generated = synthetic_inputs(meta, *synthetic, call);
      if (!generated.ok()) return report_error("run", generated.error());
      tensors = std::move(*generated);
    } else {  // the files, or none for a method without inputs
      for (const std::string& f : files) {
        Expected<TensorPtr> t = read_npy(f);
        if (!t.ok()) return report_error("run", t.error());
        tensors.push_back(*t);
      }
    }
    std::vector<Input> inputs(tensors.begin(), tensors.end());
    Expected<Outputs> outputs = module.execute(method, inputs);
    if (!outputs.ok()) return report_error("run", outputs.error());
    for (size_t i = 0; i < outputs->size(); ++i) {
      print_summary(call, i, outputs->at(i));
      if (!output_dir.empty() && outputs->at(i).is_tensor()) {
        std::string name = call == 0 ? "output_" + std::to_string(i) + ".npy"
                                     : "call" + std::to_string(call) + "_output_" + std::to_string(i) + ".npy";
        Status written = write_npy(output_dir + "/" + name, outputs->at(i).tensor());
        if (!written.ok()) return report_error("run", written);
      }
    }
  }
  return 0;
}

}  // namespace tools
}  // namespace ember

EMBER_REGISTER_COMMAND(run, "run a method on .npy inputs and write .npy outputs", ember::tools::run_command);
