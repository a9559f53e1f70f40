// einsum, _chunk_cat, the multi-class margin losses and linear_cross_entropy's chunked custom
// ops as core ATen ops (the larger entries of the decomposition table in decompose.cc).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "exporter/passes/decompose_builder.h"

namespace ember {
namespace exporter {
namespace decompose_detail {
namespace {

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

}  // namespace

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

// torch_nn::_linear_cross_entropy_batch_chunked (reduced: loss and three gradient outputs,
// which must be empty: only inference is handled) and ..._no_reduction (the per-sample
// loss): linear -> log_softmax over the classes -> nll_loss with the class weights and
// ignore_index. Class-index targets over [N, D] inputs; no label smoothing.
std::vector<int> linear_cross_entropy(Builder& b, const Node& n, bool reduced) {
  int x = tensor_arg(n, 0), w = tensor_arg(n, 1), t = tensor_arg(n, 2);
  if (x < 0 || w < 0 || t < 0 || n.outputs.size() != (reduced ? 4u : 1u)) return {};
  const Sizes xs = b.sizes(x), ws = b.sizes(w);
  if (xs.size() != 2 || ws.size() != 2 || xs[1] != ws[1] || b.dtype(t) != ScalarType::Int64 || b.sizes(t).size() != 1 ||
      !is_floating(b.dtype(x)) || b.dtype(w) != b.dtype(x)) {
    return {};
  }
  const int bias = is_none(n, 3) ? -1 : tensor_arg(n, 3);
  const int weight = is_none(n, 4) ? -1 : tensor_arg(n, 4);
  if ((!is_none(n, 3) && bias < 0) || (!is_none(n, 4) && weight < 0)) return {};
  int64_t reduction = kReductionNone, ignore_index = int_arg(n, 5, -100);
  if (reduced) {
    if (n.args.size() < 15 || n.args[5].kind != Arg::Kind::String || number_arg(n, 7, 0.0) != 0.0) return {};
    const std::string& r = n.args[5].s;
    reduction = r == "mean" ? kReductionMean : r == "sum" ? kReductionSum : r == "none" ? kReductionNone : -1;
    if (reduction < 0) return {};
    for (size_t i = 12; i < 15; ++i) {
      if (number_arg(n, i, 1.0) != 0.0) return {};  // gradients requested: training, not handled
    }
    ignore_index = int_arg(n, 6, -100);
  }
  const Sizes logit_sizes = {xs[0], ws[0]};
  int logits = b.call1("linear", "default", {Arg::tensor(x), Arg::tensor(w), bias >= 0 ? Arg::tensor(bias) : Arg::none()},
                       b.dtype(x), logit_sizes);
  int logp = b.call1("log_softmax", "int", {Arg::tensor(logits), Arg::integer(1)}, b.dtype(x), logit_sizes);
  std::vector<int> outs = {nll_loss_nd(b, logp, t, reduction, ignore_index, weight)};
  for (size_t i = 1; reduced && i < 4; ++i) {
    const Sizes s = b.sizes(n.outputs[i].ref);
    if (product(s, 0, s.size()) != 0) return {};
    outs.push_back(b.call1("zeros", "default", {Arg::int_list(s)}, b.dtype(n.outputs[i].ref), s));
  }
  return outs;
}

}  // namespace decompose_detail
}  // namespace exporter
}  // namespace ember
