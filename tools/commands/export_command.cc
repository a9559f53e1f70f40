// ember export IN.pt2 -o OUT.pte [--backend portable|xnnpack|vulkan]... [--method NAME]
//                              [--no-fold] [--verbose]
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "exporter/exporter.h"
#include "tools/commands/command_registry.h"

namespace ember {
namespace tools {
namespace {

void usage() {
  std::printf(
      "usage: ember export IN.pt2 -o OUT.pte [--backend portable|xnnpack|vulkan]... [--method NAME]\n"
      "  -o, --output PATH   the .pte to write (required)\n"
      "  --backend NAME      delegate backend to partition for, in priority order (default: portable,\n"
      "                      i.e. portable kernels only)\n"
      "  --method NAME       method name in the program (default: forward)\n"
      "  --no-fold           skip conv+batch_norm folding\n");
}

int export_command(int argc, char** argv) {
  std::string in, out;
  exporter::ExportOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ember export: %s needs a value\n", flag);
        return nullptr;
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") { usage(); return 0; }
    if (a == "-o" || a == "--output") {
      const char* v = value("-o");
      if (!v) return 2;
      out = v;
    } else if (a.rfind("--output=", 0) == 0) {
      out = a.substr(9);
    } else if (a == "--method") {
      const char* v = value("--method");
      if (!v) return 2;
      options.method_name = v;
    } else if (a == "--backend" || a.rfind("--backend=", 0) == 0) {
      std::string b;
      if (a == "--backend") {
        const char* v = value("--backend");
        if (!v) return 2;
        b = v;
      } else {
        b = a.substr(10);
      }
      if (b == "portable") continue;
      if (b == "xnnpack" || b == "vulkan") {
        std::fprintf(stderr, "ember export: backend '%s' is not available in this build yet (available: portable)\n", b.c_str());
        return 1;
      }
      std::fprintf(stderr, "ember export: unknown backend '%s' (known: portable, xnnpack, vulkan)\n", b.c_str());
      return 2;
    } else if (a == "--no-fold") {
      options.fold_conv_bn = false;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "ember export: unknown option '%s' (see ember export --help)\n", a.c_str());
      return 2;
    } else if (in.empty()) {
      in = a;
    } else {
      std::fprintf(stderr, "ember export: unexpected argument '%s'\n", a.c_str());
      return 2;
    }
  }
  if (in.empty() || out.empty()) {
    std::fprintf(stderr, "ember export: need IN.pt2 and -o OUT.pte (see ember export --help)\n");
    return 2;
  }
  auto r = exporter::export_pt2_file(in, options);
  if (!r.ok()) {
    std::fprintf(stderr, "ember export: %s\n", std::string(r.status().message()).c_str());
    return 1;
  }
  std::ofstream f(out, std::ios::binary);
  f.write(reinterpret_cast<const char*>(r->pte.data()), static_cast<std::streamsize>(r->pte.size()));
  if (!f) {
    std::fprintf(stderr, "ember export: cannot write %s\n", out.c_str());
    return 1;
  }
  std::printf("wrote %s: %zu bytes, %zu instructions (%zu nodes imported, %d conv+bn folded), "
              "%zu values, %zu segments (%zu bytes)\n",
              out.c_str(), r->pte.size(), r->stats.num_instructions, r->num_nodes_imported, r->conv_bn_folded,
              r->stats.num_values, r->stats.num_segments, r->stats.constant_bytes);
  std::printf("memory plan (%s): arena %zu bytes = shared %zu + inputs/state %zu; lower bound %zu "
              "(by size %zu, by first use %zu)\n",
              r->plan.strategy.c_str(), r->plan.arena_size, r->plan.shared_size, r->plan.fixed_size,
              r->plan.lower_bound, r->plan.size_by_size, r->plan.size_by_first_use);
  return 0;
}

}  // namespace
}  // namespace tools
}  // namespace ember

EMBER_REGISTER_COMMAND(export, "convert a torch.export .pt2 into a .pte program", ember::tools::export_command);
