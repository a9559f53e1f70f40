// `ember verify MODEL.pte [--rtol R] [--atol A] [--threads N]`: runs every test case bundled
// in the program (`ember export --bundle DIR`) and compares its outputs with the expected
// ones: |got - want| <= atol + rtol * |want| elementwise. Exit 0 iff every case passes; 1 if
// any fails or the program has no bundled cases; 2 on usage errors.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/module/module.h"
#include "tools/commands/command_registry.h"
#include "tools/commands/command_util.h"

namespace ember {
namespace tools {
namespace {

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
  double rtol = 1e-5, atol = 1e-6;
  size_t threads = 1;
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
      if (!parse_tolerance(value("--rtol"), &rtol)) return usage_error("verify", "--rtol must be a number >= 0");
    } else if (a == "--atol") {
      if (!parse_tolerance(value("--atol"), &atol)) return usage_error("verify", "--atol must be a number >= 0");
    } else if (a == "--threads") {
      if (!parse_count(value("--threads"), &threads)) return usage_error("verify", "--threads must be a positive integer");
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: ember verify MODEL.pte [--rtol R (1e-5)] [--atol A (1e-6)] [--threads N]\n"
                  "Runs the test cases bundled with `ember export --bundle DIR`; exit 0 iff all pass.\n");
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
  Module module(model_path);
  Status status = module.set_num_threads(threads);
  if (!status.ok()) return report_error("verify", status);
  Expected<std::vector<BundledCaseResult>> results = module.verify_bundled_cases(rtol, atol);
  if (!results.ok()) return report_error("verify", results.error());
  size_t passed = 0;
  for (const BundledCaseResult& r : *results) {
    passed += r.passed ? 1 : 0;
    std::printf("%s %s (%s): max abs error %.3g, max rel error %.3g%s%s\n", r.passed ? "PASS" : "FAIL", r.name.c_str(),
                r.method.c_str(), r.max_abs_error, r.max_rel_error, r.message.empty() ? "" : "; ",
                r.message.c_str());
  }
  std::printf("%zu of %zu cases passed (rtol %g, atol %g)\n", passed, results->size(), rtol, atol);
  return passed == results->size() ? 0 : 1;
}

}  // namespace tools
}  // namespace ember

EMBER_REGISTER_COMMAND(verify, "run the test cases bundled in a program (export --bundle) and compare outputs",
                       ember::tools::verify_command);
