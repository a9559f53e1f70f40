// Small helpers shared by the `ember` subcommands.
#pragma once

#include <string>
#include <vector>

#include "runtime/module/module.h"

namespace ember {
namespace tools {

// Prints "ember <command>: <message>" to stderr; returns exit code 1.
int report_error(const char* command, const Status& status);
// Prints "ember <command>: <message>" and a hint to use --help; returns exit code 2.
int usage_error(const char* command, const char* message);
// Parses a positive integer.
bool parse_count(const char* text, size_t* out);
// "1x3x224x224".
std::string shape_string(const Tensor& tensor);
// Valid inputs from the method's metadata: float inputs uniform [0,1), integer inputs in
// [0, 2) (valid token ids / positions for any vocabulary), at their upper-bound sizes.
Expected<std::vector<TensorPtr>> generate_inputs(const MethodMeta& meta, uint64_t seed);

}  // namespace tools
}  // namespace ember
