// `ember <command> [args...]`: dispatches to the registered subcommands
// (tools/commands/*_command.cc).
#include <cstdio>
#include <cstring>

#include "runtime/version.h"
#include "tools/commands/command_registry.h"

namespace {
void print_usage() {
  std::printf("usage: ember <command> [args...]\n\ncommands:\n");
  for (const auto& c : ember::tools::registered_commands()) std::printf("  %-12s %s\n", c.name, c.summary);
  std::printf("\nember <command> --help for a command's options; ember --version for the version.\n");
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  if (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "version") == 0) {
    std::printf("ember %s\n", EMBER_VERSION_STRING);
    return 0;
  }
  const ember::tools::Command* c = ember::tools::find_command(argv[1]);
  if (c == nullptr) {
    std::fprintf(stderr, "ember: unknown command '%s'\n\n", argv[1]);
    print_usage();
    return 2;
  }
  return c->fn(argc - 1, argv + 1);
}
