#include "tools/commands/command_util.h"

#include <cstdio>
#include <cstdlib>
#include <random>

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

namespace {

// One tensor per method input at its largest sizes, made by make(sizes, dtype, index); an
// error when an input is not a tensor.
template <typename Make>
Expected<std::vector<TensorPtr>> make_inputs(const MethodMeta& meta, Make make) {
  std::vector<TensorPtr> out;
  for (size_t i = 0; i < meta.num_inputs(); ++i) {
    Result<TensorInfo> info = meta.input_tensor_info(i);
    if (!info.ok()) {
      return Status(Error::NotSupported, "input " + std::to_string(i) +
                                             " is not a tensor; pass inputs with --input");
    }
    out.push_back(make(std::vector<int64_t>(info->max_sizes.begin(), info->max_sizes.end()), info->dtype, i));
  }
  return out;
}

}  // namespace

Expected<std::vector<TensorPtr>> generate_inputs(const MethodMeta& meta, uint64_t seed) {
  return make_inputs(meta, [&](const std::vector<int64_t>& sizes, ScalarType dtype, size_t i) {
    return rand(sizes, dtype, seed * 1000 + i, 2);
  });
}

Expected<std::vector<TensorPtr>> synthetic_inputs(const MethodMeta& meta, SyntheticInputs kind, uint64_t seed) {
  return make_inputs(meta, [&](const std::vector<int64_t>& sizes, ScalarType dtype, size_t i) {
    TensorPtr t = zeros(sizes, dtype);
    if (kind == SyntheticInputs::kRandom) {
      // mt19937_64's output is fixed by the standard; the distributions are not, so the
      // values are derived from its bits directly.
      std::mt19937_64 gen(seed * 1000 + i);
      for (int64_t k = 0; k < t.numel(); ++k) {
        const uint64_t bits = gen();
        double v;
        if (is_floating(dtype)) {
          v = static_cast<double>(bits >> 11) * 0x1.0p-52 - 1.0;  // [-1, 1)
        } else if (dtype == ScalarType::Bool) {
          v = static_cast<double>(bits >> 63);
        } else {
          v = static_cast<double>((bits >> 32) % 10);
        }
        set_element_from_double(t.tensor(), k, v);
      }
    }
    return t;
  });
}

std::string describe_inputs(const MethodMeta& meta) {
  std::string s;
  for (size_t i = 0; i < meta.num_inputs(); ++i) {
    s += "  input " + std::to_string(i) + ": ";
    Result<TensorInfo> info = meta.input_tensor_info(i);
    if (!info.ok()) {
      switch (meta.input_tag(i)) {
        case ValueTag::Int: s += "int (not a tensor)"; break;
        case ValueTag::Double: s += "double (not a tensor)"; break;
        case ValueTag::Bool: s += "bool (not a tensor)"; break;
        default: s += "not a tensor"; break;
      }
      s += "\n";
      continue;
    }
    s += std::string(scalar_type_name(info->dtype)) + "[";
    for (size_t d = 0; d < info->max_sizes.size(); ++d) {
      s += (d ? ", " : "") + std::string(info->dynamic ? "<=" : "") + std::to_string(info->max_sizes[d]);
    }
    s += "]";
    if (info->dynamic) s += " (dynamic, up to these sizes)";
    s += "\n";
  }
  return s;
}

void TextStream::write(std::string_view text) {
  if (text.empty()) return;
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);  // the user watches it stream
  at_line_start_ = text.back() == '\n';
}

void TextStream::finish() {
  if (!at_line_start_) std::fputc('\n', out_);
  at_line_start_ = true;
  std::fflush(out_);
}

}  // namespace tools
}  // namespace ember
