// Numerical tests of the linear-algebra and loss decompositions of exporter/passes/decompose.cc
// (einsum, addbmm, block_diag, cartesian_prod, _chunk_cat, bilinear, _trilinear,
// cosine_embedding_loss, multi_margin_loss, multilabel_margin_loss, resize_as, _weight_norm,
// _weight_norm_interface, norm_except_dim).
//
// Each test builds a graph holding the composite op with user inputs, exports it with the
// portable kernels linked (so the composite is decomposed: there is no kernel for it), runs
// the program with the Module API and compares every output with a reference computed here
// by plain loops in double precision: relative tolerance 1e-5 (absolute below magnitude 1).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "exporter/exporter.h"
#include "exporter/ops/op_schemas.h"
#include "gtest/gtest.h"
#include "extension/module/module.h"
#include "extension/module/tensor_ptr.h"
#include "test/exporter/decompose_case.h"

namespace ember {
namespace exporter {
namespace {

using namespace decompose_test;  // NOLINT: the shared harness

// ---------------------------------------------------------------- einsum

// Naive einsum: the sum over every assignment of every label of the product of the operands.
// Ellipsis dims are right-aligned across operands; size-1 dims broadcast; the implicit output
// is the ellipsis dims then the labels used once, in ASCII order (as torch.einsum).
Array reference_einsum(const std::string& eq, const std::vector<Array>& ops) {
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char ch : lhs) {
    if (ch == ',') terms.emplace_back();
    else terms.back().push_back(ch);
  }
  auto ellipsis_rank = [&](size_t k) {
    const std::string& t = terms[k];
    bool e = t.find("...") != std::string::npos;
    return e ? static_cast<int64_t>(ops[k].sizes.size()) - static_cast<int64_t>(t.size() - 3) : 0;
  };
  int64_t max_e = 0;
  for (size_t k = 0; k < ops.size(); ++k) max_e = std::max(max_e, ellipsis_rank(k));
  auto expand = [&](const std::string& t, int64_t e) {  // labels: letters, ellipsis dims 256+j
    std::vector<int> ls;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i] == '.') {
        for (int64_t j = max_e - e; j < max_e; ++j) ls.push_back(static_cast<int>(256 + j));
        i += 2;
      } else {
        ls.push_back(t[i]);
      }
    }
    return ls;
  };
  std::vector<std::vector<int>> labels;
  std::map<int, int64_t> size;
  std::map<int, int> uses;
  for (size_t k = 0; k < ops.size(); ++k) {
    labels.push_back(expand(terms[k], ellipsis_rank(k)));
    for (size_t d = 0; d < labels[k].size(); ++d) {
      int64_t& s = size.emplace(labels[k][d], 1).first->second;
      s = std::max(s, ops[k].sizes[d]);
      ++uses[labels[k][d]];
    }
  }
  std::vector<int> out;
  if (arrow != std::string::npos) {
    out = expand(eq.substr(arrow + 2), max_e);
  } else {
    for (int64_t j = 0; j < max_e; ++j) out.push_back(static_cast<int>(256 + j));
    for (const auto& [l, n] : uses) if (l < 256 && n == 1) out.push_back(l);
  }
  std::vector<int> all;
  Sizes all_sizes;
  for (const auto& [l, s] : size) {
    all.push_back(l);
    all_sizes.push_back(s);
  }
  auto pos = [&](int l) { return std::find(all.begin(), all.end(), l) - all.begin(); };
  Array r;
  for (int l : out) r.sizes.push_back(size[l]);
  r.v.assign(static_cast<size_t>(numel(r.sizes)), 0.0);
  for_each_index(all_sizes, [&](const Sizes& idx) {
    double p = 1;
    for (size_t k = 0; k < ops.size(); ++k) {
      Sizes oi;
      for (size_t d = 0; d < labels[k].size(); ++d) oi.push_back(ops[k].sizes[d] == 1 ? 0 : idx[pos(labels[k][d])]);
      p *= ops[k].at(oi);
    }
    int64_t flat = 0;
    for (size_t d = 0; d < out.size(); ++d) flat = flat * r.sizes[d] + idx[pos(out[d])];
    r.v[static_cast<size_t>(flat)] += p;
  });
  return r;
}

// einsum(eq, operands of `shapes`) against the naive reference.
void check_einsum(const std::string& eq, const std::vector<Sizes>& shapes) {
  SCOPED_TRACE(eq);
  Case c;
  std::vector<Array> ops;
  std::vector<int> ids;
  for (size_t k = 0; k < shapes.size(); ++k) {
    ops.push_back(random(shapes[k], static_cast<uint32_t>(7 * k + eq.size())));
    ids.push_back(c.input(ops.back()));
  }
  Array want = reference_einsum(eq, ops);
  c.op("einsum", "default", {str(eq), Arg::tensor_list(ids)}, want.sizes);
  run_and_compare(c, {want}, eq);
}

TEST(DecomposeEinsum, Matmul) {
  check_einsum("ij,jk->ik", {{3, 4}, {4, 5}});
  check_einsum("ij,kj->ik", {{3, 4}, {5, 4}});  // contraction over both last dims
  check_einsum("ji,jk->ki", {{4, 3}, {4, 5}});  // transposed operand and output
}

TEST(DecomposeEinsum, MatmulMatchesHandWrittenLoops) {
  // Guards the reference too: ij,jk->ik and the implicit ij,jk against a plain triple loop.
  Array a = random({3, 4}, 1), b = random({4, 2}, 2), want;
  want.sizes = {3, 2};
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t k = 0; k < 2; ++k) {
      double s = 0;
      for (int64_t j = 0; j < 4; ++j) s += a.at({i, j}) * b.at({j, k});
      want.v.push_back(s);
    }
  }
  for (const char* eq : {"ij,jk->ik", "ij,jk"}) {
    Case c;
    int x = c.input(a), y = c.input(b);
    c.op("einsum", "default", {str(eq), Arg::tensor_list({x, y})}, {3, 2});
    run_and_compare(c, {want}, eq);
  }
}

TEST(DecomposeEinsum, BatchedMatmul) {
  check_einsum("bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}});
  check_einsum("bij,bkj->bki", {{3, 2, 4}, {3, 5, 4}});
  check_einsum("ibj,jbk->bik", {{2, 3, 4}, {4, 3, 5}});  // batch label in the middle
}

TEST(DecomposeEinsum, TransposeAndPermute) {
  check_einsum("ij->ji", {{3, 4}});
  check_einsum("ijk->kij", {{2, 3, 4}});
  check_einsum("ij->ij", {{3, 4}});  // identity: a copy, not the input itself
}

TEST(DecomposeEinsum, Outer) {
  check_einsum("i,j->ij", {{3}, {4}});
  check_einsum("i,j->ji", {{3}, {4}});
  check_einsum("i,j,k->ijk", {{2}, {3}, {4}});
}

TEST(DecomposeEinsum, Reductions) {
  check_einsum("ij->j", {{3, 4}});
  check_einsum("ij->i", {{3, 4}});
  check_einsum("ij->", {{3, 4}});
  check_einsum("ijk->ik", {{2, 3, 4}});
  check_einsum("i,i->", {{5}, {5}});      // dot
  check_einsum("ij,ij->i", {{3, 4}, {3, 4}});
  check_einsum("ij,ij->ij", {{3, 4}, {3, 4}});  // Hadamard
  check_einsum("ij,k->", {{3, 4}, {2}});  // both operands summed before the product
}

TEST(DecomposeEinsum, ThreeOperands) {
  check_einsum("ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}});
  check_einsum("ij,jk,jl->ikl", {{2, 3}, {3, 4}, {3, 2}});  // j shared by all three
  check_einsum("bi,bj,bk->b", {{3, 2}, {3, 4}, {3, 2}});
  check_einsum("ij,jk,ki->", {{2, 3}, {3, 4}, {4, 2}});  // trace of a product chain
}

TEST(DecomposeEinsum, EllipsisWithBroadcastBatchDims) {
  check_einsum("...ij,...jk->...ik", {{2, 1, 3, 4}, {3, 4, 5}});  // batch (2, 1) x (3) -> (2, 3)
  check_einsum("...ij,...jk->...ik", {{3, 4}, {4, 5}});            // empty ellipsis
  check_einsum("...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 5}});
  check_einsum("...ij->...ji", {{2, 3, 4}});
  check_einsum("i...->...", {{3, 2, 4}});
  check_einsum("b...,b...->b", {{2, 3, 4}, {2, 3, 4}});
}

TEST(DecomposeEinsum, ImplicitOutput) {
  check_einsum("ij,jk", {{3, 4}, {4, 5}});
  check_einsum("ji", {{3, 4}});  // implicit output "ij": a transpose
  check_einsum("ba,ca", {{2, 3}, {4, 3}});
  check_einsum("ij", {{3, 4}});
  check_einsum("i,i", {{4}, {4}});
  check_einsum("...ij,...jk", {{2, 3, 4}, {4, 5}});
  check_einsum("aB", {{3, 4}});  // upper case sorts first: "Ba", a transpose
}

TEST(DecomposeEinsum, SizeOneBroadcasting) {
  check_einsum("bij,bjk->bik", {{1, 3, 4}, {2, 4, 5}});
  check_einsum("bij,bjk->bik", {{2, 3, 4}, {1, 4, 5}});
  check_einsum("ij,jk->ik", {{3, 1}, {4, 5}});  // contracted label of size 1 in one operand
  check_einsum("ij,ij->ij", {{3, 1}, {1, 4}});
}

TEST(DecomposeEinsum, RepeatedLabelIsAClearExportError) {
  // Diagonals ("ii->i") are not decomposed: the export must fail naming einsum, not run a
  // wrong program.
  struct Param {
    const char* eq;
    std::vector<Sizes> shapes;
    Sizes out;
  };
  for (const Param& p : {Param{"ii->i", {{3, 3}}, {3}}, Param{"ii->", {{3, 3}}, {}}, Param{"iij,jk->ik", {{3, 3, 2}, {2, 4}}, {3, 4}}}) {
    const std::string eq = p.eq;
    Case c;
    std::vector<int> ids;
    for (size_t k = 0; k < p.shapes.size(); ++k) ids.push_back(c.input(random(p.shapes[k], static_cast<uint32_t>(k))));
    c.op("einsum", "default", {str(eq), Arg::tensor_list(ids)}, p.out);
    auto r = c.export_program();
    ASSERT_FALSE(r.ok()) << eq;
    EXPECT_NE(std::string(r.status().message()).find("aten::einsum.default"), std::string::npos) << r.status();
  }
}

// ---------------------------------------------------------------- addbmm

TEST(DecomposeAddbmm, BetaAndAlpha) {
  Array b1 = random({3, 2, 4}, 1), b2 = random({3, 4, 5}, 2);
  struct Param {
    Sizes self;
    double beta, alpha;
  };
  for (const Param& p : {Param{{2, 5}, 1.0, 1.0}, Param{{2, 5}, 0.5, -2.0}, Param{{5}, 2.0, 0.25},
                         Param{{2, 1}, -1.5, 3.0}, Param{{2, 5}, 0.0, 1.5}}) {
    SCOPED_TRACE(::testing::Message() << "beta " << p.beta << " alpha " << p.alpha);
    Array self = random(p.self, 3);
    if (p.beta == 0.0) self.v[0] = std::numeric_limits<double>::quiet_NaN();  // ignored when beta == 0
    Case c;
    int s = c.input(self), x = c.input(b1), y = c.input(b2);
    c.op("addbmm", "default", {Arg::tensor(s), Arg::tensor(x), Arg::tensor(y), Arg::real(p.beta), Arg::real(p.alpha)}, {2, 5});
    Array want;
    want.sizes = {2, 5};
    for (int64_t n = 0; n < 2; ++n) {
      for (int64_t q = 0; q < 5; ++q) {
        double acc = 0;
        for (int64_t b = 0; b < 3; ++b) {
          for (int64_t m = 0; m < 4; ++m) acc += b1.at({b, n, m}) * b2.at({b, m, q});
        }
        double sv = p.self.size() == 1 ? self.at({q}) : self.at({n, p.self[1] == 1 ? 0 : q});
        want.v.push_back((p.beta == 0.0 ? 0.0 : p.beta * sv) + p.alpha * acc);
      }
    }
    run_and_compare(c, {want}, "addbmm");
  }
}

TEST(DecomposeAddbmm, IntegerScalars) {
  // beta/alpha as Int arguments (how torch.export records `beta=2`).
  Array self = random({3, 2}, 4), b1 = random({2, 3, 3}, 5), b2 = random({2, 3, 2}, 6);
  Case c;
  int s = c.input(self), x = c.input(b1), y = c.input(b2);
  c.op("addbmm", "default", {Arg::tensor(s), Arg::tensor(x), Arg::tensor(y), Arg::integer(2), Arg::integer(-1)}, {3, 2});
  Array want;
  want.sizes = {3, 2};
  for (int64_t n = 0; n < 3; ++n) {
    for (int64_t q = 0; q < 2; ++q) {
      double acc = 0;
      for (int64_t b = 0; b < 2; ++b) {
        for (int64_t m = 0; m < 3; ++m) acc += b1.at({b, n, m}) * b2.at({b, m, q});
      }
      want.v.push_back(2 * self.at({n, q}) - acc);
    }
  }
  run_and_compare(c, {want}, "addbmm int scalars");
}

// ---------------------------------------------------------------- block_diag

TEST(DecomposeBlockDiag, MixedShapesIncludingEmptyAndOneDimensional) {
  // 2-D, 1-D (one row), 0-D (1x1), 0-row, 0-column and empty 1-D (one row, no column) blocks.
  std::vector<Array> parts = {random({2, 3}, 1), random({4}, 2), random({}, 3), random({0, 2}, 4),
                              random({2, 0}, 5), random({0}, 6), random({1, 2}, 7)};
  Case c;
  std::vector<int> ids;
  for (const Array& p : parts) ids.push_back(c.input(p));
  Array want;
  int64_t rows = 0, cols = 0;
  std::vector<Sizes> shapes;
  for (const Array& p : parts) {
    Sizes s = p.sizes;
    while (s.size() < 2) s.insert(s.begin(), 1);
    shapes.push_back(s);
    rows += s[0];
    cols += s[1];
  }
  ASSERT_EQ(rows, 8);
  ASSERT_EQ(cols, 12);
  want.sizes = {rows, cols};
  want.v.assign(static_cast<size_t>(rows * cols), 0.0);
  int64_t r0 = 0, c0 = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    for (int64_t i = 0; i < shapes[k][0]; ++i) {
      for (int64_t j = 0; j < shapes[k][1]; ++j) want.v[(r0 + i) * cols + c0 + j] = parts[k].v[i * shapes[k][1] + j];
    }
    r0 += shapes[k][0];
    c0 += shapes[k][1];
  }
  c.op("block_diag", "default", {Arg::tensor_list(ids)}, want.sizes);
  run_and_compare(c, {want}, "block_diag");
}

TEST(DecomposeBlockDiag, SingleAndSquareBlocks) {
  Array a = random({2, 2}, 1), b = random({3, 3}, 2);
  Case c;
  int x = c.input(a), y = c.input(b);
  c.op("block_diag", "default", {Arg::tensor_list({x})}, {2, 2});
  c.op("block_diag", "default", {Arg::tensor_list({x, y})}, {5, 5});
  Array both = floats({5, 5}, std::vector<double>(25, 0.0));
  for (int64_t i = 0; i < 2; ++i) for (int64_t j = 0; j < 2; ++j) both.v[i * 5 + j] = a.at({i, j});
  for (int64_t i = 0; i < 3; ++i) for (int64_t j = 0; j < 3; ++j) both.v[(i + 2) * 5 + j + 2] = b.at({i, j});
  run_and_compare(c, {a, both}, "block_diag square");
}

// ---------------------------------------------------------------- cartesian_prod

Array reference_cartesian(const std::vector<Array>& in) {
  Sizes grid;
  for (const Array& a : in) grid.push_back(a.sizes[0]);
  Array r;
  r.dtype = in[0].dtype;
  if (in.size() == 1) return in[0];
  r.sizes = {numel(grid), static_cast<int64_t>(in.size())};
  for_each_index(grid, [&](const Sizes& idx) {
    for (size_t k = 0; k < in.size(); ++k) r.v.push_back(in[k].v[idx[k]]);
  });
  return r;
}

TEST(DecomposeCartesianProd, OneTwoAndThreeInputs) {
  std::vector<Array> in = {random({3}, 1), random({2}, 2), random({4}, 3)};
  for (size_t k = 1; k <= 3; ++k) {
    SCOPED_TRACE(k);
    Case c;
    std::vector<int> ids;
    std::vector<Array> used(in.begin(), in.begin() + k);
    for (const Array& a : used) ids.push_back(c.input(a));
    Array want = reference_cartesian(used);
    c.op("cartesian_prod", "default", {Arg::tensor_list(ids)}, want.sizes);
    run_and_compare(c, {want}, "cartesian_prod");
  }
}

TEST(DecomposeCartesianProd, Int64Inputs) {
  std::vector<Array> in = {ints({2}, {7, -3}), ints({3}, {10, 20, 30}), ints({2}, {0, 1})};
  Case c;
  std::vector<int> ids;
  for (const Array& a : in) ids.push_back(c.input(a));
  Array want = reference_cartesian(in);
  c.op("cartesian_prod", "default", {Arg::tensor_list(ids)}, want.sizes, ScalarType::Int64);
  std::vector<Array> got = c.run();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].dtype, ScalarType::Int64);
  EXPECT_EQ(got[0].sizes, (Sizes{12, 3}));
  EXPECT_EQ(got[0].v, want.v);
}

// ---------------------------------------------------------------- _chunk_cat

// ATen: each tensor split along `dim` into `chunks` pieces of ceil(size / chunks), the last
// zero-padded; piece j of every tensor, flattened from `dim`, forms row j of the output dim+1.
Array reference_chunk_cat(const std::vector<Array>& in, int64_t dim, int64_t chunks) {
  Sizes pre(in[0].sizes.begin(), in[0].sizes.begin() + dim);
  std::vector<int64_t> per, widths;
  int64_t width = 0;
  for (const Array& a : in) {
    per.push_back((a.sizes[dim] + chunks - 1) / chunks);
    Sizes inner(a.sizes.begin() + dim + 1, a.sizes.end());
    widths.push_back(per.back() * numel(inner));
    width += widths.back();
  }
  Array r;
  r.sizes = pre;
  r.sizes.push_back(chunks);
  r.sizes.push_back(width);
  r.v.assign(static_cast<size_t>(numel(r.sizes)), 0.0);
  Sizes outer = pre;
  outer.push_back(chunks);
  int64_t row = 0;
  for_each_index(outer, [&](const Sizes& po) {
    int64_t chunk = po.back(), col = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      Sizes inner(in[k].sizes.begin() + dim + 1, in[k].sizes.end()), piece = inner;
      piece.insert(piece.begin(), per[k]);
      for_each_index(piece, [&](const Sizes& pi) {
        int64_t along = chunk * per[k] + pi[0];
        if (along < in[k].sizes[dim]) {
          Sizes idx(po.begin(), po.end() - 1);
          idx.push_back(along);
          idx.insert(idx.end(), pi.begin() + 1, pi.end());
          int64_t q = 0;
          for (size_t d = 0; d < pi.size(); ++d) q = q * piece[d] + pi[d];
          r.v[row * width + col + q] = in[k].at(idx);
        }
      });
      col += widths[k];
    }
    ++row;
  });
  return r;
}

TEST(DecomposeChunkCat, UnevenChunks) {
  struct Param {
    std::vector<Sizes> shapes;
    int64_t dim, chunks;
  };
  for (const Param& p : {Param{{{2, 5, 3}, {2, 3, 2}}, 1, 2},   // 5 -> 3+2(+1 pad), 3 -> 2+1(+1 pad)
                         Param{{{2, 5}, {2, 7}}, -1, 3},          // negative dim
                         Param{{{5, 2}, {4}}, 0, 3},              // dim 0, different ranks (as FSDP's gradients)
                         Param{{{2, 6}, {2, 4}}, 1, 2},           // even
                         Param{{{3, 2}, {1, 3}}, 0, 4}}) {        // more chunks than rows: zero pieces
    SCOPED_TRACE(::testing::Message() << "dim " << p.dim << " chunks " << p.chunks);
    Case c;
    std::vector<Array> in;
    std::vector<int> ids;
    for (size_t k = 0; k < p.shapes.size(); ++k) {
      in.push_back(random(p.shapes[k], static_cast<uint32_t>(k + 1)));
      ids.push_back(c.input(in.back()));
    }
    int64_t dim = p.dim < 0 ? p.dim + static_cast<int64_t>(p.shapes[0].size()) : p.dim;
    Array want = reference_chunk_cat(in, dim, p.chunks);
    c.op("_chunk_cat", "default", {Arg::tensor_list(ids), Arg::integer(p.dim), Arg::integer(p.chunks)}, want.sizes);
    run_and_compare(c, {want}, "_chunk_cat");
  }
}

// ---------------------------------------------------------------- bilinear / _trilinear

// out[..., o] = sum_ij x1[..., i] w[o, i, j] x2[..., j] (+ bias[o]).
Array reference_bilinear(const Array& x1, const Array& x2, const Array& w, const Array* bias) {
  int64_t rows = numel(x1.sizes) / x1.sizes.back(), o = w.sizes[0], ni = w.sizes[1], nj = w.sizes[2];
  Array r;
  r.sizes.assign(x1.sizes.begin(), x1.sizes.end() - 1);
  r.sizes.push_back(o);
  for (int64_t n = 0; n < rows; ++n) {
    for (int64_t q = 0; q < o; ++q) {
      double s = bias != nullptr ? bias->v[q] : 0.0;
      for (int64_t i = 0; i < ni; ++i) {
        for (int64_t j = 0; j < nj; ++j) s += x1.v[n * ni + i] * w.at({q, i, j}) * x2.v[n * nj + j];
      }
      r.v.push_back(s);
    }
  }
  return r;
}

TEST(DecomposeBilinear, WithAndWithoutBias) {
  for (const Sizes& lead : {Sizes{4}, Sizes{2, 3}, Sizes{}}) {
    SCOPED_TRACE(lead.size());
    Sizes s1 = lead, s2 = lead;
    s1.push_back(3);
    s2.push_back(5);
    Array x1 = random(s1, 1), x2 = random(s2, 2), w = random({6, 3, 5}, 3), bias = random({6}, 4);
    Case c;
    int a = c.input(x1), b = c.input(x2), wi = c.input(w), bi = c.input(bias);
    Array with = reference_bilinear(x1, x2, w, &bias), without = reference_bilinear(x1, x2, w, nullptr);
    c.op("bilinear", "default", {Arg::tensor(a), Arg::tensor(b), Arg::tensor(wi), Arg::tensor(bi)}, with.sizes);
    c.op("bilinear", "default", {Arg::tensor(a), Arg::tensor(b), Arg::tensor(wi), Arg::none()}, without.sizes);
    run_and_compare(c, {with, without}, "bilinear");
  }
}

TEST(DecomposeTrilinear, AsBilinearAndWithoutSum) {
  // ATen's bilinear: _trilinear(x1, w, x2, [1, 3], [0], [1, 2], [2, 3]).
  Array x1 = random({4, 3}, 1), w = random({2, 3, 5}, 2), x2 = random({4, 5}, 3);
  Array a = random({2, 3}, 4), b = random({3}, 5), d = random({2, 1}, 6);
  Case c;
  int i1 = c.input(x1), iw = c.input(w), i2 = c.input(x2);
  int ia = c.input(a), ib = c.input(b), id = c.input(d);
  Array want = reference_bilinear(x1, x2, w, nullptr);
  c.op("_trilinear", "default",
       {Arg::tensor(i1), Arg::tensor(iw), Arg::tensor(i2), Arg::int_list({1, 3}), Arg::int_list({0}), Arg::int_list({1, 2}),
        Arg::int_list({2, 3})},
       want.sizes);
  // No expand of a, b unsqueezed at 0 and d as is (size-1 broadcast), no sum: a * b * d elementwise.
  Array prod = floats({2, 3}, {});
  for (int64_t i = 0; i < 2; ++i) for (int64_t j = 0; j < 3; ++j) prod.v.push_back(a.at({i, j}) * b.v[j] * d.v[i]);
  c.op("_trilinear", "default",
       {Arg::tensor(ia), Arg::tensor(ib), Arg::tensor(id), Arg::int_list({}), Arg::int_list({0}), Arg::int_list({}),
        Arg::int_list({})},
       prod.sizes);
  // Sum over dim 0 only.
  Array col = floats({3}, {0, 0, 0});
  for (int64_t i = 0; i < 2; ++i) for (int64_t j = 0; j < 3; ++j) col.v[j] += prod.v[i * 3 + j];
  c.op("_trilinear", "default",
       {Arg::tensor(ia), Arg::tensor(ib), Arg::tensor(id), Arg::int_list({}), Arg::int_list({0}), Arg::int_list({}),
        Arg::int_list({0})},
       col.sizes);
  run_and_compare(c, {want, prod, col}, "_trilinear");
}

// ---------------------------------------------------------------- losses

Array reduce(const std::vector<double>& per, int64_t reduction, const Sizes& none_sizes) {
  if (reduction == kNone) return floats(none_sizes, per);
  double s = 0;
  for (double v : per) s += v;
  return floats({}, {reduction == kSum ? s : s / static_cast<double>(per.size())});
}

TEST(DecomposeCosineEmbeddingLoss, EveryReductionAndMargin) {
  Array x1 = random({5, 4}, 1), x2 = random({5, 4}, 2);
  // Row 3 of x2 is -x1 (cos = -1) and row 4 a multiple of x1 (cos = 1): the hinge and 1 - cos ends.
  for (int64_t j = 0; j < 4; ++j) {
    x2.v[3 * 4 + j] = -x1.v[3 * 4 + j];
    x2.v[4 * 4 + j] = 2 * x1.v[4 * 4 + j];
  }
  Array t = floats({5}, {1, -1, -1, -1, 1});
  for (double margin : {0.0, 0.3, -0.4}) {
    SCOPED_TRACE(margin);
    std::vector<double> per;
    for (int64_t n = 0; n < 5; ++n) {
      double p = 0, m1 = 0, m2 = 0;
      for (int64_t j = 0; j < 4; ++j) {
        p += x1.at({n, j}) * x2.at({n, j});
        m1 += x1.at({n, j}) * x1.at({n, j});
        m2 += x2.at({n, j}) * x2.at({n, j});
      }
      double cos = p / std::sqrt((m1 + 1e-12) * (m2 + 1e-12));
      per.push_back(t.v[n] == 1 ? 1 - cos : std::max(0.0, cos - margin));
    }
    Case c;
    int a = c.input(x1), b = c.input(x2), ti = c.input(t);
    std::vector<Array> want;
    for (int64_t red : {kNone, kMean, kSum}) {
      want.push_back(reduce(per, red, {5}));
      c.op("cosine_embedding_loss", "default", {Arg::tensor(a), Arg::tensor(b), Arg::tensor(ti), Arg::real(margin), Arg::integer(red)},
           want.back().sizes);
    }
    run_and_compare(c, want, "cosine_embedding_loss");
  }
}

TEST(DecomposeCosineEmbeddingLoss, OneDimensionalInputs) {
  Array x1 = random({6}, 3), x2 = random({6}, 4), tp = floats({}, {1}), tn = floats({}, {-1});
  double p = 0, m1 = 0, m2 = 0;
  for (int64_t j = 0; j < 6; ++j) {
    p += x1.v[j] * x2.v[j];
    m1 += x1.v[j] * x1.v[j];
    m2 += x2.v[j] * x2.v[j];
  }
  double cos = p / std::sqrt((m1 + 1e-12) * (m2 + 1e-12));
  Case c;
  int a = c.input(x1), b = c.input(x2), ip = c.input(tp), in = c.input(tn);
  c.op("cosine_embedding_loss", "default", {Arg::tensor(a), Arg::tensor(b), Arg::tensor(ip), Arg::real(0.0), Arg::integer(kNone)}, {});
  c.op("cosine_embedding_loss", "default", {Arg::tensor(a), Arg::tensor(b), Arg::tensor(in), Arg::real(-0.5), Arg::integer(kMean)}, {});
  run_and_compare(c, {floats({}, {1 - cos}), floats({}, {std::max(0.0, cos + 0.5)})}, "cosine_embedding_loss 1-D");
}

// Per row: sum_{j != y} max(0, margin - x[y] + x[j])^p * w[y] / C.
std::vector<double> reference_multi_margin(const Array& x, const Array& t, double p, double margin, const Array* w) {
  int64_t c = x.sizes.back(), rows = numel(x.sizes) / c;
  std::vector<double> per;
  for (int64_t n = 0; n < rows; ++n) {
    int64_t y = static_cast<int64_t>(t.v[n]);
    double s = 0;
    for (int64_t j = 0; j < c; ++j) {
      if (j == y) continue;
      double z = margin - x.v[n * c + y] + x.v[n * c + j];
      if (z > 0) s += (p == 1 ? z : z * z) * (w != nullptr ? w->v[y] : 1.0);
    }
    per.push_back(s / static_cast<double>(c));
  }
  return per;
}

TEST(DecomposeMultiMarginLoss, EveryReductionPowerMarginAndWeight) {
  Array x = random({4, 5}, 1), t = ints({4}, {0, 3, 4, 3}), w = random({5}, 2);
  for (double& v : w.v) v = std::fabs(v) + 0.5;
  for (double p : {1.0, 2.0}) {
    for (double margin : {1.0, 0.5}) {
      for (bool weighted : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "p " << p << " margin " << margin << " weighted " << weighted);
        std::vector<double> per = reference_multi_margin(x, t, p, margin, weighted ? &w : nullptr);
        Case c;
        int xi = c.input(x), ti = c.input(t), wi = weighted ? c.input(w) : -1;
        std::vector<Array> want;
        for (int64_t red : {kNone, kMean, kSum}) {
          want.push_back(reduce(per, red, {4}));
          c.op("multi_margin_loss", "default",
               {Arg::tensor(xi), Arg::tensor(ti), Arg::real(p), Arg::real(margin), weighted ? Arg::tensor(wi) : Arg::none(),
                Arg::integer(red)},
               want.back().sizes);
        }
        run_and_compare(c, want, "multi_margin_loss");
      }
    }
  }
}

TEST(DecomposeMultiMarginLoss, OneDimensionalInputAndIntegerScalars) {
  Array x = random({5}, 7), t0 = ints({}, {2}), t1 = ints({1}, {4});
  Case c;
  int xi = c.input(x), a = c.input(t0), b = c.input(t1);
  std::vector<double> p0 = reference_multi_margin(x, t0, 2, 1, nullptr), p1 = reference_multi_margin(x, t1, 1, 2, nullptr);
  // 0-d target: a 0-d loss even without reduction; [1] target: shape [1].
  c.op("multi_margin_loss", "default", {Arg::tensor(xi), Arg::tensor(a), Arg::integer(2), Arg::integer(1), Arg::none(), Arg::integer(kNone)}, {});
  c.op("multi_margin_loss", "default", {Arg::tensor(xi), Arg::tensor(b), Arg::integer(1), Arg::integer(2), Arg::none(), Arg::integer(kNone)}, {1});
  c.op("multi_margin_loss", "default", {Arg::tensor(xi), Arg::tensor(b), Arg::integer(1), Arg::integer(2)}, {});  // default mean
  run_and_compare(c, {floats({}, p0), floats({1}, p1), floats({}, p1)}, "multi_margin_loss 1-D");
}

// Targets: the labels before the first negative entry. Per row: sum over those target slots j
// and the non-target classes k of max(0, 1 - x[t_j] + x[k]), divided by C.
std::vector<double> reference_multilabel_margin(const Array& x, const Array& t) {
  int64_t c = x.sizes.back(), rows = numel(x.sizes) / c;
  std::vector<double> per;
  for (int64_t n = 0; n < rows; ++n) {
    std::vector<bool> is_target(c, false);
    std::vector<int64_t> labels;
    for (int64_t j = 0; j < c && t.v[n * c + j] >= 0; ++j) labels.push_back(static_cast<int64_t>(t.v[n * c + j]));
    for (int64_t l : labels) is_target[l] = true;
    double s = 0;
    for (int64_t l : labels) {
      for (int64_t k = 0; k < c; ++k) {
        if (!is_target[k]) s += std::max(0.0, 1 - x.v[n * c + l] + x.v[n * c + k]);
      }
    }
    per.push_back(s / static_cast<double>(c));
  }
  return per;
}

TEST(DecomposeMultilabelMarginLoss, TerminatorsAndEveryReduction) {
  Array x = random({5, 4}, 3);
  // Row 0: {3, 0}, the 1 after the terminator ignored; row 1: no label; row 2: every slot a
  // label (no terminator); row 3: a repeated label (counted per slot); row 4: all classes.
  Array t = ints({5, 4}, {3, 0, -1, 1,  -1, 2, 1, 0,  1, 2, 2, 1,  2, 2, -1, -1,  0, 1, 2, 3});
  std::vector<double> per = reference_multilabel_margin(x, t);
  EXPECT_EQ(per[1], 0.0);
  EXPECT_EQ(per[4], 0.0);
  Case c;
  int xi = c.input(x), ti = c.input(t);
  std::vector<Array> want;
  for (int64_t red : {kNone, kMean, kSum}) {
    want.push_back(reduce(per, red, {5}));
    c.op("multilabel_margin_loss", "default", {Arg::tensor(xi), Arg::tensor(ti), Arg::integer(red)}, want.back().sizes);
  }
  run_and_compare(c, want, "multilabel_margin_loss");
}

TEST(DecomposeMultilabelMarginLoss, OneDimensionalInput) {
  Array x = random({5}, 9), t = ints({5}, {4, 1, -1, 0, 3});
  std::vector<double> per = reference_multilabel_margin(x, t);
  Case c;
  int xi = c.input(x), ti = c.input(t);
  c.op("multilabel_margin_loss", "default", {Arg::tensor(xi), Arg::tensor(ti), Arg::integer(kNone)}, {});
  c.op("multilabel_margin_loss", "default", {Arg::tensor(xi), Arg::tensor(ti), Arg::integer(kSum)}, {});
  run_and_compare(c, {floats({}, per), floats({}, per)}, "multilabel_margin_loss 1-D");
}

// ---------------------------------------------------------------- resize_as

TEST(DecomposeResizeAs, KeepsTheDataInOrder) {
  Array x = random({2, 3}, 1);
  Case c;
  int xi = c.input(x), same = c.input(random({3, 2}, 2)), smaller = c.input(random({4}, 3)), larger = c.input(random({2, 4}, 4));
  c.op("resize_as", "default", {Arg::tensor(xi), Arg::tensor(same)}, {3, 2});
  c.op("resize_as", "default", {Arg::tensor(xi), Arg::tensor(smaller)}, {4});
  c.op("resize_as", "default", {Arg::tensor(xi), Arg::tensor(larger)}, {2, 4});
  std::vector<Array> got = c.run();
  ASSERT_EQ(got.size(), 3u);
  expect_close(got[0], floats({3, 2}, x.v), "same numel");
  expect_close(got[1], floats({4}, std::vector<double>(x.v.begin(), x.v.begin() + 4)), "smaller");
  // Growing: the first 6 elements are the input's (the rest is unspecified in ATen).
  ASSERT_EQ(got[2].sizes, (Sizes{2, 4}));
  for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(got[2].v[i], x.v[i], 1e-6) << i;
}

// ---------------------------------------------------------------- weight norm

// The norms of v over every dim but `dim` (dim == -1: the whole tensor, one value), one per
// index of `dim`.
std::vector<double> reference_norms(const Array& v, int64_t dim, double p) {
  const int64_t rank = static_cast<int64_t>(v.sizes.size());
  const int64_t d = dim == -1 ? -1 : dim < 0 ? dim + rank : dim;
  std::vector<double> acc(d < 0 ? 1 : static_cast<size_t>(v.sizes[d]), 0.0);
  for_each_index(v.sizes, [&](const Sizes& idx) { acc[d < 0 ? 0 : idx[d]] += std::pow(std::fabs(v.at(idx)), p); });
  for (double& a : acc) a = std::pow(a, 1.0 / p);
  return acc;
}

// _weight_norm(v, g, dim) = v * g / norm_except_dim(v, 2, dim), g holding one value per index of dim.
Array reference_weight_norm(const Array& v, const Array& g, int64_t dim) {
  const int64_t rank = static_cast<int64_t>(v.sizes.size());
  const int64_t d = dim == -1 ? -1 : dim < 0 ? dim + rank : dim;
  std::vector<double> norms = reference_norms(v, dim, 2.0);
  Array w = floats(v.sizes, {});
  for_each_index(v.sizes, [&](const Sizes& idx) {
    const size_t k = d < 0 ? 0 : static_cast<size_t>(idx[d]);
    w.v.push_back(v.at(idx) * g.v[k] / norms[k]);
  });
  return w;
}

TEST(DecomposeWeightNorm, EveryDimWholeTensorAndOneDimensional) {
  struct C {
    Sizes v, g;
    int64_t dim;
  };
  // dim 0 (nn.utils.weight_norm's default), last dim, middle, negative (wraps), -1 (dim=None:
  // the whole tensor), 1-D (no other dim: |v|).
  const C cases[] = {{{4, 3, 2}, {4, 1, 1}, 0}, {{4, 3, 2}, {1, 1, 2}, 2}, {{4, 3, 2}, {1, 3, 1}, 1},
                     {{4, 3, 2}, {1, 3, 1}, -2}, {{4, 3, 2}, {}, -1},       {{5}, {5}, 0},
                     {{3, 4}, {1, 4}, 1}};
  for (const C& cs : cases) {
    SCOPED_TRACE(cs.dim);
    Array v = random(cs.v, 11), g = random(cs.g, 12);
    Case c;
    int vi = c.input(v), gi = c.input(g);
    Array want = reference_weight_norm(v, g, cs.dim);
    c.op("_weight_norm", "default", {Arg::tensor(vi), Arg::tensor(gi), Arg::integer(cs.dim)}, want.sizes);
    run_and_compare(c, {want}, "_weight_norm");
  }
}

TEST(DecomposeWeightNorm, InterfaceReturnsNormsShapedLikeG) {
  Array v = random({4, 3, 2}, 13), g = random({1, 1, 2}, 14);
  Case c;
  int vi = c.input(v), gi = c.input(g);
  Array w = reference_weight_norm(v, g, 2);
  std::vector<double> n = reference_norms(v, 2, 2.0);
  c.ops("_weight_norm_interface", "default", {Arg::tensor(vi), Arg::tensor(gi), Arg::integer(2)}, {w.sizes, g.sizes});
  run_and_compare(c, {w, floats(g.sizes, n)}, "_weight_norm_interface");
}

TEST(DecomposeNormExceptDim, PowerAndDims) {
  Array v = random({3, 4, 2}, 15);
  Case c;
  int vi = c.input(v);
  c.op("norm_except_dim", "default", {Arg::tensor(vi), Arg::integer(2), Arg::integer(1)}, {1, 4, 1});
  c.op("norm_except_dim", "default", {Arg::tensor(vi), Arg::integer(3), Arg::integer(0)}, {3, 1, 1});
  c.op("norm_except_dim", "default", {Arg::tensor(vi), Arg::integer(2), Arg::integer(-1)}, {});
  run_and_compare(c, {floats({1, 4, 1}, reference_norms(v, 1, 2.0)), floats({3, 1, 1}, reference_norms(v, 0, 3.0)),
                      floats({}, reference_norms(v, -1, 2.0))},
                  "norm_except_dim");
}

}  // namespace
}  // namespace exporter
}  // namespace ember
