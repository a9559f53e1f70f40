// Decompositions of composite (training-IR) ops into core ATen ops, applied only where the
// linked kernel library has no kernel for the composite op and has kernels for every op of
// the replacement. Shapes are static here (a node with a dynamic tensor is left alone).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "exporter/ops/op_schemas.h"
#include "exporter/passes/decompose_builder.h"
#include "exporter/passes/passes.h"

namespace ember {
namespace exporter {
namespace {

using namespace decompose_detail;  // NOLINT: the pass's own internal helpers

// Returns the value ids that replace the node's tensor outputs (in order), or empty when the
// op has no decomposition here.
using Decomposition = std::function<std::vector<int>(Builder&, const Node&)>;

// norm_except_dim(v, pow, dim): the `pow`-norm of v over every dim but `dim`, kept as
// [1, .., size(dim), .., 1]; dim == -1 (PyTorch's "None") is the norm of the whole tensor
// (0-d), other negative dims wrap. -1 when it does not apply.
int norm_except_dim(Builder& b, int v, double pow, int64_t dim) {
  if (v < 0) return -1;
  const Sizes s = b.sizes(v);
  const int64_t rank = static_cast<int64_t>(s.size());
  if (!is_floating(b.dtype(v))) return -1;
  if (dim == -1) return b.call1("linalg_vector_norm", "default", {Arg::tensor(v), Arg::real(pow)}, b.dtype(v), {});
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank) return -1;
  if (rank == 1) return b.unary("abs", v);  // no other dim: |v| elementwise
  std::vector<int64_t> others;
  Sizes kept(s.size(), 1);
  kept[dim] = s[dim];
  for (int64_t i = 0; i < rank; ++i) {
    if (i != dim) others.push_back(i);
  }
  return b.call1("linalg_vector_norm", "default",
                 {Arg::tensor(v), Arg::real(pow), Arg::int_list(others), Arg::boolean(true)}, b.dtype(v), kept);
}

// _weight_norm(v, g, dim) = v * (g / norm_except_dim(v, 2, dim)) (ATen's composite); the
// interface variant also returns the norms, shaped like g.
std::vector<int> weight_norm(Builder& b, const Node& n, bool interface) {
  int v = tensor_arg(n, 0), g = tensor_arg(n, 1);
  if (v < 0 || g < 0 || b.dtype(g) != b.dtype(v)) return {};
  int norm = norm_except_dim(b, v, 2.0, int_arg(n, 2, 0));
  if (norm < 0) return {};
  int w = b.mul(v, b.binary("div", g, norm));
  if (!interface) return {w};
  const Sizes gs = b.sizes(g);
  if (product(b.sizes(norm), 0, b.sizes(norm).size()) != product(gs, 0, gs.size())) return {};
  return {w, b.sizes(norm) == gs ? norm : b.view(norm, gs)};
}

// fft_fftshift / fft_ifftshift(self, dim?): a roll by size / 2 (ifftshift: back by it) along
// each of `dim` (every dim when None).
std::vector<int> fft_shift(Builder& b, const Node& n, bool inverse) {
  int x = tensor_arg(n, 0);
  if (x < 0) return {};
  const Sizes s = b.sizes(x);
  const int64_t rank = static_cast<int64_t>(s.size());
  std::vector<int64_t> dims = ints_arg(n, 1), shifts;
  if (is_none(n, 1)) {
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  } else if (dims.empty() && n.args[1].kind == Arg::Kind::Int) {
    dims.push_back(n.args[1].i);
  }
  if (dims.empty()) return {};
  for (int64_t& d : dims) {
    if (d < 0) d += rank;
    if (d < 0 || d >= rank) return {};
    shifts.push_back(inverse ? -(s[d] / 2) : s[d] / 2);
  }
  return {b.call1("roll", "default", {Arg::tensor(x), Arg::int_list(shifts), Arg::int_list(dims)}, b.dtype(x), s)};
}

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
         const int weight = is_none(n, 2) ? -1 : tensor_arg(n, 2);
         if (!is_none(n, 2) && weight < 0) return {};
         return {nll_loss_nd(b, tensor_arg(n, 0), tensor_arg(n, 1), int_arg(n, 3, kReductionMean), int_arg(n, 4, -100),
                             weight)};
       }},
      {"aten::cross_entropy_loss.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int x = tensor_arg(n, 0), t = tensor_arg(n, 1);
         if (x < 0 || t < 0 || !is_none(n, 2) || b.sizes(x).empty()) return {};  // no class weights
         const int64_t reduction = int_arg(n, 3, kReductionMean);
         const double smoothing = number_arg(n, 5, 0.0);
         // An unbatched input [C] is a batch of one: [1, C], its loss viewed back to 0-d.
         Sizes xs = b.sizes(x);
         const bool unbatched = xs.size() == 1;
         if (unbatched) {
           xs.insert(xs.begin(), 1);
           x = b.view(x, xs);
         }
         int logp = b.call1("log_softmax", "int", {Arg::tensor(x), Arg::integer(1)}, b.dtype(x), xs);
         if (is_floating(b.dtype(t))) {
           // Class probabilities shaped like the input: -sum(target * logp) over the classes;
           // mean divides by the number of samples (numel / C), as ATen.
           if (unbatched) t = b.view(t, xs);
           if (b.sizes(t) != xs || b.dtype(t) != b.dtype(x)) return {};
           const int64_t classes = xs[1];
           if (smoothing != 0.0) t = b.scalar_op("add", b.scalar_op("mul", t, 1.0 - smoothing), smoothing / classes);
           Sizes per = xs;
           per.erase(per.begin() + 1);
           int loss = b.unary("neg", sum_dims(b, b.mul(logp, t), {1}, false));
           if (reduction == kReductionNone) return {unbatched ? b.view(loss, {}) : loss};
           int total = b.reduce(loss, kReductionSum);
           if (reduction == kReductionMean) total = b.scalar_op("div", total, static_cast<double>(product(per, 0, per.size())));
           return {total};
         }
         if (smoothing != 0.0) return {};
         if (unbatched) t = b.view(t, {1});
         int loss = nll_loss_nd(b, logp, t, reduction, int_arg(n, 4, -100));
         if (loss >= 0 && unbatched && reduction == kReductionNone) loss = b.view(loss, {});
         return {loss};
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
      {"torch_nn::_linear_cross_entropy_batch_chunked.default",
       [](Builder& b, const Node& n) { return linear_cross_entropy(b, n, true); }},
      {"torch_nn::_linear_cross_entropy_batch_chunked_no_reduction.default",
       [](Builder& b, const Node& n) { return linear_cross_entropy(b, n, false); }},
      {"aten::linalg_norm.default", [](Builder& b, const Node& n) { return linalg_norm(b, n, false); }},
      {"aten::linalg_norm.ord_str", [](Builder& b, const Node& n) { return linalg_norm(b, n, true); }},
      {"aten::linalg_multi_dot.default", linalg_multi_dot},
      {"aten::linalg_tensorinv.default", linalg_tensorinv},
      {"aten::linalg_tensorsolve.default", linalg_tensorsolve},
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
      {"aten::_weight_norm.default", [](Builder& b, const Node& n) { return weight_norm(b, n, false); }},
      {"aten::_weight_norm_interface.default", [](Builder& b, const Node& n) { return weight_norm(b, n, true); }},
      {"aten::norm_except_dim.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int v = norm_except_dim(b, tensor_arg(n, 0), number_arg(n, 1, 2.0), int_arg(n, 2, 0));
         if (v < 0) return {};
         return {v};
       }},
      {"aten::combinations.default", [](Builder& b, const Node& n) -> std::vector<int> {
         // Every r-combination of a 1-D input, in itertools order: an index_select with
         // constant indices (the count is static), viewed as [count, r].
         int x = tensor_arg(n, 0);
         int64_t r = int_arg(n, 1, 2);
         bool with_replacement = number_arg(n, 2, 0.0) != 0;
         if (x < 0 || b.sizes(x).size() != 1 || r < 1) return {};
         const int64_t len = b.sizes(x)[0];
         std::vector<int64_t> pick(static_cast<size_t>(r), 0), flat;
         if (!with_replacement) {
           for (int64_t i = 0; i < r; ++i) pick[i] = i;
         }
         while (!pick.empty() && pick.back() < len) {
           flat.insert(flat.end(), pick.begin(), pick.end());
           // Advance the rightmost position that can move, then reset those after it.
           int64_t i = r - 1;
           while (i >= 0 && pick[i] >= len - (with_replacement ? 1 : r - i)) --i;
           if (i < 0) break;
           ++pick[i];
           for (int64_t j = i + 1; j < r; ++j) pick[j] = with_replacement ? pick[i] : pick[j - 1] + 1;
         }
         const int64_t count = static_cast<int64_t>(flat.size()) / r;
         if (count == 0 || b.sizes(n.outputs[0].ref) != Sizes{count, r}) return {};
         int picked = b.call1("index_select", "default", {Arg::tensor(x), Arg::integer(0), Arg::tensor(b.int64_constant(flat))},
                              b.dtype(x), {count * r});
         return {b.view(picked, {count, r})};
       }},
      {"aten::_scaled_dot_product_flash_attention_for_cpu.default", [](Builder& b, const Node& n) -> std::vector<int> {
         // (output, logsumexp [B, H, L]): scaled_dot_product_attention, and the logsumexp of the
         // scaled (causal-masked) scores over the keys, as the flash kernel returns it.
         // Args: query, key, value, dropout_p, is_causal, attn_mask, scale.
         int q = tensor_arg(n, 0), k = tensor_arg(n, 1), v = tensor_arg(n, 2);
         if (q < 0 || k < 0 || v < 0 || number_arg(n, 3, 0.0) != 0.0 || !is_none(n, 5)) return {};
         const Sizes qs = b.sizes(q), ks = b.sizes(k), vs = b.sizes(v);
         if (qs.size() != 4 || ks.size() != 4 || vs.size() != 4 || qs[1] != ks[1] || !is_floating(b.dtype(q))) return {};
         const bool causal = number_arg(n, 4, 0.0) != 0.0;
         const double scale = is_none(n, 6) ? 1.0 / std::sqrt(static_cast<double>(qs[3])) : number_arg(n, 6, 1.0);
         int out = b.call1("scaled_dot_product_attention", "default",
                           {Arg::tensor(q), Arg::tensor(k), Arg::tensor(v), Arg::none(), Arg::real(0.0),
                            Arg::boolean(causal), Arg::real(scale)},
                           b.dtype(q), {qs[0], qs[1], qs[2], vs[3]});
         const Sizes ss = {qs[0], qs[1], qs[2], ks[2]};
         int scores = b.call1("matmul", "default", {Arg::tensor(q), Arg::tensor(permute(b, k, {0, 1, 3, 2}))}, b.dtype(q), ss);
         scores = b.scalar_op("mul", scores, scale);
         if (causal) {  // key j > query i masked (top-left aligned)
           int keep = b.call1("tril", "default", {Arg::tensor(b.call1("ones_like", "default", {Arg::tensor(scores)}, b.dtype(q), ss))},
                              b.dtype(q), ss);
           scores = b.where_scalar_other(b.compare_scalar("ne", keep, 0.0), scores, -std::numeric_limits<double>::infinity());
         }
         int lse = b.call1("logsumexp", "default", {Arg::tensor(scores), Arg::int_list({3}), Arg::boolean(false)}, b.dtype(q),
                           {qs[0], qs[1], qs[2]});
         return {out, lse};
       }},
      {"aten::fft_fftshift.default", [](Builder& b, const Node& n) { return fft_shift(b, n, false); }},
      {"aten::fft_ifftshift.default", [](Builder& b, const Node& n) { return fft_shift(b, n, true); }},
      {"aten::special_xlog1py.default", [](Builder& b, const Node& n) -> std::vector<int> {
         // x * log1p(y), 0 where x == 0 unless y is NaN (ATen).
         int x = tensor_arg(n, 0), y = tensor_arg(n, 1);
         if (x < 0 || y < 0 || !is_floating(b.dtype(x)) || b.dtype(x) != b.dtype(y)) return {};
         int product = b.mul(x, b.unary("log1p", y));
         int nan_y = b.call1("isnan", "default", {Arg::tensor(y)}, ScalarType::Bool, b.sizes(y));
         int keep = b.binary("logical_or", b.compare_scalar("ne", x, 0.0), nan_y, "default");
         return {b.where_scalar_other(keep, product, 0.0)};
       }},
      {"aten::linalg_diagonal.default", [](Builder& b, const Node& n) -> std::vector<int> {
         int a = tensor_arg(n, 0);
         if (a < 0) return {};
         return {b.call1("diagonal", "default",
                         {Arg::tensor(a), Arg::integer(int_arg(n, 1, 0)), Arg::integer(int_arg(n, 2, -2)),
                          Arg::integer(int_arg(n, 3, -1))},
                         b.dtype(a), b.sizes(n.outputs[0].ref))};
       }},
      {"aten::linalg_vecdot.default", [](Builder& b, const Node& n) -> std::vector<int> {
         // Real inputs: sum(x * y) over dim (conj(x) is x).
         int x = tensor_arg(n, 0), y = tensor_arg(n, 1);
         if (x < 0 || y < 0 || !is_floating(b.dtype(x)) || b.dtype(x) != b.dtype(y)) return {};
         int prod = b.mul(x, y);
         const int64_t rank = static_cast<int64_t>(b.sizes(prod).size());
         int64_t dim = int_arg(n, 2, -1);
         if (dim < 0) dim += rank;
         if (dim < 0 || dim >= rank) return {};
         return {sum_dims(b, prod, {dim}, false)};
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
