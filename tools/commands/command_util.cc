#include "tools/commands/command_util.h"

#include <cstdio>
#include <cstdlib>

namespace ember {
namespace tools {

int report_error(const char* command, const Status& status) {
  std::fprintf(stderr, "ember %s: %s\n", command, status.to_string().c_str());
  return 1;
}

int usage_error(const char* command, const char* message) {
  std::fprintf(stderr, "ember %s: %s (see ember %s --help)\n", command, message, command);
  return 2;
}

bool parse_count(const char* text, size_t* out) {
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != 0 || v <= 0) return false;
  *out = static_cast<size_t>(v);
  return true;
}

std::string shape_string(const Tensor& t) {
  std::string s;
  for (int i = 0; i < t.rank; ++i) s += (i ? "x" : "") + std::to_string(t.sizes[i]);
  return t.rank == 0 ? "scalar" : s;
}

Expected<std::vector<TensorPtr>> generate_inputs(const MethodMeta& meta, uint64_t seed) {
  std::vector<TensorPtr> out;
  for (size_t i = 0; i < meta.num_inputs(); ++i) {
    Result<TensorInfo> info = meta.input_tensor_info(i);
    if (!info.ok()) {
      return Status(Error::NotSupported, "input " + std::to_string(i) +
                                             " is not a tensor; pass inputs with --input");
    }
    std::vector<int64_t> sizes(info->max_sizes.begin(), info->max_sizes.end());
    out.push_back(rand(sizes, info->dtype, seed * 1000 + i, 2));
  }
  return out;
}

}  // namespace tools
}  // namespace ember
