// `ember conformance DIR [--form model|core|both] [--filter SUBSTR] [--verbose]
//  [--markdown FILE] [--jobs N] [--timeout SECONDS] [--no-isolate]`
// Runs the operator conformance cases under DIR (../shared/opcases, or one case directory):
// one line per case and form, `PASS|FAIL|UNSUPPORTED  case  form  reason`, then a summary
// per form. Exit code 0 when it ran (whatever the results), 1 when DIR holds no case, 2 on
// a usage error. Each case runs in its own process (a crashing kernel fails its case only).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tools/commands/command_registry.h"
#include "tools/commands/command_util.h"
#include "tools/conformance/case_info.h"
#include "tools/conformance/coverage_report.h"
#include "tools/conformance/isolated_runner.h"

namespace ember {
namespace tools {
namespace {

using conformance::CaseResult;
using conformance::Form;

constexpr size_t kShortReason = 200;

// Relative paths are relative to where `bazel run` was invoked.
std::string resolve(const std::string& path) {
  const char* wd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || path[0] == '/' || wd == nullptr) return path;
  return std::string(wd) + "/" + path;
}

}  // namespace

int conformance_command(int argc, char** argv) {
  std::string dir, filter, markdown, form = "both";
  std::string dir_arg, markdown_arg;  // as given, for the command line the document quotes
  bool verbose = false;
  conformance::IsolationOptions options;
  options.parallel = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ember conformance: %s needs a value\n", flag);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--form") {
      form = value("--form");
      if (form != "model" && form != "core" && form != "both") {
        return usage_error("conformance", "--form must be model, core or both");
      }
    } else if (a == "--filter") {
      filter = value("--filter");
    } else if (a == "--verbose" || a == "-v") {
      verbose = true;
    } else if (a == "--markdown") {
      markdown = value("--markdown");
      markdown_arg = markdown;
    } else if (a == "--jobs") {
      if (!parse_count(value("--jobs"), &options.parallel)) {
        return usage_error("conformance", "--jobs must be a positive integer");
      }
    } else if (a == "--timeout") {
      size_t s = 0;
      if (!parse_count(value("--timeout"), &s)) return usage_error("conformance", "--timeout must be a positive integer");
      options.timeout_seconds = static_cast<double>(s);
    } else if (a == "--no-isolate") {
      options.isolate = false;
    } else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: ember conformance DIR [--form model|core|both] [--filter SUBSTR] [--verbose]\n"
          "                         [--markdown FILE] [--jobs N] [--timeout SECONDS] [--no-isolate]\n"
          "Runs the operator cases under DIR (e.g. ../shared/opcases, or one case directory):\n"
          "exports model.pt2 / core.pt2, runs them and compares with output_<i>.npy.\n"
          "  --form        which archive(s) to export (default both)\n"
          "  --filter      only cases whose name contains SUBSTR\n"
          "  --verbose     full reasons, and notes on passing cases\n"
          "  --markdown    also write the coverage document (docs/op-coverage.md)\n"
          "  --jobs        cases run at once, each in its own process (default: cores)\n"
          "  --timeout     seconds before a case is killed (default 120)\n"
          "  --no-isolate  run in this process (a crash ends the run)\n");
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("conformance", ("unknown flag " + a).c_str());
    } else if (dir.empty()) {
      dir = a;
      dir_arg = a;
    } else {
      return usage_error("conformance", ("unexpected argument " + a).c_str());
    }
  }
  if (dir.empty()) return usage_error("conformance", "missing DIR (the opcases directory or one case)");
  dir = resolve(dir);

  std::vector<Form> forms;
  if (form != "core") forms.push_back(Form::Model);
  if (form != "model") forms.push_back(Form::Core);
  std::vector<conformance::CaseJob> jobs;
  std::map<std::string, std::string> case_opinfo;  // case name -> "op[.variant]"
  for (const std::string& case_dir : conformance::list_case_dirs(dir, filter)) {
    conformance::CaseInfo info;
    std::string err = conformance::read_case_info(case_dir, &info);
    if (!err.empty()) {
      std::fprintf(stderr, "ember conformance: skipping %s: %s\n", case_dir.c_str(), err.c_str());
      continue;
    }
    for (Form f : forms) jobs.push_back({info, f});
    case_opinfo[info.name] = info.variant.empty() ? info.op : info.op + "." + info.variant;
  }
  if (jobs.empty()) {
    std::fprintf(stderr, "ember conformance: no cases (directories with case.json) under %s%s\n", dir.c_str(),
                 filter.empty() ? "" : (" matching '" + filter + "'").c_str());
    return 1;
  }

  std::vector<CaseResult> results = conformance::run_cases(jobs, options, [&](const CaseResult& r) {
    CaseResult shown = r;
    if (r.outcome == conformance::Outcome::Pass && !verbose) shown.reason.clear();
    if (!verbose && shown.reason.size() > kShortReason) shown.reason = shown.reason.substr(0, kShortReason) + "...";
    std::printf("%s\n", conformance::result_line(shown).c_str());
    std::fflush(stdout);
  });

  std::printf("\nsummary:\n");
  for (const conformance::FormSummary& s : conformance::summarize(results)) {
    std::printf("  %s\n", conformance::summary_line(s).c_str());
  }
  if (!markdown.empty()) {
    // A set generated by tools/conformance/generate_opinfo_cases.py (summary.json beside the
    // cases) gets the per-OpInfo document; ../shared/opcases the docs/op-coverage.md layout.
    conformance::GeneratedSet generated;
    std::string why;
    bool is_generated = conformance::read_generated_set(dir, &generated, &why);
    if (!why.empty()) {
      std::fprintf(stderr, "ember conformance: %s\n", why.c_str());
      return 1;
    }
    std::string command = "bazel run //tools:ember -- conformance " + dir_arg + " --markdown " + markdown_arg;
    std::string path = resolve(markdown);
    std::string notes;
    {
      std::ifstream old(path);
      std::string text((std::istreambuf_iterator<char>(old)), std::istreambuf_iterator<char>());
      notes = conformance::kept_notes(text);
    }
    std::ofstream out(path);
    out << (is_generated ? conformance::generated_coverage_markdown(results, case_opinfo, generated, command)
                         : conformance::coverage_markdown(results, command));
    if (!notes.empty()) out << "\n" << notes;
    if (!out) {
      std::fprintf(stderr, "ember conformance: cannot write %s\n", path.c_str());
      return 1;
    }
    std::printf("wrote %s\n", path.c_str());
  }
  return 0;
}

}  // namespace tools
}  // namespace ember

EMBER_REGISTER_COMMAND(conformance, "run the operator conformance cases (../shared/opcases)",
                       ember::tools::conformance_command);
