#include "tools/commands/command_registry.h"

#include <algorithm>
#include <cstring>

namespace ember {
namespace tools {
namespace {
std::vector<Command>& table() {
  static std::vector<Command>* t = new std::vector<Command>();
  return *t;
}
}  // namespace

bool register_command(const char* name, const char* summary, CommandFn fn) {
  if (find_command(name) != nullptr) return false;
  table().push_back(Command{name, summary, fn});
  return true;
}

std::vector<Command> registered_commands() {
  std::vector<Command> out = table();
  std::sort(out.begin(), out.end(), [](const Command& a, const Command& b) { return std::strcmp(a.name, b.name) < 0; });
  return out;
}

const Command* find_command(const char* name) {
  for (const Command& c : table()) if (std::strcmp(c.name, name) == 0) return &c;
  return nullptr;
}

}  // namespace tools
}  // namespace ember
