// ember ops [--format=text|list] PROGRAM.pte...: the operators (with kernel-call counts) and
// delegates (backend ids) each program's methods need. --format=list prints the union of the
// operators, sorted, one per line after '#' comment lines: the input of a selective build
// (tools/sdk/install.sh --ops-from, ember_selective_kernels in kernels/portable/selective.bzl).
//
// The runtime looks kernels up only for the KernelCall instructions of a method (no kernel or
// delegate looks up another kernel by name), so these are all the operators it can need.
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "schema/program_generated.h"
#include "tools/commands/command_registry.h"
#include "tools/commands/program_file.h"

namespace ember {
namespace tools {
namespace {

namespace sc = ::ember::schema;

const char kUsage[] =
    "usage: ember ops [--format=text|list] PROGRAM.pte...\n"
    "  text (default): per program and method, the operators with their kernel-call counts\n"
    "                  and the delegates (backend ids) with their call counts\n"
    "  list:           the operators of all the programs, sorted, one per line (delegates as\n"
    "                  '#' comments): the ops list of a selective build (install.sh --ops-from)\n";

std::string basename_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

int ops_command(int argc, char** argv) {
  bool list = false;
  std::vector<const char*> paths;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0) {
      std::printf("%s", kUsage);
      return 0;
    } else if (std::strcmp(argv[i], "--format=list") == 0) {
      list = true;
    } else if (std::strcmp(argv[i], "--format=text") == 0) {
      list = false;
    } else if (argv[i][0] == '-') {
      std::fprintf(stderr, "ember ops: unknown option %s\n%s", argv[i], kUsage);
      return 2;
    } else {
      paths.push_back(argv[i]);
    }
  }
  if (paths.empty()) {
    std::fprintf(stderr, "ember ops: no program given\n%s", kUsage);
    return 2;
  }
  std::set<std::string> all_ops, all_backends;
  std::string names;
  for (const char* path : paths) {
    ProgramFile file;
    const std::string error = read_program_file(path, &file);
    if (!error.empty()) {
      std::fprintf(stderr, "ember ops: %s\n", error.c_str());
      return 1;
    }
    names += (names.empty() ? "" : ", ") + basename_of(path);
    if (!list) std::printf("%s\n", path);
    const sc::Program* p = file.program;
    for (uint32_t mi = 0; p->methods() && mi < p->methods()->size(); ++mi) {
      const sc::Method* m = p->methods()->Get(mi);
      const uint32_t num_ops = m->operators() ? m->operators()->size() : 0;
      const uint32_t num_delegates = m->delegates() ? m->delegates()->size() : 0;
      std::vector<size_t> op_calls(num_ops), delegate_calls(num_delegates);
      for (uint32_t i = 0; m->instructions() && i < m->instructions()->size(); ++i) {
        const sc::Instruction* ins = m->instructions()->Get(i);
        if (ins->kind_type() == sc::InstructionKind::KernelCall) {
          uint32_t op = ins->kind_as_KernelCall()->op_index();
          if (op < num_ops) op_calls[op]++;
        } else if (ins->kind_type() == sc::InstructionKind::DelegateCall) {
          uint32_t d = ins->kind_as_DelegateCall()->delegate_index();
          if (d < num_delegates) delegate_calls[d]++;
        }
      }
      if (!list) {
        std::printf("  method '%s': %u operators, %u delegates\n", m->name() ? m->name()->c_str() : "",
                    num_ops, num_delegates);
      }
      for (uint32_t i = 0; i < num_ops; ++i) {
        const std::string key = operator_key(m->operators()->Get(i));
        all_ops.insert(key);
        if (!list) std::printf("    %5zu x %s\n", op_calls[i], key.c_str());
      }
      for (uint32_t i = 0; i < num_delegates; ++i) {
        const sc::Delegate* d = m->delegates()->Get(i);
        const std::string backend = d->backend_id() ? d->backend_id()->str() : "?";
        all_backends.insert(backend);
        if (!list) std::printf("    %5zu x delegate %s\n", delegate_calls[i], backend.c_str());
      }
    }
  }
  if (list) {
    std::printf("# operators of %s\n", names.c_str());
    std::printf("# (ember ops --format=list: the ops list of a selective kernel build)\n");
    for (const std::string& backend : all_backends) std::printf("# delegate: %s (link its backend)\n", backend.c_str());
    for (const std::string& op : all_ops) std::printf("%s\n", op.c_str());
  } else if (paths.size() > 1) {
    std::printf("all programs: %zu operators, %zu delegate backends\n", all_ops.size(), all_backends.size());
  }
  return 0;
}

}  // namespace
}  // namespace tools
}  // namespace ember

EMBER_REGISTER_COMMAND(ops, "list the operators and delegates programs need (input of a selective build)",
                       ember::tools::ops_command);
