// Internal to the decomposition pass (passes/decompose*.cc): the Builder that creates the
// replacement nodes of one composite node, argument accessors, and the helpers several
// decompositions share. Not a public API.
#pragma once

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "exporter/ir/graph.h"
#include "exporter/ops/op_schemas.h"

namespace ember {
namespace exporter {
namespace decompose_detail {

using Sizes = std::vector<int64_t>;

constexpr int64_t kReductionNone = 0, kReductionMean = 1, kReductionSum = 2;

// Builds the replacement nodes of one composite node.
class Builder {
 public:
  Builder(Graph& g, const Node& n) : g_(g), n_(n) {}

  bool failed() const { return failed_; }
  void fail() { failed_ = true; }
  std::vector<Node>& nodes() { return nodes_; }

  const Value& v(int id) const { return g_.values[id]; }
  ScalarType dtype(int id) const { return g_.values[id].dtype; }
  const Sizes& sizes(int id) const { return g_.values[id].sizes; }

  // A new node `op.overload` with `args` for the leading schema arguments (the rest take
  // their defaults) and one tensor output per entry of `outs` (dtype, sizes).
  std::vector<int> call(const char* op, const char* overload, std::vector<Arg> args,
                        const std::vector<std::pair<ScalarType, Sizes>>& outs) {
    Node m;
    m.op = std::string("aten::") + op;
    m.overload = overload;
    m.schema = find_op_schema(m.op, m.overload);
    m.source = n_.source;
    m.name = n_.name;
    if (m.schema == nullptr || args.size() > m.schema->args.size()) {
      failed_ = true;
      return std::vector<int>(outs.size(), 0);
    }
    for (size_t i = 0; i < m.schema->args.size(); ++i) {
      const SchemaArg& sa = m.schema->args[i];
      m.arg_names.push_back(sa.name);
      if (i < args.size()) m.args.push_back(args[i]);
      else if (sa.has_default) m.args.push_back(sa.default_value);
      else if (sa.optional) m.args.push_back(Arg::none());
      else {
        failed_ = true;
        return std::vector<int>(outs.size(), 0);
      }
    }
    std::vector<int> ids;
    for (const auto& [dt, sz] : outs) {
      Value val;
      val.name = "decomposed_" + std::to_string(g_.values.size());
      val.dtype = dt;
      val.sizes = sz;
      val.dynamic_dims.assign(sz.size(), false);
      int id = g_.add_value(val);
      ids.push_back(id);
      m.outputs.push_back(Arg::tensor(id));
    }
    nodes_.push_back(std::move(m));
    return ids;
  }
  int call1(const char* op, const char* overload, std::vector<Arg> args, ScalarType dt, const Sizes& sz) {
    return call(op, overload, std::move(args), {{dt, sz}})[0];
  }

  // A constant int64 vector.
  int int64_constant(const std::vector<int64_t>& data) {
    Constant c;
    c.name = "decomposed_constant_" + std::to_string(g_.constants.size());
    c.dtype = ScalarType::Int64;
    c.sizes = {static_cast<int64_t>(data.size())};
    c.data.resize(data.size() * sizeof(int64_t));
    if (!data.empty()) std::memcpy(c.data.data(), data.data(), c.data.size());
    g_.constants.push_back(c);
    Value val;
    val.name = c.name;
    val.dtype = ScalarType::Int64;
    val.sizes = c.sizes;
    val.dynamic_dims = {false};
    val.role = ValueRole::Constant;
    val.constant = static_cast<int>(g_.constants.size()) - 1;
    return g_.add_value(val);
  }

  std::optional<Sizes> broadcast(const Sizes& a, const Sizes& b) {
    Sizes out(std::max(a.size(), b.size()), 1);
    for (size_t i = 0; i < out.size(); ++i) {
      int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
      int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
      if (x != y && x != 1 && y != 1) return std::nullopt;
      out[i] = x == 1 ? y : x;
    }
    return out;
  }

  // Elementwise helpers on floating tensors of one dtype (result dtype = `a`'s).
  int binary(const char* op, int a, int b, const char* overload = "Tensor") {
    auto s = broadcast(sizes(a), sizes(b));
    if (!s || dtype(a) != dtype(b)) {
      failed_ = true;
      return a;
    }
    return call1(op, overload, {Arg::tensor(a), Arg::tensor(b)}, dtype(a), *s);
  }
  int sub(int a, int b) { return binary("sub", a, b); }
  int add(int a, int b) { return binary("add", a, b); }
  int mul(int a, int b) { return binary("mul", a, b); }
  int unary(const char* op, int a) { return call1(op, "default", {Arg::tensor(a)}, dtype(a), sizes(a)); }
  int scalar_op(const char* op, int a, double s) {
    return call1(op, "Scalar", {Arg::tensor(a), Arg::real(s)}, dtype(a), sizes(a));
  }
  int compare_scalar(const char* op, int a, double s) {
    return call1(op, "Scalar", {Arg::tensor(a), Arg::real(s)}, ScalarType::Bool, sizes(a));
  }
  int clamp_min(int a, double lo) { return call1("clamp_min", "default", {Arg::tensor(a), Arg::real(lo)}, dtype(a), sizes(a)); }
  int where_scalar_other(int cond, int a, double other) {
    auto s = broadcast(sizes(cond), sizes(a));
    if (!s) {
      failed_ = true;
      return a;
    }
    return call1("where", "ScalarOther", {Arg::tensor(cond), Arg::tensor(a), Arg::real(other)}, dtype(a), *s);
  }
  int where(int cond, int a, int b) {
    auto s = broadcast(sizes(cond), sizes(a));
    if (s) s = broadcast(*s, sizes(b));
    if (!s) {
      failed_ = true;
      return a;
    }
    return call1("where", "self", {Arg::tensor(cond), Arg::tensor(a), Arg::tensor(b)}, dtype(a), *s);
  }
  int reduce(int x, int64_t reduction) {
    if (reduction == kReductionNone) return x;
    if (reduction == kReductionMean) return call1("mean", "default", {Arg::tensor(x)}, dtype(x), {});
    if (reduction == kReductionSum) return call1("sum", "default", {Arg::tensor(x)}, dtype(x), {});
    failed_ = true;
    return x;
  }
  int view(int x, const Sizes& s) { return call1("view", "default", {Arg::tensor(x), Arg::int_list(s)}, dtype(x), s); }

 private:
  Graph& g_;
  const Node& n_;
  std::vector<Node> nodes_;
  bool failed_ = false;
};

// Argument accessors on the composite node (schema order).
inline int tensor_arg(const Node& n, size_t i) { return i < n.args.size() && n.args[i].kind == Arg::Kind::Tensor ? n.args[i].ref : -1; }
inline bool is_none(const Node& n, size_t i) { return i >= n.args.size() || n.args[i].kind == Arg::Kind::None; }
inline double number_arg(const Node& n, size_t i, double fallback) {
  if (i >= n.args.size()) return fallback;
  const Arg& a = n.args[i];
  if (a.kind == Arg::Kind::Double) return a.d;
  if (a.kind == Arg::Kind::Int) return static_cast<double>(a.i);
  if (a.kind == Arg::Kind::Bool) return a.b ? 1.0 : 0.0;
  return fallback;
}
inline int64_t int_arg(const Node& n, size_t i, int64_t fallback) {
  return i < n.args.size() && n.args[i].kind == Arg::Kind::Int ? n.args[i].i : fallback;
}
inline std::vector<int64_t> ints_arg(const Node& n, size_t i) {
  return i < n.args.size() && n.args[i].kind == Arg::Kind::Ints ? n.args[i].ints : std::vector<int64_t>();
}

inline int pairwise_distance(Builder& b, int x1, int x2, double p, double eps, bool keepdim) {
  int d = b.scalar_op("add", b.sub(x1, x2), eps);
  Sizes s = b.sizes(d);
  if (s.empty()) return b.call1("linalg_vector_norm", "default", {Arg::tensor(d), Arg::real(p)}, b.dtype(d), {});
  Sizes out = s;
  if (keepdim) out.back() = 1;
  else out.pop_back();
  return b.call1("linalg_vector_norm", "default",
                 {Arg::tensor(d), Arg::real(p), Arg::int_list({static_cast<int64_t>(s.size()) - 1}), Arg::boolean(keepdim)},
                 b.dtype(d), out);
}

inline int64_t product(const Sizes& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// a[M, K] x b[K, N] via mm.
inline int matmul_2d(Builder& b, int x, int y) {
  return b.call1("mm", "default", {Arg::tensor(x), Arg::tensor(y)}, b.dtype(x), {b.sizes(x)[0], b.sizes(y)[1]});
}

inline int permute(Builder& b, int x, const std::vector<int64_t>& perm) {
  Sizes s;
  for (int64_t p : perm) s.push_back(b.sizes(x)[static_cast<size_t>(p)]);
  return b.call1("permute", "default", {Arg::tensor(x), Arg::int_list(perm)}, b.dtype(x), s);
}

// nll_loss over [N, C] log-probabilities and [N] int64 targets; `weight` ([C] class weights,
// -1 for none) scales each sample's loss, and "mean" divides by the summed weights of the
// non-ignored samples (ATen).
inline int nll_loss_2d(Builder& b, int logp, int target, int64_t reduction, int64_t ignore_index, int weight = -1) {
  const Sizes s = b.sizes(logp);  // a copy: adding values below moves the table
  if (s.size() != 2 || b.sizes(target).size() != 1 || b.dtype(target) != ScalarType::Int64) {
    b.fail();
    return logp;
  }
  int64_t n = s[0];
  int valid = b.compare_scalar("ne", target, static_cast<double>(ignore_index));
  int safe = b.call1("where", "ScalarOther", {Arg::tensor(valid), Arg::tensor(target), Arg::integer(0)}, ScalarType::Int64, {n});
  int idx = b.call1("unsqueeze", "default", {Arg::tensor(safe), Arg::integer(1)}, ScalarType::Int64, {n, 1});
  int picked = b.call1("gather", "default", {Arg::tensor(logp), Arg::integer(1), Arg::tensor(idx)}, b.dtype(logp), {n, 1});
  int loss = b.unary("neg", b.call1("squeeze", "dim", {Arg::tensor(picked), Arg::integer(1)}, b.dtype(logp), {n}));
  int w = -1;
  if (weight >= 0) {
    if (b.sizes(weight) != Sizes{s[1]} || b.dtype(weight) != b.dtype(logp)) {
      b.fail();
      return logp;
    }
    w = b.call1("index_select", "default", {Arg::tensor(weight), Arg::integer(0), Arg::tensor(safe)}, b.dtype(logp), {n});
    loss = b.mul(loss, w);
  }
  loss = b.where_scalar_other(valid, loss, 0.0);
  if (reduction != kReductionMean) return b.reduce(loss, reduction);
  int ones = w >= 0 ? w : b.call1("ones_like", "default", {Arg::tensor(loss)}, b.dtype(loss), {n});
  int count = b.reduce(b.where_scalar_other(valid, ones, 0.0), kReductionSum);
  return b.binary("div", b.reduce(loss, kReductionSum), count);
}

// nll_loss over [N, C, d1, ...] log-probabilities and [N, d1, ...] targets: classes moved
// last and flattened to the 2-D case; reduction "none" gets the [N, d1, ...] shape back.
inline int nll_loss_nd(Builder& b, int logp, int target, int64_t reduction, int64_t ignore_index, int weight = -1) {
  const Sizes s = b.sizes(logp);
  if (s.size() <= 2) return nll_loss_2d(b, logp, target, reduction, ignore_index, weight);
  Sizes rest(s.begin() + 2, s.end());
  Sizes target_sizes = {s[0]};
  target_sizes.insert(target_sizes.end(), rest.begin(), rest.end());
  if (b.sizes(target) != target_sizes) {
    b.fail();
    return logp;
  }
  int64_t rows = s[0];
  for (int64_t d : rest) rows *= d;
  std::vector<int64_t> perm = {0};
  for (size_t i = 2; i < s.size(); ++i) perm.push_back(static_cast<int64_t>(i));
  perm.push_back(1);
  int flat = b.view(permute(b, logp, perm), {rows, s[1]});
  int loss = nll_loss_2d(b, flat, b.view(target, {rows}), reduction, ignore_index, weight);
  return reduction == kReductionNone ? b.view(loss, target_sizes) : loss;
}

// ---- helpers of the linear-algebra and loss decompositions below ----

inline int sum_dims(Builder& b, int x, const std::vector<int64_t>& dims, bool keepdim) {
  Sizes s = b.sizes(x), out;
  for (size_t i = 0; i < s.size(); ++i) {
    bool summed = std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) != dims.end();
    if (!summed) out.push_back(s[i]);
    else if (keepdim) out.push_back(1);
  }
  return b.call1("sum", "dim_IntList", {Arg::tensor(x), Arg::int_list(dims), Arg::boolean(keepdim)}, b.dtype(x), out);
}

inline int expand_to(Builder& b, int x, const Sizes s) {
  if (b.sizes(x) == s) return x;
  return b.call1("expand", "default", {Arg::tensor(x), Arg::int_list(s)}, b.dtype(x), s);
}


// Structured decompositions and losses (decompose_algebra.cc).
std::vector<int> einsum(Builder& b, const Node& n);
std::vector<int> chunk_cat(Builder& b, const Node& n);
std::vector<int> multi_margin_loss(Builder& b, const Node& n);
std::vector<int> multilabel_margin_loss(Builder& b, const Node& n);
std::vector<int> linear_cross_entropy(Builder& b, const Node& n, bool reduced);

// Linear-algebra composites as linalg kernel calls (decompose_linalg.cc).
std::vector<int> linalg_norm(Builder& b, const Node& n, bool str_ord);
std::vector<int> linalg_multi_dot(Builder& b, const Node& n);
std::vector<int> linalg_tensorinv(Builder& b, const Node& n);
std::vector<int> linalg_tensorsolve(Builder& b, const Node& n);

}  // namespace decompose_detail
}  // namespace exporter
}  // namespace ember
