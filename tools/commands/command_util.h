// Small helpers shared by the `ember` subcommands.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "extension/module/module.h"

namespace ember {
namespace tools {

// Prints "ember <command>: <message>" to stderr; returns exit code 1.
int report_error(const char* command, const Status& status);
// Prints "ember <command>: <message>" and a hint to use --help; returns exit code 2.
int usage_error(const char* command, const char* message);
// Parses a positive integer.
bool parse_count(const char* text, size_t* out);

// The flags of every command that loads a program, for one exported with
// `--external-weights`: `--data FILE.ptd` (repeatable, searched in order) and
// `--allow-updated-weights`. True when `arg` is one of them; `value()` reads the next argument.
template <typename Value>
bool take_data_flag(const std::string& arg, Value&& value, ModuleOptions* options) {
  if (arg == "--data") {
    options->data_files.push_back(value());
    return true;
  }
  if (arg == "--allow-updated-weights") {
    options->allow_updated_weights = true;
    return true;
  }
  return false;
}
constexpr const char* kDataFlagsUsage =
    "  --data FILE.ptd    the data file of a program exported with --external-weights\n"
    "                     (repeatable: searched in order)\n"
    "  --allow-updated-weights  accept data file tensors whose bytes changed since the export\n"
    "                     (same names, dtypes and shapes)\n";
// "1x3x224x224".
std::string shape_string(const Tensor& tensor);
// Valid inputs from the method's metadata: float inputs uniform [0,1), integer inputs in
// [0, 2) (valid token ids / positions for any vocabulary), at their upper-bound sizes.
// For timing (bench, profile) and debug, where the values do not matter.
Expected<std::vector<TensorPtr>> generate_inputs(const MethodMeta& meta, uint64_t seed);

// `ember run --zeros / --random`: inputs the user asked for explicitly, at their upper-bound
// sizes. Random: floats uniform [-1, 1), integers in [0, 10) (valid token ids and
// positions for any vocabulary), bools 0/1; the same values on every platform for a seed.
enum class SyntheticInputs { kZeros, kRandom };
Expected<std::vector<TensorPtr>> synthetic_inputs(const MethodMeta& meta, SyntheticInputs kind, uint64_t seed);

// One line per input, "  input 0: float32[1, 3, 224, 224]"; a dynamic input's sizes are
// upper bounds, "int64[<=1, <=128] (dynamic, up to these sizes)".
std::string describe_inputs(const MethodMeta& meta);

// Streams text to `out` and remembers how it ended, so that the line can be closed before
// anything else is printed (ember generate: the text, then its statistics on stderr).
class TextStream {
 public:
  explicit TextStream(FILE* out) : out_(out) {}
  void write(std::string_view text);
  // Ends the line unless the text is empty or already ends with a newline; flushes, so the
  // newline precedes whatever goes to stderr next even when stdout is a pipe.
  void finish();

 private:
  FILE* out_;
  bool at_line_start_ = true;
};

}  // namespace tools
}  // namespace ember
