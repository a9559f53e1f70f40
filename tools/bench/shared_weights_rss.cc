// Resident memory of several programs loaded in one process: do programs over one data file
// (`ember export --external-weights`) hold one copy of the weights they share?
//
//   shared_weights_rss [--data W.ptd]... [--threads N] PROGRAM.pte...
//
// Loads each program in turn (a Module with the data files), runs its first method once on
// generated inputs (so every weight page it reads is resident), keeps it loaded, and prints
// the process's resident set after each: total, file-backed (mapped programs and data files)
// and anonymous (arenas, packed weights), in MiB. Run it once over programs that share a data
// file and once over self-contained ones (docs/pte-format.md, "Data files", has figures).
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "extension/module/module.h"
#include "tools/commands/command_util.h"

namespace {

// RssFile and RssAnon from /proc/self/status, in KiB (0 where the kernel lacks them).
void resident_kib(long* file, long* anon) {
  *file = *anon = 0;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssFile:", 0) == 0) *file = std::atol(line.c_str() + 8);
    if (line.rfind("RssAnon:", 0) == 0) *anon = std::atol(line.c_str() + 8);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ember;
  ModuleOptions options;
  std::vector<std::string> programs;
  size_t threads = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] { return i + 1 < argc ? argv[++i] : ""; };
    if (tools::take_data_flag(a, value, &options)) continue;
    if (a == "--threads") {
      if (!tools::parse_count(value(), &threads)) return tools::usage_error("shared_weights_rss", "--threads N");
    } else if (a == "-h" || a == "--help" || (!a.empty() && a[0] == '-')) {
      std::printf("usage: shared_weights_rss [--data W.ptd]... [--threads N] PROGRAM.pte...\n%s", tools::kDataFlagsUsage);
      return a[0] == '-' && a != "-h" && a != "--help" ? 2 : 0;
    } else {
      programs.push_back(a);
    }
  }
  if (programs.empty()) return tools::usage_error("shared_weights_rss", "name at least one PROGRAM.pte");
  std::vector<std::unique_ptr<Module>> loaded;
  std::vector<std::vector<TensorPtr>> inputs;
  long file0 = 0, anon0 = 0;
  resident_kib(&file0, &anon0);
  std::printf("%-40s %10s %10s %10s\n", "after loading and running", "RSS MiB", "file MiB", "anon MiB");
  std::printf("%-40s %10.1f %10.1f %10.1f\n", "(start)", (file0 + anon0) / 1024.0, file0 / 1024.0, anon0 / 1024.0);
  for (const std::string& path : programs) {
    loaded.push_back(std::make_unique<Module>(path, options));
    Module& m = *loaded.back();
    Status s = m.set_num_threads(threads);
    auto names = m.method_names();
    if (s.ok() && !names.ok()) s = names.error();
    const std::string method = s.ok() ? names->front() : "";
    if (s.ok()) s = m.load_method(method);
    if (!s.ok()) return tools::report_error("shared_weights_rss", s);
    auto in = tools::generate_inputs(*m.method_meta(method), 1);
    if (!in.ok()) return tools::report_error("shared_weights_rss", in.error());
    inputs.push_back(std::move(*in));
    std::vector<Input> bound(inputs.back().begin(), inputs.back().end());
    auto out = m.execute(method, bound);
    if (!out.ok()) return tools::report_error("shared_weights_rss", out.error());
    long file = 0, anon = 0;
    resident_kib(&file, &anon);
    const std::string name = path.size() > 40 ? "..." + path.substr(path.size() - 37) : path;
    std::printf("%-40s %10.1f %10.1f %10.1f\n", name.c_str(), (file + anon) / 1024.0, file / 1024.0, anon / 1024.0);
  }
  return 0;
}
