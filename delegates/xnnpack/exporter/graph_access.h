// Small readers of the exporter's graph shared by the XNNPACK partitioner's files (internal to
// delegates/xnnpack/exporter): operator keys, tensor arguments, constants, scalar arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exporter/ir/graph.h"

namespace ember {
namespace xnnpack {

// The exporter's IR types, by their short names in these files.
using exporter::Arg;
using exporter::Graph;
using exporter::Node;
using exporter::Value;
using exporter::ValueRole;
using exporter::ValueType;

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

inline bool f32_tensor(const exporter::Value& v) {
  return v.type == exporter::ValueType::Tensor && v.dtype == ScalarType::Float32;
}
inline bool f32_static(const exporter::Value& v) { return f32_tensor(v) && !v.is_dynamic(); }

// Argument i as `count` ints (an int list, or one int repeated); `dflt` when absent.
inline std::vector<int64_t> ints(const exporter::Node& n, size_t i, size_t count, int64_t dflt) {
  using exporter::Arg;
  std::vector<int64_t> v;
  if (i < n.args.size() && (n.args[i].kind == Arg::Kind::Ints || n.args[i].kind == Arg::Kind::SymInts)) v = n.args[i].ints;
  if (i < n.args.size() && n.args[i].kind == Arg::Kind::Int) v = {n.args[i].i};
  if (v.empty()) v.assign(count, dflt);
  if (v.size() == 1) v.assign(count, v[0]);
  return v;
}
inline bool has_scalar(const exporter::Node& n, size_t i) {
  return i < n.args.size() && (n.args[i].kind == exporter::Arg::Kind::Int || n.args[i].kind == exporter::Arg::Kind::Double);
}
inline double scalar(const exporter::Node& n, size_t i, double dflt) {
  if (!has_scalar(n, i)) return dflt;
  return n.args[i].kind == exporter::Arg::Kind::Int ? double(n.args[i].i) : n.args[i].d;
}
inline bool flag(const exporter::Node& n, size_t i) {
  return i < n.args.size() && n.args[i].kind == exporter::Arg::Kind::Bool && n.args[i].b;
}
inline int64_t norm_dim(int64_t d, size_t rank) { return d < 0 ? d + int64_t(rank) : d; }

// A 4D tensor whose NCHW and NHWC orders hold the same bytes (C == 1 or H * W == 1), or not 4D.
inline bool trivial4d(const exporter::Value& v) {
  return v.sizes.size() != 4 || v.sizes[1] == 1 || v.sizes[2] * v.sizes[3] == 1;
}
// v's dims in XNNPACK's NHWC order (4D), else as they are.
inline std::vector<size_t> xdims(const exporter::Value& v) {
  if (v.sizes.size() == 4) return {size_t(v.sizes[0]), size_t(v.sizes[2]), size_t(v.sizes[3]), size_t(v.sizes[1])};
  return std::vector<size_t>(v.sizes.begin(), v.sizes.end());
}

}  // namespace xnnpack
}  // namespace ember
