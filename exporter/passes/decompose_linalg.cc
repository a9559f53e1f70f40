// Training-IR linear-algebra composites that core ATen decomposes, as calls of the linalg
// kernels (kernels/portable/linalg_decomp/): linalg_norm (.default, .ord_str),
// linalg_multi_dot, linalg_tensorinv, linalg_tensorsolve. Entries of the table in
// decompose.cc; each returns {} (op left alone, reported by the kernel check) where its
// arguments are outside what is handled here.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "exporter/passes/decompose_builder.h"

namespace ember {
namespace exporter {
namespace decompose_detail {
namespace {

// Wrapped dims of an int[1]? argument (empty when None).
bool dims_of(const Node& n, size_t i, int64_t rank, std::vector<int64_t>* dims) {
  dims->clear();
  if (is_none(n, i)) return true;
  std::vector<int64_t> d = ints_arg(n, i);
  if (d.empty() && i < n.args.size() && n.args[i].kind == Arg::Kind::Int) d.push_back(n.args[i].i);
  for (int64_t& x : d) {
    if (x < 0) x += rank;
    if (x < 0 || x >= std::max<int64_t>(rank, 1)) return false;
  }
  *dims = d;
  return true;
}

}  // namespace

// linalg_norm(self, ord=None, dim=None, keepdim=False, *, dtype=None) and
// linalg_norm.ord_str(self, str ord, ...): a vector norm over one dim (or the flattened
// input when ord and dim are None, or a 1-D input), a matrix norm ('fro', 'nuc'; None on two
// dims is 'fro') over two.
std::vector<int> linalg_norm(Builder& b, const Node& n, bool str_ord) {
  int x = tensor_arg(n, 0);
  if (x < 0 || !is_floating(b.dtype(x)) || !is_none(n, 4)) return {};
  const int64_t rank = static_cast<int64_t>(b.sizes(x).size());
  std::vector<int64_t> dims;
  if (!dims_of(n, 2, rank, &dims)) return {};
  const bool keepdim = number_arg(n, 3, 0.0) != 0.0;
  const int out = n.outputs.empty() ? -1 : n.outputs[0].ref;
  if (out < 0) return {};
  const Sizes os = b.sizes(out);
  std::string ord_s;
  if (str_ord) {
    if (n.args.size() < 2 || n.args[1].kind != Arg::Kind::String) return {};
    ord_s = n.args[1].s;
  }
  const bool ord_none = !str_ord && is_none(n, 1);
  const bool matrix = dims.size() == 2 || (dims.empty() && !ord_none && rank == 2) || str_ord;
  if (!matrix) {
    if (!(dims.size() == 1 || (dims.empty() && (ord_none || rank <= 1)))) return {};
    const double ord = ord_none ? 2.0 : number_arg(n, 1, 2.0);
    std::vector<Arg> args = {Arg::tensor(x), Arg::real(ord)};
    args.push_back(dims.empty() ? Arg::none() : Arg::int_list(dims));
    args.push_back(Arg::boolean(keepdim));
    return {b.call1("linalg_vector_norm", "default", args, b.dtype(x), os)};
  }
  if (dims.empty()) dims = {rank - 2, rank - 1};
  if (dims.size() != 2) return {};
  if (ord_none) ord_s = "fro";
  if (ord_s != "fro" && ord_s != "nuc") return {};
  Arg s;
  s.kind = Arg::Kind::String;
  s.s = ord_s;
  return {b.call1("linalg_matrix_norm", "str_ord", {Arg::tensor(x), s, Arg::int_list(dims), Arg::boolean(keepdim)},
                  b.dtype(x), os)};
}

// linalg_multi_dot(tensors): left-to-right mm chain; a 1-D first (last) operand is a row
// (column) vector whose dim is dropped from the result.
std::vector<int> linalg_multi_dot(Builder& b, const Node& n) {
  if (n.args.empty() || n.args[0].kind != Arg::Kind::Tensors || n.args[0].refs.size() < 2 || n.outputs.empty()) return {};
  const std::vector<int>& ts = n.args[0].refs;
  std::vector<int> mats;
  for (size_t i = 0; i < ts.size(); ++i) {
    int t = ts[i];
    if (t < 0 || !is_floating(b.dtype(t))) return {};
    const Sizes s = b.sizes(t);
    if (s.size() == 1 && i == 0) t = b.view(t, {1, s[0]});
    else if (s.size() == 1 && i + 1 == ts.size()) t = b.view(t, {s[0], 1});
    else if (s.size() != 2) return {};
    mats.push_back(t);
  }
  int acc = mats[0];
  for (size_t i = 1; i < mats.size(); ++i) {
    if (b.sizes(acc)[1] != b.sizes(mats[i])[0]) return {};
    acc = matmul_2d(b, acc, mats[i]);
  }
  const Sizes os = b.sizes(n.outputs[0].ref);
  return {b.sizes(acc) == os ? acc : b.view(acc, os)};
}

// linalg_tensorinv(self, ind=2): inv(self viewed as product(shape[:ind]) x product(shape[ind:])),
// viewed as shape[ind:] + shape[:ind].
std::vector<int> linalg_tensorinv(Builder& b, const Node& n) {
  int x = tensor_arg(n, 0);
  if (x < 0 || !is_floating(b.dtype(x)) || n.outputs.empty()) return {};
  const Sizes s = b.sizes(x);
  const int64_t ind = int_arg(n, 1, 2);
  if (ind <= 0 || ind > static_cast<int64_t>(s.size())) return {};
  const int64_t rows = product(s, 0, static_cast<size_t>(ind)), cols = product(s, static_cast<size_t>(ind), s.size());
  if (rows != cols) return {};
  int inv = b.call1("linalg_inv", "default", {Arg::tensor(b.view(x, {rows, cols}))}, b.dtype(x), {rows, cols});
  return {b.view(inv, b.sizes(n.outputs[0].ref))};
}

// linalg_tensorsolve(A, B, dims=None): A's `dims` moved last, then
// solve(A viewed as numel(B) x product(rest), B flattened), viewed as the rest of A's shape.
std::vector<int> linalg_tensorsolve(Builder& b, const Node& n) {
  int a = tensor_arg(n, 0), rhs = tensor_arg(n, 1);
  if (a < 0 || rhs < 0 || !is_floating(b.dtype(a)) || b.dtype(a) != b.dtype(rhs) || n.outputs.empty()) return {};
  const int64_t rank = static_cast<int64_t>(b.sizes(a).size());
  std::vector<int64_t> dims;
  if (!dims_of(n, 2, rank, &dims)) return {};
  if (!dims.empty()) {
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < rank; ++d) {
      if (std::find(dims.begin(), dims.end(), d) == dims.end()) perm.push_back(d);
    }
    perm.insert(perm.end(), dims.begin(), dims.end());
    a = permute(b, a, perm);
  }
  const Sizes as = b.sizes(a), bs = b.sizes(rhs);
  if (bs.size() > as.size()) return {};
  const int64_t rows = product(bs, 0, bs.size()), cols = product(as, bs.size(), as.size());
  if (rows != cols || product(as, 0, bs.size()) != rows) return {};
  int a2 = b.view(a, {rows, cols});
  int b1 = b.view(rhs, {rows});
  int x = b.call1("linalg_solve", "default", {Arg::tensor(a2), Arg::tensor(b1)}, b.dtype(a), {cols});
  return {b.view(x, b.sizes(n.outputs[0].ref))};
}

}  // namespace decompose_detail
}  // namespace exporter
}  // namespace ember
