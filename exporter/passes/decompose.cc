// Decompositions of composite (training-IR) ops into core ATen ops, applied only where the
// linked kernel library has no kernel for the composite op and has kernels for every op of
// the replacement. Shapes are static here (a node with a dynamic tensor is left alone).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "exporter/ops/op_schemas.h"
#include "exporter/passes/passes.h"

namespace ember {
namespace exporter {
namespace {

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
int tensor_arg(const Node& n, size_t i) { return i < n.args.size() && n.args[i].kind == Arg::Kind::Tensor ? n.args[i].ref : -1; }
bool is_none(const Node& n, size_t i) { return i >= n.args.size() || n.args[i].kind == Arg::Kind::None; }
double number_arg(const Node& n, size_t i, double fallback) {
  if (i >= n.args.size()) return fallback;
  const Arg& a = n.args[i];
  if (a.kind == Arg::Kind::Double) return a.d;
  if (a.kind == Arg::Kind::Int) return static_cast<double>(a.i);
  if (a.kind == Arg::Kind::Bool) return a.b ? 1.0 : 0.0;
  return fallback;
}
int64_t int_arg(const Node& n, size_t i, int64_t fallback) {
  return i < n.args.size() && n.args[i].kind == Arg::Kind::Int ? n.args[i].i : fallback;
}
std::vector<int64_t> ints_arg(const Node& n, size_t i) {
  return i < n.args.size() && n.args[i].kind == Arg::Kind::Ints ? n.args[i].ints : std::vector<int64_t>();
}

int pairwise_distance(Builder& b, int x1, int x2, double p, double eps, bool keepdim) {
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

int64_t product(const Sizes& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// a[M, K] x b[K, N] via mm.
int matmul_2d(Builder& b, int x, int y) {
  return b.call1("mm", "default", {Arg::tensor(x), Arg::tensor(y)}, b.dtype(x), {b.sizes(x)[0], b.sizes(y)[1]});
}

int permute(Builder& b, int x, const std::vector<int64_t>& perm) {
  Sizes s;
  for (int64_t p : perm) s.push_back(b.sizes(x)[static_cast<size_t>(p)]);
  return b.call1("permute", "default", {Arg::tensor(x), Arg::int_list(perm)}, b.dtype(x), s);
}

// nll_loss over [N, C] log-probabilities and [N] int64 targets (no class weights).
int nll_loss_2d(Builder& b, int logp, int target, int64_t reduction, int64_t ignore_index) {
  const Sizes& s = b.sizes(logp);
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
  loss = b.where_scalar_other(valid, loss, 0.0);
  if (reduction != kReductionMean) return b.reduce(loss, reduction);
  int ones = b.call1("ones_like", "default", {Arg::tensor(loss)}, b.dtype(loss), {n});
  int count = b.reduce(b.where_scalar_other(valid, ones, 0.0), kReductionSum);
  return b.binary("div", b.reduce(loss, kReductionSum), count);
}

// ---- helpers of the linear-algebra and loss decompositions below ----

int sum_dims(Builder& b, int x, const std::vector<int64_t>& dims, bool keepdim) {
  Sizes s = b.sizes(x), out;
  for (size_t i = 0; i < s.size(); ++i) {
    bool summed = std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) != dims.end();
    if (!summed) out.push_back(s[i]);
    else if (keepdim) out.push_back(1);
  }
  return b.call1("sum", "dim_IntList", {Arg::tensor(x), Arg::int_list(dims), Arg::boolean(keepdim)}, b.dtype(x), out);
}

int expand_to(Builder& b, int x, const Sizes s) {
  if (b.sizes(x) == s) return x;
  return b.call1("expand", "default", {Arg::tensor(x), Arg::int_list(s)}, b.dtype(x), s);
}

// One einsum operand: a value and one label per dimension (letters; ellipsis dims 1000+k).
struct EinsumTerm {
  int id;
  std::vector<int> labels;
};

// Parses one comma-separated term of an einsum equation for a tensor of `rank` dims whose
// ellipsis covers the last `ellipsis` of `max_ellipsis` broadcast dims.
bool einsum_labels(const std::string& term, int64_t rank, int64_t max_ellipsis, std::vector<int>* labels,
                   int64_t* ellipsis_dims) {
  int64_t letters = 0;
  bool has_ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0) {
      if (has_ellipsis) return false;
      has_ellipsis = true;
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(term[i]))) {
      ++letters;
    } else {
      return false;
    }
  }
  int64_t e = has_ellipsis ? rank - letters : 0;
  if (e < 0 || (!has_ellipsis && letters != rank && rank >= 0)) return false;
  *ellipsis_dims = e;
  if (max_ellipsis < 0) return true;  // counting pass
  labels->clear();
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0) {
      for (int64_t k = 0; k < e; ++k) labels->push_back(static_cast<int>(1000 + max_ellipsis - e + k));
      i += 2;
    } else {
      labels->push_back(term[i]);
    }
  }
  return true;
}

// einsum by pairwise contraction (left to right) with bmm, summing labels as soon as no later
// term or the output needs them. Repeated labels within one term (diagonals) are left alone.
std::vector<int> einsum(Builder& b, const Node& n) {
  if (n.args.size() < 2 || n.args[0].kind != Arg::Kind::String || n.args[1].kind != Arg::Kind::Tensors) return {};
  std::string eq;
  for (char c : n.args[0].s) if (c != ' ') eq.push_back(c);
  const std::vector<int>& ids = n.args[1].refs;
  if (ids.empty()) return {};
  ScalarType dt = b.dtype(ids[0]);
  if (!is_floating(dt)) return {};
  for (int id : ids) if (b.dtype(id) != dt) return {};
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ids.size()) return {};
  int64_t max_e = 0;
  std::vector<EinsumTerm> ops(ids.size());
  for (size_t k = 0; k < ids.size(); ++k) {
    int64_t e = 0;
    if (!einsum_labels(terms[k], static_cast<int64_t>(b.sizes(ids[k]).size()), -1, nullptr, &e)) return {};
    max_e = std::max(max_e, e);
  }
  std::map<int, int64_t> size_of;
  std::map<int, int> count;
  for (size_t k = 0; k < ids.size(); ++k) {
    int64_t e = 0;
    ops[k].id = ids[k];
    if (!einsum_labels(terms[k], static_cast<int64_t>(b.sizes(ids[k]).size()), max_e, &ops[k].labels, &e)) return {};
    for (size_t d = 0; d < ops[k].labels.size(); ++d) {
      int l = ops[k].labels[d];
      if (std::count(ops[k].labels.begin(), ops[k].labels.end(), l) != 1) return {};  // diagonal
      int64_t s = b.sizes(ids[k])[d];
      auto it = size_of.find(l);
      if (it != size_of.end() && it->second != s && it->second != 1 && s != 1) return {};
      size_of[l] = it == size_of.end() || it->second == 1 ? s : it->second;
      ++count[l];
    }
  }
  std::vector<int> out_labels;
  if (arrow != std::string::npos) {
    std::string rhs = eq.substr(arrow + 2);
    for (size_t i = 0; i < rhs.size(); ++i) {
      if (rhs.compare(i, 3, "...") == 0) {
        for (int64_t k = 0; k < max_e; ++k) out_labels.push_back(static_cast<int>(1000 + k));
        i += 2;
      } else if (std::isalpha(static_cast<unsigned char>(rhs[i])) && size_of.count(rhs[i]) &&
                 std::count(out_labels.begin(), out_labels.end(), rhs[i]) == 0) {
        out_labels.push_back(rhs[i]);
      } else {
        return {};
      }
    }
  } else {
    for (int64_t k = 0; k < max_e; ++k) out_labels.push_back(static_cast<int>(1000 + k));
    for (const auto& [l, c] : count) if (l < 1000 && c == 1) out_labels.push_back(l);
  }
  auto needed_after = [&](size_t k, int l) {
    if (std::find(out_labels.begin(), out_labels.end(), l) != out_labels.end()) return true;
    for (size_t j = k + 1; j < ops.size(); ++j) {
      if (std::find(ops[j].labels.begin(), ops[j].labels.end(), l) != ops[j].labels.end()) return true;
    }
    return false;
  };
  auto has = [](const EinsumTerm& t, int l) { return std::find(t.labels.begin(), t.labels.end(), l) != t.labels.end(); };
  // Sums out the labels of `t` that neither `other` (when given), a term after `k` nor the output needs.
  auto reduce_private = [&](EinsumTerm& t, const EinsumTerm* other, size_t k) {
    std::vector<int64_t> dims;
    std::vector<int> kept;
    for (size_t d = 0; d < t.labels.size(); ++d) {
      int l = t.labels[d];
      if ((other == nullptr || !has(*other, l)) && !needed_after(k, l)) dims.push_back(static_cast<int64_t>(d));
      else kept.push_back(l);
    }
    if (dims.empty()) return;
    t.id = sum_dims(b, t.id, dims, false);
    t.labels = kept;
  };
  auto arrange = [&](EinsumTerm& t, const std::vector<int>& order) {
    std::vector<int64_t> perm;
    Sizes s;
    for (int l : order) {
      perm.push_back(std::find(t.labels.begin(), t.labels.end(), l) - t.labels.begin());
      s.push_back(size_of[l]);
    }
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
    if (!identity) t.id = permute(b, t.id, perm);
    t.labels = order;
    t.id = expand_to(b, t.id, s);  // size-1 dims broadcast against the other term
  };
  EinsumTerm cur = ops[0];
  reduce_private(cur, ops.size() > 1 ? &ops[1] : nullptr, 0);
  for (size_t k = 1; k < ops.size(); ++k) {
    EinsumTerm rhs = ops[k];
    reduce_private(rhs, &cur, k);
    reduce_private(cur, &rhs, k);
    std::vector<int> batch, left, right, contracted;
    for (int l : cur.labels) {
      if (!has(rhs, l)) left.push_back(l);
      else if (needed_after(k, l)) batch.push_back(l);
      else contracted.push_back(l);
    }
    for (int l : rhs.labels) if (!has(cur, l)) right.push_back(l);
    auto prod = [&](const std::vector<int>& ls) {
      int64_t p = 1;
      for (int l : ls) p *= size_of[l];
      return p;
    };
    std::vector<int> lo = batch, ro = batch;
    lo.insert(lo.end(), left.begin(), left.end());
    lo.insert(lo.end(), contracted.begin(), contracted.end());
    ro.insert(ro.end(), contracted.begin(), contracted.end());
    ro.insert(ro.end(), right.begin(), right.end());
    arrange(cur, lo);
    arrange(rhs, ro);
    int64_t nb = prod(batch), m = prod(left), kk = prod(contracted), nn = prod(right);
    int x = b.view(cur.id, {nb, m, kk}), y = b.view(rhs.id, {nb, kk, nn});
    int z = b.call1("bmm", "default", {Arg::tensor(x), Arg::tensor(y)}, dt, {nb, m, nn});
    std::vector<int> labels = batch;
    labels.insert(labels.end(), left.begin(), left.end());
    labels.insert(labels.end(), right.begin(), right.end());
    Sizes s;
    for (int l : labels) s.push_back(size_of[l]);
    cur.id = b.view(z, s);
    cur.labels = labels;
  }
  reduce_private(cur, nullptr, ops.size());
  for (int l : cur.labels) if (!has(EinsumTerm{0, out_labels}, l)) return {};
  arrange(cur, out_labels);
  if (cur.id == ids[0]) cur.id = b.call1("clone", "default", {Arg::tensor(cur.id)}, dt, b.sizes(cur.id));
  return {cur.id};
}

// The last dimension of each tensor split into `chunks` zero-padded pieces (ATen _chunk_cat).
std::vector<int> chunk_cat(Builder& b, const Node& n) {
  if (n.args.size() < 3 || n.args[0].kind != Arg::Kind::Tensors || n.args[0].refs.empty()) return {};
  const std::vector<int>& ids = n.args[0].refs;
  int64_t chunks = int_arg(n, 2, 0), rank = static_cast<int64_t>(b.sizes(ids[0]).size());
  int64_t dim = int_arg(n, 1, 0);
  if (dim < 0) dim += rank;
  if (chunks < 1 || dim < 0 || dim >= rank) return {};
  std::vector<int> pieces;
  for (int id : ids) {
    // Ranks may differ (ATen: then dim must be non-negative and below every rank).
    const Sizes s = b.sizes(id);
    const int64_t r = static_cast<int64_t>(s.size());
    if (r <= dim || (r != rank && int_arg(n, 1, 0) < 0) || b.dtype(id) != b.dtype(ids[0])) return {};
    for (int64_t d = 0; d < dim; ++d) if (s[d] != b.sizes(ids[0])[d]) return {};
    int64_t per = (s[dim] + chunks - 1) / chunks;
    int x = id;
    if (per * chunks != s[dim]) {
      std::vector<int64_t> pad(2 * (r - dim), 0);  // last dim first
      pad[2 * (r - 1 - dim) + 1] = per * chunks - s[dim];
      Sizes padded = s;
      padded[dim] = per * chunks;
      x = b.call1("constant_pad_nd", "default", {Arg::tensor(x), Arg::int_list(pad), Arg::real(0.0)}, b.dtype(x), padded);
    }
    Sizes v(s.begin(), s.begin() + dim);
    v.push_back(chunks);
    v.push_back(per * product(s, dim + 1, s.size()));
    pieces.push_back(b.view(x, v));
  }
  Sizes out = b.sizes(pieces[0]);
  out.back() = 0;
  for (int p : pieces) out.back() += b.sizes(p).back();
  return {b.call1("cat", "default", {Arg::tensor_list(pieces), Arg::integer(dim + 1)}, b.dtype(ids[0]), out)};
}

// multi_margin_loss: per row sum_{j != y} max(0, margin - x[y] + x[j])^p * w[y] / C.
std::vector<int> multi_margin_loss(Builder& b, const Node& n) {
  int x = tensor_arg(n, 0), t = tensor_arg(n, 1);
  const Sizes xs = b.sizes(x);
  double p = number_arg(n, 2, 1.0), margin = number_arg(n, 3, 1.0);
  int64_t reduction = int_arg(n, 5, kReductionMean);
  if (xs.size() > 2 || (p != 1.0 && p != 2.0) || b.dtype(t) != ScalarType::Int64 || !is_floating(b.dtype(x))) return {};
  int64_t rows = xs.size() == 2 ? xs[0] : 1, c = xs.empty() ? 1 : xs.back();
  if (product(b.sizes(t), 0, b.sizes(t).size()) != rows) return {};
  int x2 = b.view(x, {rows, c});
  int t2 = b.view(t, {rows, 1});
  int xy = b.call1("gather", "default", {Arg::tensor(x2), Arg::integer(1), Arg::tensor(t2)}, b.dtype(x), {rows, 1});
  int z = b.clamp_min(b.scalar_op("add", b.sub(x2, xy), margin), 0.0);
  if (p == 2.0) z = b.mul(z, z);
  if (!is_none(n, 4)) {
    int w = tensor_arg(n, 4);
    if (w < 0 || b.dtype(w) != b.dtype(x) || b.sizes(w).size() != 1) return {};
    int wy = b.call1("gather", "default", {Arg::tensor(w), Arg::integer(0), Arg::tensor(b.view(t, {rows}))}, b.dtype(w), {rows});
    z = b.mul(z, b.view(wy, {rows, 1}));
  }
  std::vector<int64_t> classes(static_cast<size_t>(c));
  for (int64_t j = 0; j < c; ++j) classes[j] = j;
  int not_target = b.call1("ne", "Tensor", {Arg::tensor(t2), Arg::tensor(b.view(b.int64_constant(classes), {1, c}))},
                           ScalarType::Bool, {rows, c});
  int per_row = b.scalar_op("div", sum_dims(b, b.where_scalar_other(not_target, z, 0.0), {1}, false), static_cast<double>(c));
  if (reduction == kReductionNone) return {b.view(per_row, b.sizes(t).empty() ? Sizes{} : Sizes{rows})};
  return {b.reduce(per_row, reduction)};
}

// multilabel_margin_loss: targets are the labels before the first negative entry of each row;
// loss = sum over target slots j and non-target classes k of max(0, 1 - x[t_j] + x[k]) / C.
std::vector<int> multilabel_margin_loss(Builder& b, const Node& n) {
  int x = tensor_arg(n, 0), t = tensor_arg(n, 1);
  const Sizes xs = b.sizes(x);
  int64_t reduction = int_arg(n, 2, kReductionMean);
  if (xs.size() > 2 || b.dtype(t) != ScalarType::Int64 || b.sizes(t) != xs || !is_floating(b.dtype(x))) return {};
  int64_t rows = xs.size() == 2 ? xs[0] : 1, c = xs.empty() ? 1 : xs.back();
  ScalarType dt = b.dtype(x);
  int x2 = b.view(x, {rows, c}), t2 = b.view(t, {rows, c});
  int ended = b.call1("cumsum", "default", {Arg::tensor(b.compare_scalar("lt", t2, 0.0)), Arg::integer(1)},
                      ScalarType::Int64, {rows, c});
  int valid = b.compare_scalar("eq", ended, 0.0);  // slot j holds a target label
  int safe = b.call1("where", "ScalarOther", {Arg::tensor(valid), Arg::tensor(t2), Arg::integer(0)}, ScalarType::Int64, {rows, c});
  std::vector<int64_t> classes(static_cast<size_t>(c));
  for (int64_t j = 0; j < c; ++j) classes[j] = j;
  int hit = b.call1("eq", "Tensor", {Arg::tensor(b.view(safe, {rows, c, 1})), Arg::tensor(b.view(b.int64_constant(classes), {1, 1, c}))},
                    ScalarType::Bool, {rows, c, c});
  hit = b.call1("logical_and", "default", {Arg::tensor(hit), Arg::tensor(b.view(valid, {rows, c, 1}))}, ScalarType::Bool, {rows, c, c});
  int is_target = b.call1("any", "dim", {Arg::tensor(hit), Arg::integer(1)}, ScalarType::Bool, {rows, c});
  int xt = b.call1("gather", "default", {Arg::tensor(x2), Arg::integer(1), Arg::tensor(safe)}, dt, {rows, c});
  int z = b.call1("rsub", "Scalar", {Arg::tensor(b.view(xt, {rows, c, 1})), Arg::real(1.0)}, dt, {rows, c, 1});
  z = b.clamp_min(b.add(z, b.view(x2, {rows, 1, c})), 0.0);
  int pair = b.call1("logical_and", "default",
                     {Arg::tensor(b.view(valid, {rows, c, 1})),
                      Arg::tensor(b.view(b.call1("logical_not", "default", {Arg::tensor(is_target)}, ScalarType::Bool, {rows, c}), {rows, 1, c}))},
                     ScalarType::Bool, {rows, c, c});
  int per_row = b.scalar_op("div", sum_dims(b, b.where_scalar_other(pair, z, 0.0), {1, 2}, false), static_cast<double>(c));
  if (reduction == kReductionNone) return {b.view(per_row, xs.size() == 2 ? Sizes{rows} : Sizes{})};
  return {b.reduce(per_row, reduction)};
}

// Returns the value ids that replace the node's tensor outputs (in order), or empty when the
// op has no decomposition here.
using Decomposition = std::function<std::vector<int>(Builder&, const Node&)>;

const std::map<std::string, Decomposition>& decompositions() {
  static const std::map<std::string, Decomposition> table = {
      {"aten::mse_loss.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int d = b.sub(tensor_arg(n, 0), tensor_arg(n, 1));
         return {b.reduce(b.mul(d, d), int_arg(n, 2, kReductionMean))};
       }},
      {"aten::l1_loss.default", [](Builder& b, const Node& n) -> std::vector<int> {
         return {b.reduce(b.unary("abs", b.sub(tensor_arg(n, 0), tensor_arg(n, 1))), int_arg(n, 2, kReductionMean))};
       }},
      {"aten::smooth_l1_loss.default", [](Builder& b, const Node& n) -> std::vector<int> {
         double beta = number_arg(n, 3, 1.0);
         int d = b.unary("abs", b.sub(tensor_arg(n, 0), tensor_arg(n, 1)));
         if (beta == 0) return {b.reduce(d, int_arg(n, 2, kReductionMean))};
         int small = b.compare_scalar("lt", d, beta);
         int quad = b.scalar_op("mul", b.mul(d, d), 0.5 / beta);
         int lin = b.scalar_op("sub", d, 0.5 * beta);
         return {b.reduce(b.where(small, quad, lin), int_arg(n, 2, kReductionMean))};
       }},
      {"aten::huber_loss.default", [](Builder& b, const Node& n) -> std::vector<int> {
         double delta = number_arg(n, 3, 1.0);
         int d = b.unary("abs", b.sub(tensor_arg(n, 0), tensor_arg(n, 1)));
         int small = b.compare_scalar("lt", d, delta);
         int quad = b.scalar_op("mul", b.mul(d, d), 0.5);
         int lin = b.scalar_op("mul", b.scalar_op("sub", d, 0.5 * delta), delta);
         return {b.reduce(b.where(small, quad, lin), int_arg(n, 2, kReductionMean))};
       }},
      {"aten::soft_margin_loss.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int z = b.mul(b.unary("neg", tensor_arg(n, 1)), tensor_arg(n, 0));
         return {b.reduce(b.unary("log1p", b.unary("exp", z)), int_arg(n, 2, kReductionMean))};
       }},
      {"aten::kl_div.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int x = tensor_arg(n, 0), t = tensor_arg(n, 1);
         bool log_target = number_arg(n, 3, 0) != 0;
         int loss = log_target ? b.mul(b.unary("exp", t), b.sub(t, x)) : b.sub(b.binary("xlogy", t, t), b.mul(t, x));
         return {b.reduce(loss, int_arg(n, 2, kReductionMean))};
       }},
      {"aten::margin_ranking_loss.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int v = b.mul(b.unary("neg", tensor_arg(n, 2)), b.sub(tensor_arg(n, 0), tensor_arg(n, 1)));
         v = b.clamp_min(b.scalar_op("add", v, number_arg(n, 3, 0.0)), 0.0);
         return {b.reduce(v, int_arg(n, 4, kReductionMean))};
       }},
      {"aten::binary_cross_entropy.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int x = tensor_arg(n, 0), t = tensor_arg(n, 1);
         int lx = b.clamp_min(b.unary("log", x), -100.0);
         int l1x = b.clamp_min(b.unary("log1p", b.unary("neg", x)), -100.0);
         int one_minus_t = b.call1("rsub", "Scalar", {Arg::tensor(t), Arg::real(1.0)}, b.dtype(t), b.sizes(t));
         int loss = b.unary("neg", b.add(b.mul(t, lx), b.mul(one_minus_t, l1x)));
         if (!is_none(n, 2)) loss = b.mul(loss, tensor_arg(n, 2));
         return {b.reduce(loss, int_arg(n, 3, kReductionMean))};
       }},
      {"aten::binary_cross_entropy_with_logits.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int x = tensor_arg(n, 0), t = tensor_arg(n, 1);
         int one_minus_t = b.call1("rsub", "Scalar", {Arg::tensor(t), Arg::real(1.0)}, b.dtype(t), b.sizes(t));
         // log(1 + exp(-x)) computed stably: max(-x, 0) + log1p(exp(-|x|)).
         int softplus_neg = b.add(b.clamp_min(b.unary("neg", x), 0.0),
                                  b.unary("log1p", b.unary("exp", b.unary("neg", b.unary("abs", x)))));
         int loss;
         if (!is_none(n, 3)) {
           int lw = b.scalar_op("add", b.mul(b.scalar_op("sub", tensor_arg(n, 3), 1.0), t), 1.0);
           loss = b.add(b.mul(one_minus_t, x), b.mul(lw, softplus_neg));
         } else {
           loss = b.add(b.mul(one_minus_t, x), softplus_neg);
         }
         if (!is_none(n, 2)) loss = b.mul(loss, tensor_arg(n, 2));
         return {b.reduce(loss, int_arg(n, 4, kReductionMean))};
       }},
      {"aten::hinge_embedding_loss.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int x = tensor_arg(n, 0), t = tensor_arg(n, 1);
         double margin = number_arg(n, 2, 1.0);
         int clamped = b.clamp_min(b.call1("rsub", "Scalar", {Arg::tensor(x), Arg::real(margin)}, b.dtype(x), b.sizes(x)), 0.0);
         int out_margin = b.where_scalar_other(b.compare_scalar("ne", t, 1.0), clamped, 0.0);
         int out_self = b.where_scalar_other(b.compare_scalar("ne", t, -1.0), x, 0.0);
         return {b.reduce(b.add(out_margin, out_self), int_arg(n, 3, kReductionMean))};
       }},
      {"aten::poisson_nll_loss.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int x = tensor_arg(n, 0), t = tensor_arg(n, 1);
         bool log_input = number_arg(n, 2, 1) != 0, full = number_arg(n, 3, 0) != 0;
         double eps = number_arg(n, 4, 1e-8);
         int loss = log_input ? b.sub(b.unary("exp", x), b.mul(t, x))
                              : b.sub(x, b.mul(t, b.unary("log", b.scalar_op("add", x, eps))));
         if (full) {  // Stirling term t*log(t) - t + 0.5*log(2*pi*t), where t > 1
           int st = b.sub(b.mul(t, b.unary("log", t)), t);
           st = b.add(st, b.scalar_op("mul", b.unary("log", b.scalar_op("mul", t, 2 * M_PI)), 0.5));
           loss = b.add(loss, b.where_scalar_other(b.compare_scalar("gt", t, 1.0), st, 0.0));
         }
         return {b.reduce(loss, int_arg(n, 5, kReductionMean))};
       }},
      {"aten::pairwise_distance.default", [](Builder& b, const Node& n) -> std::vector<int> {
         return {pairwise_distance(b, tensor_arg(n, 0), tensor_arg(n, 1), number_arg(n, 2, 2.0), number_arg(n, 3, 1e-6),
                                   number_arg(n, 4, 0) != 0)};
       }},
      {"aten::triplet_margin_loss.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int a = tensor_arg(n, 0), p = tensor_arg(n, 1), ng = tensor_arg(n, 2);
         double margin = number_arg(n, 3, 1.0), pn = number_arg(n, 4, 2.0), eps = number_arg(n, 5, 1e-6);
         int dpos = pairwise_distance(b, a, p, pn, eps, false);
         int dneg = pairwise_distance(b, a, ng, pn, eps, false);
         if (number_arg(n, 6, 0) != 0) dneg = b.binary("minimum", dneg, pairwise_distance(b, p, ng, pn, eps, false), "default");
         int loss = b.clamp_min(b.scalar_op("add", b.sub(dpos, dneg), margin), 0.0);
         return {b.reduce(loss, int_arg(n, 7, kReductionMean))};
       }},
      {"aten::inner.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int x = tensor_arg(n, 0), y = tensor_arg(n, 1);
         Sizes sx = b.sizes(x), sy = b.sizes(y);
         if (sx.empty() || sy.empty()) return {b.mul(x, y)};
         if (sx.back() != sy.back()) return {};
         int64_t k = sx.back(), ma = product(sx, 0, sx.size() - 1), mb = product(sy, 0, sy.size() - 1);
         int prod = matmul_2d(b, b.view(x, {ma, k}), permute(b, b.view(y, {mb, k}), {1, 0}));
         Sizes out(sx.begin(), sx.end() - 1);
         out.insert(out.end(), sy.begin(), sy.end() - 1);
         return {b.view(prod, out)};
       }},
      {"aten::tensordot.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int x = tensor_arg(n, 0), y = tensor_arg(n, 1);
         Sizes sx = b.sizes(x), sy = b.sizes(y);
         std::vector<int64_t> dx = ints_arg(n, 2), dy = ints_arg(n, 3);
         if (dx.size() != dy.size()) return {};
         std::vector<bool> cx(sx.size(), false), cy(sy.size(), false);
         for (size_t i = 0; i < dx.size(); ++i) {
           if (dx[i] < 0) dx[i] += static_cast<int64_t>(sx.size());
           if (dy[i] < 0) dy[i] += static_cast<int64_t>(sy.size());
           if (dx[i] < 0 || dy[i] < 0 || dx[i] >= static_cast<int64_t>(sx.size()) || dy[i] >= static_cast<int64_t>(sy.size()) ||
               sx[dx[i]] != sy[dy[i]]) {
             return {};
           }
           cx[dx[i]] = cy[dy[i]] = true;
         }
         std::vector<int64_t> px, py;
         Sizes out;
         int64_t fa = 1, fb = 1, k = 1;
         for (size_t i = 0; i < sx.size(); ++i) if (!cx[i]) { px.push_back(i); out.push_back(sx[i]); fa *= sx[i]; }
         for (int64_t d : dx) { px.push_back(d); k *= sx[d]; }
         for (int64_t d : dy) py.push_back(d);
         for (size_t i = 0; i < sy.size(); ++i) if (!cy[i]) { py.push_back(i); out.push_back(sy[i]); fb *= sy[i]; }
         int prod = matmul_2d(b, b.view(permute(b, x, px), {fa, k}), b.view(permute(b, y, py), {k, fb}));
         return {b.view(prod, out)};
       }},
      {"aten::kron.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int x = tensor_arg(n, 0), y = tensor_arg(n, 1);
         Sizes sx = b.sizes(x), sy = b.sizes(y);
         size_t r = std::max(sx.size(), sy.size());
         sx.insert(sx.begin(), r - sx.size(), 1);
         sy.insert(sy.begin(), r - sy.size(), 1);
         Sizes ix, iy, out;
         for (size_t i = 0; i < r; ++i) {
           ix.push_back(sx[i]);
           ix.push_back(1);
           iy.push_back(1);
           iy.push_back(sy[i]);
           out.push_back(sx[i] * sy[i]);
         }
         return {b.view(b.mul(b.view(x, ix), b.view(y, iy)), out)};
       }},
      {"aten::cosine_similarity.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int x = tensor_arg(n, 0), y = tensor_arg(n, 1);
         if (b.sizes(x) != b.sizes(y) || b.sizes(x).empty()) return {};
         int64_t rank = static_cast<int64_t>(b.sizes(x).size());
         int64_t dim = int_arg(n, 2, 1);
         if (dim < 0) dim += rank;
         double eps = number_arg(n, 3, 1e-8);
         auto normalized = [&](int v) {
           Sizes kept = b.sizes(v);
           kept[dim] = 1;
           int norm = b.call1("linalg_vector_norm", "default",
                              {Arg::tensor(v), Arg::real(2.0), Arg::int_list({dim}), Arg::boolean(true)}, b.dtype(v), kept);
           return b.binary("div", v, b.clamp_min(norm, eps));
         };
         int prod = b.mul(normalized(x), normalized(y));
         Sizes out = b.sizes(x);
         out.erase(out.begin() + dim);
         return {b.call1("sum", "dim_IntList", {Arg::tensor(prod), Arg::int_list({dim})}, b.dtype(x), out)};
       }},
      {"aten::nll_loss_nd.default", [](Builder& b, const Node& n) -> std::vector<int> {
         if (!is_none(n, 2)) return {};  // class weights
         return {nll_loss_2d(b, tensor_arg(n, 0), tensor_arg(n, 1), int_arg(n, 3, kReductionMean), int_arg(n, 4, -100))};
       }},
      {"aten::cross_entropy_loss.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int x = tensor_arg(n, 0);
         if (!is_none(n, 2) || number_arg(n, 5, 0.0) != 0.0 || b.sizes(x).size() != 2) return {};
         int logp = b.call1("log_softmax", "int", {Arg::tensor(x), Arg::integer(1)}, b.dtype(x), b.sizes(x));
         return {nll_loss_2d(b, logp, tensor_arg(n, 1), int_arg(n, 3, kReductionMean), int_arg(n, 4, -100))};
       }},
      {"aten::outer.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int a = tensor_arg(n, 0), c = tensor_arg(n, 1);
         if (b.sizes(a).size() != 1) return {};
         return {b.mul(b.view(a, {b.sizes(a)[0], 1}), c)};
       }},
      {"aten::vdot.default", [](Builder& b, const Node& n) -> std::vector<int> {
         return {b.reduce(b.mul(tensor_arg(n, 0), tensor_arg(n, 1)), kReductionSum)};
       }},
      {"aten::addr.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int self = tensor_arg(n, 0), v1 = tensor_arg(n, 1), v2 = tensor_arg(n, 2);
         if (b.sizes(v1).size() != 1 || !is_floating(b.dtype(self))) return {};
         double beta = number_arg(n, 3, 1.0), alpha = number_arg(n, 4, 1.0);
         int o = b.mul(b.view(v1, {b.sizes(v1)[0], 1}), v2);
         if (alpha != 1.0) o = b.scalar_op("mul", o, alpha);
         if (beta == 0.0) return {o};
         int s = beta == 1.0 ? self : b.scalar_op("mul", self, beta);
         return {b.add(s, o)};
       }},
      {"aten::sum_to_size.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int x = tensor_arg(n, 0);
         Sizes target = ints_arg(n, 1), in = b.sizes(x);
         if (target.size() > in.size()) return {};
         size_t lead = in.size() - target.size();
         std::vector<int64_t> dims;
         for (size_t i = 0; i < in.size(); ++i) {
           if (i < lead || (target[i - lead] == 1 && in[i] != 1)) dims.push_back(static_cast<int64_t>(i));
         }
         if (dims.empty()) return {b.call1("clone", "default", {Arg::tensor(x)}, b.dtype(x), in)};
         Sizes kept = in;
         for (int64_t d : dims) kept[d] = 1;
         int s = b.call1("sum", "dim_IntList", {Arg::tensor(x), Arg::int_list(dims), Arg::boolean(true)}, b.dtype(x), kept);
         return {b.view(s, target)};
       }},
      {"aten::rot90.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int x = tensor_arg(n, 0);
         std::vector<int64_t> dims = ints_arg(n, 2);
         int64_t rank = static_cast<int64_t>(b.sizes(x).size());
         if (dims.size() != 2 || rank < 2) return {};
         int64_t d0 = dims[0] < 0 ? dims[0] + rank : dims[0], d1 = dims[1] < 0 ? dims[1] + rank : dims[1];
         int64_t k = ((int_arg(n, 1, 1) % 4) + 4) % 4;
         auto flip = [&](int v, std::vector<int64_t> ds) {
           return b.call1("flip", "default", {Arg::tensor(v), Arg::int_list(ds)}, b.dtype(v), b.sizes(v));
         };
         auto transpose = [&](int v) {
           Sizes s = b.sizes(v);
           std::swap(s[d0], s[d1]);
           return b.call1("transpose", "int", {Arg::tensor(v), Arg::integer(d0), Arg::integer(d1)}, b.dtype(v), s);
         };
         if (k == 0) return {b.call1("clone", "default", {Arg::tensor(x)}, b.dtype(x), b.sizes(x))};
         if (k == 1) return {transpose(flip(x, {d1}))};
         if (k == 2) return {flip(x, {d0, d1})};
         return {transpose(flip(x, {d0}))};
       }},
      {"aten::adaptive_avg_pool1d.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int x = tensor_arg(n, 0);
         Sizes s = b.sizes(x), out = ints_arg(n, 1);
         if (s.empty() || out.size() != 1) return {};
         Sizes u = s;
         u.insert(u.end() - 1, 1);
         int xu = b.call1("unsqueeze", "default", {Arg::tensor(x), Arg::integer(-2)}, b.dtype(x), u);
         Sizes p = u;
         p.back() = out[0];
         int pooled = b.call1("_adaptive_avg_pool2d", "default", {Arg::tensor(xu), Arg::int_list({1, out[0]})}, b.dtype(x), p);
         Sizes r = s;
         r.back() = out[0];
         return {b.call1("squeeze", "dim", {Arg::tensor(pooled), Arg::integer(-2)}, b.dtype(x), r)};
       }},
      {"aten::adaptive_max_pool1d.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int x = tensor_arg(n, 0);
         Sizes s = b.sizes(x), out = ints_arg(n, 1);
         if (s.empty() || out.size() != 1) return {};
         Sizes u = s;
         u.insert(u.end() - 1, 1);
         int xu = b.call1("unsqueeze", "default", {Arg::tensor(x), Arg::integer(-2)}, b.dtype(x), u);
         Sizes p = u;
         p.back() = out[0];
         std::vector<int> pooled = b.call("adaptive_max_pool2d", "default", {Arg::tensor(xu), Arg::int_list({1, out[0]})},
                                          {{b.dtype(x), p}, {ScalarType::Int64, p}});
         Sizes r = s;
         r.back() = out[0];
         return {b.call1("squeeze", "dim", {Arg::tensor(pooled[0]), Arg::integer(-2)}, b.dtype(x), r),
                 b.call1("squeeze", "dim", {Arg::tensor(pooled[1]), Arg::integer(-2)}, ScalarType::Int64, r)};
       }},
      {"aten::conv_transpose1d.default", [](Builder& b, const Node& n) -> std::vector<int> {
         // (input, weight, bias, stride, padding, output_padding, groups, dilation)
         if (n.args.size() < 8) return {};
         int out = n.outputs[0].ref;
         return {b.call1("convolution", "default",
                         {n.args[0], n.args[1], n.args[2], n.args[3], n.args[4], n.args[7], Arg::boolean(true), n.args[5],
                          n.args[6]},
                         b.dtype(out), b.sizes(out))};
       }},
      {"aten::native_dropout_backward.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int grad = tensor_arg(n, 0), mask = tensor_arg(n, 1);
         return {b.scalar_op("mul", b.where_scalar_other(mask, grad, 0.0), number_arg(n, 2, 1.0))};
       }},
      {"aten::_softmax_backward_data.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int grad = tensor_arg(n, 0), out = tensor_arg(n, 1);
         int64_t rank = static_cast<int64_t>(b.sizes(out).size());
         int64_t dim = int_arg(n, 2, -1);
         if (rank == 0) return {};
         if (dim < 0) dim += rank;
         int go = b.mul(grad, out);
         Sizes kept = b.sizes(go);
         kept[dim] = 1;
         int s = b.call1("sum", "dim_IntList", {Arg::tensor(go), Arg::int_list({dim}), Arg::boolean(true)}, b.dtype(go), kept);
         return {b.sub(go, b.mul(out, s))};
       }},
      // ---- linear algebra and losses over ops with kernels (static shapes) ----
      {"aten::einsum.default", einsum},
      {"aten::_chunk_cat.default", chunk_cat},
      {"aten::multi_margin_loss.default", multi_margin_loss},
      {"aten::multilabel_margin_loss.default", multilabel_margin_loss},
      {"aten::addbmm.default", [](Builder& b, const Node& n) -> std::vector<int> {
         // beta * self + alpha * sum_b b1[b] @ b2[b] == addmm(self, [N, B*M], [B*M, P]).
         int self = tensor_arg(n, 0), b1 = tensor_arg(n, 1), b2 = tensor_arg(n, 2);
         const Sizes s1 = b.sizes(b1), s2 = b.sizes(b2);
         if (s1.size() != 3 || s2.size() != 3 || s1[0] != s2[0] || s1[2] != s2[1] || !is_floating(b.dtype(self)) ||
             b.dtype(b1) != b.dtype(self) || b.dtype(b2) != b.dtype(self)) {
           return {};
         }
         int x = b.view(permute(b, b1, {1, 0, 2}), {s1[1], s1[0] * s1[2]});
         int y = b.view(b2, {s2[0] * s2[1], s2[2]});
         return {b.call1("addmm", "default", {Arg::tensor(self), Arg::tensor(x), Arg::tensor(y), n.args[3], n.args[4]},
                         b.dtype(self), {s1[1], s2[2]})};
       }},
      {"aten::block_diag.default", [](Builder& b, const Node& n) -> std::vector<int> {
         // Each tensor (0-d: 1x1, 1-d: 1xn) zero-padded to the total width, then stacked by rows.
         if (n.args.empty() || n.args[0].kind != Arg::Kind::Tensors || n.outputs.empty()) return {};
         ScalarType dt = b.dtype(n.outputs[0].ref);
         int64_t rows = 0, cols = 0;
         std::vector<Sizes> shapes;
         for (int id : n.args[0].refs) {
           Sizes s = b.sizes(id);
           if (s.size() > 2 || b.dtype(id) != dt) return {};
           while (s.size() < 2) s.insert(s.begin(), 1);
           shapes.push_back(s);
           rows += s[0];
           cols += s[1];
         }
         std::vector<int> parts;
         int64_t left = 0;
         for (size_t i = 0; i < shapes.size(); ++i) {
           int x = b.view(n.args[0].refs[i], shapes[i]);
           int64_t right = cols - left - shapes[i][1];
           parts.push_back(b.call1("constant_pad_nd", "default", {Arg::tensor(x), Arg::int_list({left, right}), Arg::real(0.0)}, dt,
                                   {shapes[i][0], cols}));
           left += shapes[i][1];
         }
         return {b.call1("cat", "default", {Arg::tensor_list(parts), Arg::integer(0)}, dt, {rows, cols})};
       }},
      {"aten::cartesian_prod.default", [](Builder& b, const Node& n) -> std::vector<int> {
         // One tensor: itself; k tensors: the columns of their meshgrid ("ij"), flattened.
         if (n.args.empty() || n.args[0].kind != Arg::Kind::Tensors || n.args[0].refs.empty()) return {};
         const std::vector<int>& ids = n.args[0].refs;
         ScalarType dt = b.dtype(ids[0]);
         Sizes grid;
         for (int id : ids) {
           if (b.sizes(id).size() != 1 || b.dtype(id) != dt) return {};
           grid.push_back(b.sizes(id)[0]);
         }
         if (ids.size() == 1) return {b.call1("clone", "default", {Arg::tensor(ids[0])}, dt, grid)};
         int64_t total = product(grid, 0, grid.size());
         std::vector<int> columns;
         for (size_t i = 0; i < ids.size(); ++i) {
           Sizes one(grid.size(), 1);
           one[i] = grid[i];
           columns.push_back(b.view(expand_to(b, b.view(ids[i], one), grid), {total}));
         }
         return {b.call1("stack", "default", {Arg::tensor_list(columns), Arg::integer(1)}, dt,
                         {total, static_cast<int64_t>(ids.size())})};
       }},
      {"aten::cosine_embedding_loss.default", [](Builder& b, const Node& n) -> std::vector<int> {
         // ATen: cos = sum(x1*x2) / sqrt((sum(x1^2) + 1e-12) * (sum(x2^2) + 1e-12)) over the last dim;
         // loss = 1 - cos where target == 1, max(0, cos - margin) where target == -1, else 0.
         int x1 = tensor_arg(n, 0), x2 = tensor_arg(n, 1), t = tensor_arg(n, 2);
         const Sizes s = b.sizes(x1);
         if (s.empty() || s.size() > 2 || b.sizes(x2) != s || !is_floating(b.dtype(x1)) || b.dtype(t) != b.dtype(x1)) return {};
         int64_t last = static_cast<int64_t>(s.size()) - 1;
         int prod = sum_dims(b, b.mul(x1, x2), {last}, false);
         int m1 = b.scalar_op("add", sum_dims(b, b.mul(x1, x1), {last}, false), 1e-12);
         int m2 = b.scalar_op("add", sum_dims(b, b.mul(x2, x2), {last}, false), 1e-12);
         int cos = b.binary("div", prod, b.unary("sqrt", b.mul(m1, m2)));
         if (b.sizes(t) != b.sizes(cos)) return {};
         int pos = b.call1("rsub", "Scalar", {Arg::tensor(cos), Arg::real(1.0)}, b.dtype(cos), b.sizes(cos));
         int neg = b.clamp_min(b.scalar_op("sub", cos, number_arg(n, 3, 0.0)), 0.0);
         int loss = b.add(b.where_scalar_other(b.compare_scalar("eq", t, 1.0), pos, 0.0),
                          b.where_scalar_other(b.compare_scalar("eq", t, -1.0), neg, 0.0));
         return {b.reduce(loss, int_arg(n, 4, kReductionMean))};
       }},
      {"aten::bilinear.default", [](Builder& b, const Node& n) -> std::vector<int> {
         // out[r, o] = sum_ij x1[r, i] W[o, i, j] x2[r, j] + bias[o]: x1 @ W' (W' = [I, O*J]), times x2, summed over j.
         int x1 = tensor_arg(n, 0), x2 = tensor_arg(n, 1), w = tensor_arg(n, 2);
         const Sizes s1 = b.sizes(x1), s2 = b.sizes(x2), sw = b.sizes(w);
         if (s1.empty() || s2.empty() || sw.size() != 3 || s1.back() != sw[1] || s2.back() != sw[2] ||
             Sizes(s1.begin(), s1.end() - 1) != Sizes(s2.begin(), s2.end() - 1) || !is_floating(b.dtype(w)) ||
             b.dtype(x1) != b.dtype(w) || b.dtype(x2) != b.dtype(w)) {
           return {};
         }
         int64_t rows = product(s1, 0, s1.size() - 1), o = sw[0], i = sw[1], j = sw[2];
         int wt = b.view(permute(b, w, {1, 0, 2}), {i, o * j});
         int t = b.view(matmul_2d(b, b.view(x1, {rows, i}), wt), {rows, o, j});
         int y = sum_dims(b, b.mul(t, b.view(x2, {rows, 1, j})), {2}, false);
         if (!is_none(n, 3)) y = b.add(y, tensor_arg(n, 3));
         Sizes out(s1.begin(), s1.end() - 1);
         out.push_back(o);
         return {b.view(y, out)};
       }},
      {"aten::_trilinear.default", [](Builder& b, const Node& n) -> std::vector<int> {
         // i1 * i2 * i3, each unsqueezed at its expand dims to a common rank, summed over sumdim.
         int ins[3] = {tensor_arg(n, 0), tensor_arg(n, 1), tensor_arg(n, 2)};
         int64_t total = static_cast<int64_t>(b.sizes(ins[0]).size() + ints_arg(n, 3).size());
         int prod = -1;
         for (int k = 0; k < 3; ++k) {
           std::vector<int64_t> expand = ints_arg(n, 3 + k);
           const Sizes s = b.sizes(ins[k]);
           if (static_cast<int64_t>(s.size() + expand.size()) != total || b.dtype(ins[k]) != b.dtype(ins[0])) return {};
           Sizes u;
           size_t next = 0;
           for (int64_t d = 0; d < total; ++d) {
             if (std::find(expand.begin(), expand.end(), d) != expand.end()) u.push_back(1);
             else u.push_back(s[next++]);
           }
           int v = b.view(ins[k], u);
           prod = prod < 0 ? v : b.mul(prod, v);
         }
         std::vector<int64_t> sumdim = ints_arg(n, 6);
         if (sumdim.empty()) return {prod};
         return {sum_dims(b, prod, sumdim, false)};
       }},
      {"aten::resize_as.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int self = tensor_arg(n, 0), templ = tensor_arg(n, 1);
         return {b.call1("resize", "default", {Arg::tensor(self), Arg::int_list(b.sizes(templ))}, b.dtype(self), b.sizes(templ))};
       }},
  };
  return table;
}

// upsample_nearest1d / _upsample_nearest_exact1d: an index_select with constant indices.
std::vector<int> nearest_1d(Builder& b, const Node& n, bool exact) {
  int x = tensor_arg(n, 0);
  int out = n.outputs[0].ref;
  Sizes s = b.sizes(x), o = b.sizes(out);
  if (s.size() != 3 || o.size() != 3) return {};
  int64_t in_len = s[2], out_len = o[2];
  // As ATen computes it (UpSample.h): a float scale, 1/scale_factor when one is given.
  float scale = out_len > 0 ? static_cast<float>(in_len) / static_cast<float>(out_len) : 0.0f;
  if (n.args.size() > 2 && n.args[2].kind == Arg::Kind::Doubles && n.args[2].doubles.size() == 1 &&
      n.args[2].doubles[0] > 0 && n.args[1].kind == Arg::Kind::None) {
    scale = static_cast<float>(1.0 / n.args[2].doubles[0]);
  }
  std::vector<int64_t> idx(static_cast<size_t>(out_len));
  for (int64_t i = 0; i < out_len; ++i) {
    float src = exact ? std::floor((static_cast<float>(i) + 0.5f) * scale) : std::floor(static_cast<float>(i) * scale);
    idx[i] = std::min<int64_t>(static_cast<int64_t>(src), in_len - 1);
    if (!exact && out_len == in_len) idx[i] = i;
    if (!exact && out_len == 2 * in_len) idx[i] = i >> 1;
  }
  int index = b.int64_constant(idx);
  return {b.call1("index_select", "default", {Arg::tensor(x), Arg::integer(2), Arg::tensor(index)}, b.dtype(x), o)};
}

}  // namespace

absl::StatusOr<int> decompose_composites(Graph& g, const std::function<bool(const std::string&)>& has_kernel) {
  int changes = 0;
  std::vector<Node> result;
  std::vector<std::pair<int, int>> replacements;  // (old output, new value)
  std::vector<Node> old = std::move(g.nodes);
  g.nodes.clear();
  for (Node& n : old) {
    std::string key = n.kernel_name();
    const Decomposition* d = nullptr;
    auto it = decompositions().find(key);
    if (it != decompositions().end()) d = &it->second;
    bool nearest = key == "aten::upsample_nearest1d.vec" || key == "aten::_upsample_nearest_exact1d.vec";
    bool candidate = !n.erased && (d != nullptr || nearest) && n.schema != nullptr && !has_kernel(key);
    if (candidate) {
      for (const Arg& a : n.args) {
        for (int r : a.value_refs()) if (g.values[r].is_dynamic()) candidate = false;
      }
      for (const Arg& a : n.outputs) {
        if (a.kind != Arg::Kind::Tensor || g.values[a.ref].is_dynamic()) candidate = false;
      }
    }
    if (!candidate) {
      result.push_back(std::move(n));
      continue;
    }
    size_t values_before = g.values.size(), constants_before = g.constants.size();
    Builder b(g, n);
    std::vector<int> outs = nearest ? nearest_1d(b, n, key == "aten::_upsample_nearest_exact1d.vec") : (*d)(b, n);
    bool ok = !b.failed() && !outs.empty() && outs.size() == n.outputs.size();
    for (size_t i = 0; ok && i < outs.size(); ++i) {
      const Value& want = g.values[n.outputs[i].ref];
      const Value& got = g.values[outs[i]];
      ok = want.dtype == got.dtype && want.sizes == got.sizes;
    }
    for (const Node& m : b.nodes()) ok = ok && has_kernel(m.kernel_name());
    if (!ok) {  // leave the op as it is; the kernel check reports it
      g.values.resize(values_before);
      g.constants.resize(constants_before);
      for (auto it2 = g.by_name.begin(); it2 != g.by_name.end();) {
        it2 = it2->second >= static_cast<int>(values_before) ? g.by_name.erase(it2) : std::next(it2);
      }
      result.push_back(std::move(n));
      continue;
    }
    for (size_t i = 0; i < outs.size(); ++i) replacements.emplace_back(n.outputs[i].ref, outs[i]);
    for (Node& m : b.nodes()) result.push_back(std::move(m));
    ++changes;
  }
  g.nodes = std::move(result);
  for (const auto& [from, to] : replacements) g.replace_uses(from, to);
  g.compact();
  return changes;
}

}  // namespace exporter
}  // namespace ember
