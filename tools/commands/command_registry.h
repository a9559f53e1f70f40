// The `ember` subcommand table. Each subcommand lives in its own file and registers itself:
//
//   int run_command(int argc, char** argv);   // argv[0] is the subcommand name
//   EMBER_REGISTER_COMMAND(run, "run a method on inputs", run_command);
//
// and its cc_library (alwayslink = 1) is added to //tools:ember's deps.
#pragma once

#include <vector>

namespace ember {
namespace tools {

using CommandFn = int (*)(int argc, char** argv);

struct Command {
  const char* name;
  const char* summary;
  CommandFn fn;
};

bool register_command(const char* name, const char* summary, CommandFn fn);
// Registered commands, sorted by name.
std::vector<Command> registered_commands();
const Command* find_command(const char* name);

}  // namespace tools
}  // namespace ember

#define EMBER_REGISTER_COMMAND(name, summary, fn) \
  static const bool ember_command_registered_##name = ::ember::tools::register_command(#name, summary, fn)
