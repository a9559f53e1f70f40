// `ember verify MODEL.pte [--rtol R] [--atol A] [--threads N]`: runs every test case bundled
// in the program (`ember export --bundle DIR`) and compares its outputs with the expected
// ones, with tolerances by output dtype (kUsage; BundledTolerance in extension/module/module.h).
// Exit 0 iff every case passes; 1 if any fails or the program has no bundled cases; 2 on
// usage errors.
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <tuple>

#include "extension/module/module.h"
#include "tools/commands/command_registry.h"
#include "tools/commands/command_util.h"

namespace ember {
namespace tools {
namespace {

constexpr const char* kUsage =
    "usage: ember verify MODEL.pte [--rtol R] [--atol A] [--threads N]\n"
    "Runs the test cases bundled with `ember export --bundle DIR`; exit 0 iff all pass.\n"
    "An output passes when it has the expected dtype and shape and\n"
    "  max |got - expected| <= atol + rtol * max |expected|   and\n"
    "  RMS(got - expected)  <= atol + rtol * RMS(expected)     (relative L2 error about rtol)\n"
    "(NaN matches NaN). Default tolerances by output dtype:\n"
    "  float32, float64   rtol 1e-4, atol 1e-5  (fp32 rounding against PyTorch passes, a 1% error fails)\n"
    "  float16            rtol 1e-2, atol 1e-3\n"
    "  bfloat16           rtol 5e-2, atol 1e-2\n"
    "  integer, bool      exact\n"
    "  --rtol R, --atol A  use R / A for every output instead (0 0: exact)\n"
    "  --threads N         CPU threads (default 1)\n";

bool parse_tolerance(const char* text, double* out) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != 0 || !(v >= 0)) return false;
  *out = v;
  return true;
}

}  // namespace

int verify_command(int argc, char** argv) {
  std::string model_path;
  VerifyOptions options;  // rtol / atol < 0: by output dtype
  size_t threads = 1;
  ModuleOptions module_options;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ember verify: %s needs a value\n", flag);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--rtol") {
      if (!parse_tolerance(value("--rtol"), &options.rtol)) return usage_error("verify", "--rtol must be a number >= 0");
    } else if (a == "--atol") {
      if (!parse_tolerance(value("--atol"), &options.atol)) return usage_error("verify", "--atol must be a number >= 0");
    } else if (a == "--threads") {
      if (!parse_count(value("--threads"), &threads)) return usage_error("verify", "--threads must be a positive integer");
    } else if (take_data_flag(a, [&] { return value(a.c_str()); }, &module_options)) {
    } else if (a == "-h" || a == "--help") {
      std::printf("%s%s", kUsage, kDataFlagsUsage);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("verify", ("unknown flag " + a).c_str());
    } else if (model_path.empty()) {
      model_path = a;
    } else {
      return usage_error("verify", ("unexpected argument " + a).c_str());
    }
  }
  if (model_path.empty()) return usage_error("verify", "missing MODEL.pte");
  Module module(model_path, module_options);
  Status status = module.set_num_threads(threads);
  if (!status.ok()) return report_error("verify", status);
  Expected<std::vector<BundledCaseResult>> results = module.verify_bundled_cases(options);
  if (!results.ok()) return report_error("verify", results.error());
  size_t passed = 0;
  std::set<std::tuple<std::string, double, double>> applied;  // dtype, rtol, atol
  for (const BundledCaseResult& r : *results) {
    passed += r.passed ? 1 : 0;
    std::printf("%s %s (%s): max abs error %.3g, rel L2 error %.3g%s%s\n", r.passed ? "PASS" : "FAIL", r.name.c_str(),
                r.method.c_str(), r.max_abs_error, r.rel_l2_error, r.message.empty() ? "" : "; ", r.message.c_str());
    for (const BundledOutputResult& o : r.outputs) {
      applied.emplace(scalar_type_name(o.dtype), o.tolerance.rtol, o.tolerance.atol);
    }
  }
  std::string tolerances;
  for (const auto& t : applied) {
    char text[96];
    if (std::get<1>(t) == 0 && std::get<2>(t) == 0) {
      std::snprintf(text, sizeof(text), "%s exact", std::get<0>(t).c_str());
    } else {
      std::snprintf(text, sizeof(text), "%s rtol %g atol %g", std::get<0>(t).c_str(), std::get<1>(t), std::get<2>(t));
    }
    tolerances += (tolerances.empty() ? "" : "; ") + std::string(text);
  }
  std::printf("%zu of %zu cases passed (%s)\n", passed, results->size(),
              tolerances.empty() ? "no outputs compared" : tolerances.c_str());
  return passed == results->size() ? 0 : 1;
}

}  // namespace tools
}  // namespace ember

EMBER_REGISTER_COMMAND(verify, "run the test cases bundled in a program (export --bundle) and compare outputs",
                       ember::tools::verify_command);
