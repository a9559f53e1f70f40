// Small readers of the exporter's graph shared by the XNNPACK partitioner's files (internal to
// delegates/xnnpack/exporter): operator keys, tensor arguments, constants.
#pragma once

#include <string>

#include "exporter/ir/graph.h"

namespace ember {
namespace xnnpack {

// "aten::conv2d.default": the operator and overload of `n`.
inline std::string key(const exporter::Node& n) { return n.op + "." + n.overload; }

// Argument i of `n` when it is a tensor, else null.
inline const exporter::Value* tensor_arg(const exporter::Graph& g, const exporter::Node& n, size_t i) {
  if (i >= n.args.size() || n.args[i].kind != exporter::Arg::Kind::Tensor || n.args[i].ref < 0) return nullptr;
  return &g.values[n.args[i].ref];
}

// A graph constant (weights, biases, scales).
inline bool is_const(const exporter::Value* v) {
  return v != nullptr && v->role == exporter::ValueRole::Constant && v->constant >= 0;
}

// The float32 contents of constant `v` (is_const, dtype Float32: checked by the caller).
inline const float* float_data(const exporter::Graph& g, const exporter::Value* v) {
  return reinterpret_cast<const float*>(g.constants[v->constant].data.data());
}

}  // namespace xnnpack
}  // namespace ember
