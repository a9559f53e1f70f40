// Imports a torch.export archive (.pt2, ExportedProgram schema major 8) into the graph IR:
// reads models/model.json, the weight and constant tables and their raw bytes (made
// contiguous), evaluates symbolic sizes to upper bounds, orders every node's arguments by
// its ATen schema and fills defaults. Every problem comes back as one clear Status.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "exporter/ir/graph.h"

namespace ember {
namespace exporter {

constexpr int kSupportedSchemaMajor = 8;

absl::StatusOr<Graph> import_pt2(const std::string& path);
// The same from an archive in memory; `name` only appears in messages.
absl::StatusOr<Graph> import_pt2_bytes(const void* data, size_t size, const std::string& name = "<memory>");

// Maps a torch.export dtype code (1 uint8 ... 7 float32, 12 bool, 13 bfloat16) to Ember's.
absl::StatusOr<ScalarType> scalar_type_from_pt2(int64_t code);

// The last frame of a stack_trace metadata string outside PyTorch's own package (the user's
// model line rather than torch/nn/modules/conv.py), else the last frame:
// "File \"model.py\", line N, in fn: code".
std::string last_stack_frame(const std::string& stack_trace);

}  // namespace exporter
}  // namespace ember
