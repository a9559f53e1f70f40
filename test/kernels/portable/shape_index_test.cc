// Shape/view ops, cat/stack/split, indexing, factories and symbolic-int ops.
#include <cmath>

#include "gtest/gtest.h"
#include "test/kernels/portable/kernel_test_util.h"

namespace ember {
namespace testing {
namespace {

using V = std::vector<double>;
using S = std::vector<int64_t>;
constexpr ScalarType F32 = ScalarType::Float32;
constexpr ScalarType I64 = ScalarType::Int64;

V iota(int n) {
  V v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

TEST(Shape, ViewInfersMinusOne) {
  KernelTest k;
  EValue* out = k.out(F32, {3, 2});
  ASSERT_EQ(k.run("aten::view.default", {k.f({2, 3}, iota(6)), k.ilist({-1, 2}), out}), Error::Ok);
  EXPECT_EQ(k.shape(out), (S{3, 2}));
  EXPECT_EQ(k.vals(out), iota(6));
  EXPECT_EQ(k.run("aten::view.default", {k.f({2, 3}, iota(6)), k.ilist({4, -1}), out}), Error::InvalidArgument);
  EXPECT_EQ(k.run("aten::view.default", {k.f({2, 3}, iota(6)), k.ilist({-1, -1}), out}), Error::InvalidArgument);
}

TEST(Shape, PermuteTransposeExpand) {
  KernelTest k;
  EValue* x = k.f({2, 3}, iota(6));
  EValue* out = k.out(F32, {3, 2});
  ASSERT_EQ(k.run("aten::permute.default", {x, k.ilist({1, 0}), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{0, 3, 1, 4, 2, 5}));
  ASSERT_EQ(k.run("aten::transpose.int", {x, k.i(-1), k.i(0), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{0, 3, 1, 4, 2, 5}));
  ASSERT_EQ(k.run("aten::t.default", {x, out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{0, 3, 1, 4, 2, 5}));
  EValue* e = k.out(F32, {2, 2, 3});
  ASSERT_EQ(k.run("aten::expand.default", {k.f({2, 1}, {7, 8}), k.ilist({2, -1, 3}), k.b(false), e}), Error::Ok);
  EXPECT_EQ(k.vals(e), (V{7, 7, 7, 8, 8, 8, 7, 7, 7, 8, 8, 8}));
  EXPECT_NE(k.run("aten::expand.default", {k.f({2}, {1, 2}), k.ilist({3}), k.b(false), k.out(F32, {3})}), Error::Ok);
  EXPECT_NE(k.run("aten::permute.default", {x, k.ilist({0, 0}), out}), Error::Ok);
}

TEST(Shape, PermuteLarge4D) {
  KernelTest k;
  const int n = 2 * 3 * 4 * 5;
  EValue* out = k.out(F32, {2, 4, 5, 3});
  ASSERT_EQ(k.run("aten::permute.default", {k.f({2, 3, 4, 5}, iota(n)), k.ilist({0, 2, 3, 1}), out}), Error::Ok);
  V r = k.vals(out);
  // out[b, h, w, c] = in[b, c, h, w]
  EXPECT_EQ(r[((1 * 4 + 2) * 5 + 3) * 3 + 1], ((1 * 3 + 1) * 4 + 2) * 5 + 3);
}

TEST(Shape, SqueezeUnsqueezeFlatten) {
  KernelTest k;
  EValue* x = k.f({1, 3, 1}, {1, 2, 3});
  EValue* o1 = k.out(F32, {3});
  ASSERT_EQ(k.run("aten::squeeze.default", {x, o1}), Error::Ok);
  EXPECT_EQ(k.shape(o1), (S{3}));
  EValue* o2 = k.out(F32, {3, 1});
  ASSERT_EQ(k.run("aten::squeeze.dims", {x, k.ilist({0, 1}), o2}), Error::Ok);
  EXPECT_EQ(k.shape(o2), (S{3, 1}));
  EValue* o3 = k.out(F32, {1, 3, 1, 1});
  ASSERT_EQ(k.run("aten::unsqueeze.default", {x, k.i(-1), o3}), Error::Ok);
  EXPECT_EQ(k.shape(o3), (S{1, 3, 1, 1}));
  EValue* o4 = k.out(F32, {3});
  ASSERT_EQ(k.run("aten::flatten.using_ints", {x, k.i(0), k.i(-1), o4}), Error::Ok);
  EXPECT_EQ(k.vals(o4), (V{1, 2, 3}));
  EValue* o5 = k.out(F32, {1, 3, 1});
  ASSERT_EQ(k.run("aten::unflatten.int", {o4, k.i(0), k.ilist({1, -1, 1}), o5}), Error::Ok);
  EXPECT_EQ(k.shape(o5), (S{1, 3, 1}));
}

TEST(Shape, SliceSelectNarrowFlipRoll) {
  KernelTest k;
  EValue* x = k.f({2, 5}, iota(10));
  EValue* o = k.out(F32, {2, 2});
  ASSERT_EQ(k.run("aten::slice.Tensor", {x, k.i(1), k.i(1), k.i(100), k.i(2), o}), Error::Ok);
  EXPECT_EQ(k.vals(o), (V{1, 3, 6, 8}));
  ASSERT_EQ(k.run("aten::slice.Tensor", {x, k.i(-1), k.i(-2), k.none(), k.i(1), o}), Error::Ok);
  EXPECT_EQ(k.vals(o), (V{3, 4, 8, 9}));
  EValue* s = k.out(F32, {5});
  ASSERT_EQ(k.run("aten::select.int", {x, k.i(0), k.i(-1), s}), Error::Ok);
  EXPECT_EQ(k.vals(s), (V{5, 6, 7, 8, 9}));
  EXPECT_EQ(k.run("aten::select.int", {x, k.i(0), k.i(2), s}), Error::OutOfBounds);
  ASSERT_EQ(k.run("aten::narrow.default", {x, k.i(1), k.i(3), k.i(2), o}), Error::Ok);
  EXPECT_EQ(k.vals(o), (V{3, 4, 8, 9}));
  EValue* f = k.out(F32, {2, 5});
  ASSERT_EQ(k.run("aten::flip.default", {x, k.ilist({0, 1}), f}), Error::Ok);
  EXPECT_EQ(k.vals(f), (V{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  ASSERT_EQ(k.run("aten::roll.default", {x, k.ilist({1}), k.ilist({1}), f}), Error::Ok);
  EXPECT_EQ(k.vals(f), (V{4, 0, 1, 2, 3, 9, 5, 6, 7, 8}));
}

TEST(Shape, RepeatTileCloneToCopy) {
  KernelTest k;
  EValue* o = k.out(F32, {2, 4});
  ASSERT_EQ(k.run("aten::repeat.default", {k.f({2}, {1, 2}), k.ilist({2, 2}), o}), Error::Ok);
  EXPECT_EQ(k.vals(o), (V{1, 2, 1, 2, 1, 2, 1, 2}));
  EValue* ri = k.out(F32, {4});
  ASSERT_EQ(k.run("aten::repeat_interleave.self_int", {k.f({2}, {1, 2}), k.i(2), k.i(0), k.none(), ri}), Error::Ok);
  EXPECT_EQ(k.vals(ri), (V{1, 1, 2, 2}));
  // repeat_interleave.Tensor: [1, 2] -> [0, 1, 1]. A negative repeat once made the copy write
  // past the (smaller) total, and repeats summing past int64 overflowed (hostile programs).
  EValue* rt = k.out(I64, {3});
  ASSERT_EQ(k.run("aten::repeat_interleave.Tensor", {k.l({2}, {1, 2}), k.none(), rt}), Error::Ok);
  EXPECT_EQ(k.ivals(rt), (S{0, 1, 1}));
  EXPECT_EQ(k.run("aten::repeat_interleave.Tensor", {k.l({2}, {5, -5}), k.none(), k.out(I64, {8})}),
            Error::InvalidArgument);
  EXPECT_NE(k.last_error.find("non-negative"), std::string::npos) << k.last_error;
  const double big = 4611686018427387904.0;  // 2^62: two of them pass int64
  EXPECT_EQ(k.run("aten::repeat_interleave.Tensor", {k.l({2}, {big, big}), k.none(), k.out(I64, {8})}),
            Error::InvalidArgument);
  EXPECT_EQ(k.run("aten::repeat_interleave.self_Tensor", {k.f({2}, {1, 2}), k.l({2}, {big, big}), k.i(0), k.none(),
                                                         k.out(F32, {8})}),
            Error::InvalidArgument);
  EXPECT_NE(k.last_error.find("overflows"), std::string::npos) << k.last_error;
  EValue* c = k.out(I64, {3});
  ASSERT_EQ(k.run("aten::_to_copy.default", {k.f({3}, {1.7, -2.2, 3}), k.none(), k.none(), k.none(), k.none(),
                                            k.b(false), k.none(), c}), Error::Ok);
  EXPECT_EQ(k.ivals(c), (S{1, -2, 3}));
  EValue* cl = k.out(F32, {3});
  ASSERT_EQ(k.run("aten::clone.default", {k.f({3}, {1, 2, 3}), k.none(), cl}), Error::Ok);
  EXPECT_EQ(k.vals(cl), (V{1, 2, 3}));
  EValue* tr = k.out(F32, {3, 3});
  ASSERT_EQ(k.run("aten::tril.default", {k.f({3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1}), k.i(0), tr}), Error::Ok);
  EXPECT_EQ(k.vals(tr), (V{1, 0, 0, 1, 1, 0, 1, 1, 1}));
  EValue* p = k.out(F32, {4});
  ASSERT_EQ(k.run("aten::constant_pad_nd.default", {k.f({2}, {1, 2}), k.ilist({1, 1}), k.d(9), p}), Error::Ok);
  EXPECT_EQ(k.vals(p), (V{9, 1, 2, 9}));
  EValue* rp = k.out(F32, {5});
  ASSERT_EQ(k.run("aten::pad.default", {k.f({3}, {1, 2, 3}), k.ilist({1, 1}), k.str("reflect"), k.none(), rp}), Error::Ok);
  EXPECT_EQ(k.vals(rp), (V{2, 1, 2, 3, 2}));
}

TEST(CatSplit, CatStack) {
  KernelTest k;
  EValue* out = k.out(F32, {2, 3});
  ASSERT_EQ(k.run("aten::cat.default", {k.tlist({k.f({2, 1}, {1, 2}), k.f({2, 2}, {3, 4, 5, 6})}), k.i(-1), out}),
            Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1, 3, 4, 2, 5, 6}));
  // Legacy empty 1-D inputs are skipped; mixed dtypes convert.
  EValue* o2 = k.out(F32, {3});
  ASSERT_EQ(k.run("aten::cat.default", {k.tlist({k.f({0}, {}), k.l({3}, {1, 2, 3})}), k.i(0), o2}), Error::Ok);
  EXPECT_EQ(k.vals(o2), (V{1, 2, 3}));
  EValue* s = k.out(F32, {2, 2});
  ASSERT_EQ(k.run("aten::stack.default", {k.tlist({k.f({2}, {1, 2}), k.f({2}, {3, 4})}), k.i(1), s}), Error::Ok);
  EXPECT_EQ(k.vals(s), (V{1, 3, 2, 4}));
  EXPECT_NE(k.run("aten::cat.default", {k.tlist({k.f({2, 1}, {1, 2}), k.f({3, 1}, {3, 4, 5})}), k.i(1), out}), Error::Ok);
}

TEST(CatSplit, SplitUnbindChunk) {
  KernelTest k;
  EValue* x = k.f({5, 2}, iota(10));
  EValue* a = k.out(F32, {2, 2});
  EValue* b = k.out(F32, {2, 2});
  EValue* c = k.out(F32, {2, 2});
  ASSERT_EQ(k.run("aten::split.Tensor", {x, k.i(2), k.i(0), a, b, c}), Error::Ok);
  EXPECT_EQ(k.vals(a), (V{0, 1, 2, 3}));
  EXPECT_EQ(k.shape(c), (S{1, 2}));
  EXPECT_EQ(k.vals(c), (V{8, 9}));
  EValue* p = k.out(F32, {5, 1});
  EValue* q = k.out(F32, {5, 1});
  ASSERT_EQ(k.run("aten::split_with_sizes.default", {x, k.ilist({1, 1}), k.i(-1), p, q}), Error::Ok);
  EXPECT_EQ(k.vals(q), (V{1, 3, 5, 7, 9}));
  EValue* u0 = k.out(F32, {5});
  EValue* u1 = k.out(F32, {5});
  ASSERT_EQ(k.run("aten::unbind.int", {x, k.i(1), u0, u1}), Error::Ok);
  EXPECT_EQ(k.vals(u0), (V{0, 2, 4, 6, 8}));
  EValue* h0 = k.out(F32, {3, 2});
  EValue* h1 = k.out(F32, {3, 2});
  ASSERT_EQ(k.run("aten::chunk.default", {x, k.i(2), k.i(0), h0, h1}), Error::Ok);
  EXPECT_EQ(k.shape(h1), (S{2, 2}));
  // Sizes that do not cover the input are an error.
  EXPECT_NE(k.run("aten::split_with_sizes.default", {x, k.ilist({1, 2}), k.i(0), p, q}), Error::Ok);
}

TEST(Index, IndexTensorAdvanced) {
  KernelTest k;
  EValue* x = k.f({3, 4}, iota(12));
  EValue* out = k.out(F32, {2, 4});
  ASSERT_EQ(k.run("aten::index.Tensor", {x, k.tlist({k.l({2}, {2, -3})}), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{8, 9, 10, 11, 0, 1, 2, 3}));
  // x[:, [1, 3]]
  EValue* o2 = k.out(F32, {3, 2});
  ASSERT_EQ(k.run("aten::index.Tensor", {x, k.tlist({nullptr, k.l({2}, {1, 3})}), o2}), Error::Ok);
  EXPECT_EQ(k.vals(o2), (V{1, 3, 5, 7, 9, 11}));
  // x[[0, 2], [1, 3]] -> pairs
  EValue* o3 = k.out(F32, {2});
  ASSERT_EQ(k.run("aten::index.Tensor", {x, k.tlist({k.l({2}, {0, 2}), k.l({2}, {1, 3})}), o3}), Error::Ok);
  EXPECT_EQ(k.vals(o3), (V{1, 11}));
  // Boolean mask over rows.
  EValue* o4 = k.out(F32, {3, 4});
  ASSERT_EQ(k.run("aten::index.Tensor", {x, k.tlist({k.bt({3}, {1, 0, 1})}), o4}), Error::Ok);
  EXPECT_EQ(k.shape(o4), (S{2, 4}));
  EXPECT_EQ(k.vals(o4), (V{0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(k.run("aten::index.Tensor", {x, k.tlist({k.l({1}, {3})}), k.out(F32, {1, 4})}), Error::OutOfBounds);
}

TEST(Index, IndexPutGatherScatter) {
  KernelTest k;
  EValue* out = k.out(F32, {4});
  ASSERT_EQ(k.run("aten::index_put.default", {k.f({4}, {0, 0, 0, 0}), k.tlist({k.l({3}, {1, 3, 1})}),
                                             k.f({1}, {2}), k.b(true), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{0, 4, 0, 2}));
  EValue* g = k.out(F32, {2, 2});
  ASSERT_EQ(k.run("aten::gather.default", {k.f({2, 3}, iota(6)), k.i(1), k.l({2, 2}, {2, 0, 1, 1}), k.b(false), g}),
            Error::Ok);
  EXPECT_EQ(k.vals(g), (V{2, 0, 4, 4}));
  EValue* s = k.out(F32, {2, 3});
  ASSERT_EQ(k.run("aten::scatter_add.default", {k.f({2, 3}, {0, 0, 0, 0, 0, 0}), k.i(1), k.l({2, 2}, {0, 0, 2, 1}),
                                                k.f({2, 2}, {1, 2, 3, 4}), s}), Error::Ok);
  EXPECT_EQ(k.vals(s), (V{3, 0, 0, 0, 4, 3}));
  ASSERT_EQ(k.run("aten::scatter.value", {k.f({2, 3}, iota(6)), k.i(0), k.l({1, 2}, {1, 0}), k.d(-1), s}), Error::Ok);
  EXPECT_EQ(k.vals(s), (V{0, -1, 2, -1, 4, 5}));
  EValue* is = k.out(F32, {2, 2});
  ASSERT_EQ(k.run("aten::index_select.default", {k.f({2, 3}, iota(6)), k.i(1), k.l({2}, {2, 0}), is}), Error::Ok);
  EXPECT_EQ(k.vals(is), (V{2, 0, 5, 3}));
}

TEST(Index, IndexCopyInPlaceKvCache) {
  KernelTest k;
  EValue* cache = k.f({4, 2}, {0, 0, 0, 0, 0, 0, 0, 0});
  ASSERT_EQ(k.run("aten::index_copy_.default", {cache, k.i(0), k.l({2}, {1, 2}), k.f({2, 2}, {1, 2, 3, 4}), cache}),
            Error::Ok);
  EXPECT_EQ(k.vals(cache), (V{0, 0, 1, 2, 3, 4, 0, 0}));
  EXPECT_EQ(k.run("aten::index_copy_.default", {cache, k.i(0), k.l({1}, {4}), k.f({1, 2}, {1, 2}), cache}),
            Error::OutOfBounds);
}

TEST(Index, NonzeroMaskedSelect) {
  KernelTest k;
  EValue* nz = k.out(I64, {4, 2});
  ASSERT_EQ(k.run("aten::nonzero.default", {k.f({2, 2}, {0, 1, 1, 0}), nz}), Error::Ok);
  EXPECT_EQ(k.shape(nz), (S{2, 2}));
  EXPECT_EQ(k.ivals(nz), (S{0, 1, 1, 0}));
  // nonzero_numpy: one [count] tensor per dim; a 0-d input counts as 1-D.
  EValue* rows = k.out(I64, {4});
  EValue* cols = k.out(I64, {4});
  ASSERT_EQ(k.run("aten::nonzero_numpy.default", {k.f({2, 2}, {0, 1, 1, 1}), rows, cols}), Error::Ok);
  EXPECT_EQ(k.ivals(rows), (S{0, 1, 1}));
  EXPECT_EQ(k.ivals(cols), (S{1, 0, 1}));
  EValue* scalar_idx = k.out(I64, {1});
  ASSERT_EQ(k.run("aten::nonzero_numpy.default", {k.f({}, {0}), scalar_idx}), Error::Ok);
  EXPECT_EQ(k.shape(scalar_idx), (S{0}));
  EXPECT_NE(k.run("aten::nonzero_numpy.default", {k.f({2, 2}, {0, 1, 1, 1}), rows}), Error::Ok);  // one output per dim
  EValue* ms = k.out(F32, {4});
  ASSERT_EQ(k.run("aten::masked_select.default", {k.f({2, 2}, {1, 2, 3, 4}), k.bt({2}, {0, 1}), ms}), Error::Ok);
  EXPECT_EQ(k.vals(ms), (V{2, 4}));
}

TEST(Factory, FullArangeZeros) {
  KernelTest k;
  EValue* f = k.out(F32, {2, 2});
  ASSERT_EQ(k.run("aten::full.default", {k.ilist({2, 2}), k.d(1.5), k.none(), k.none(), k.none(), k.none(), f}),
            Error::Ok);
  EXPECT_EQ(k.vals(f), (V{1.5, 1.5, 1.5, 1.5}));
  EValue* a = k.out(I64, {5});
  ASSERT_EQ(k.run("aten::arange.start_step", {k.i(1), k.i(10), k.i(3), k.none(), k.none(), k.none(), k.none(), a}),
            Error::Ok);
  EXPECT_EQ(k.shape(a), (S{3}));
  EXPECT_EQ(k.ivals(a), (S{1, 4, 7}));
  EValue* af = k.out(F32, {4});
  ASSERT_EQ(k.run("aten::arange.default", {k.d(2.0), k.none(), k.none(), k.none(), k.none(), af}), Error::Ok);
  EXPECT_EQ(k.vals(af), (V{0, 1}));
  EValue* z = k.out(F32, {3});
  ASSERT_EQ(k.run("aten::ones_like.default", {k.f({3}, {7, 7, 7}), k.none(), k.none(), k.none(), k.none(), k.none(), z}),
            Error::Ok);
  EXPECT_EQ(k.vals(z), (V{1, 1, 1}));
  EValue* st = k.out(I64, {});
  ASSERT_EQ(k.run("aten::scalar_tensor.default", {k.i(42), k.none(), k.none(), k.none(), k.none(), st}), Error::Ok);
  EXPECT_EQ(k.ivals(st), (S{42}));
  EXPECT_EQ(k.run("aten::full.default", {k.ilist({3, 3}), k.d(1.5), k.none(), k.none(), k.none(), k.none(), f}),
            Error::OutOfBounds);
}

TEST(Sym, SizeAndOperators) {
  KernelTest k;
  EValue* r = k.none();
  ASSERT_EQ(k.run("aten::sym_size.int", {k.f({2, 7}, {}), k.i(-1), r}), Error::Ok);
  ASSERT_TRUE(r->is_int());
  EXPECT_EQ(r->as_int, 7);
  EValue* s = k.none();
  ASSERT_EQ(k.run("_operator::floordiv.default", {k.i(-7), k.i(2), s}), Error::Ok);
  EXPECT_EQ(s->as_int, -4);
  ASSERT_EQ(k.run("_operator::mod.default", {k.i(-7), k.i(2), s}), Error::Ok);
  EXPECT_EQ(s->as_int, 1);
  ASSERT_EQ(k.run("_operator::mul.default", {k.i(6), k.i(7), s}), Error::Ok);
  EXPECT_EQ(s->as_int, 42);
  ASSERT_EQ(k.run("_operator::ge.default", {k.i(3), k.i(3), s}), Error::Ok);
  EXPECT_TRUE(s->is_bool() && s->as_bool);
  ASSERT_EQ(k.run("_operator::truediv.default", {k.i(3), k.i(2), s}), Error::Ok);
  EXPECT_TRUE(s->is_double() && s->as_double == 1.5);
  EXPECT_NE(k.run("_operator::floordiv.default", {k.i(1), k.i(0), s}), Error::Ok);
  EXPECT_NE(k.run("aten::_assert_scalar.default", {k.b(false), k.str("x")}), Error::Ok);
  EXPECT_EQ(k.run("aten::_assert_scalar.default", {k.b(true), k.str("x")}), Error::Ok);
}

TEST(Registry, ModelOpsHaveKernels) {
  // Ops of the shared real models that belong to this part of the kernel library.
  const char* ops[] = {
      "aten::add.Tensor", "aten::add_.Tensor", "aten::__and__.Tensor", "aten::_assert_tensor_metadata.default",
      "aten::_to_copy.default", "aten::alias.default", "aten::any.dim", "aten::arange.default",
      "aten::arange.start_step", "aten::bitwise_and.Tensor", "aten::cat.default", "aten::clamp.default",
      "aten::clone.default", "aten::contiguous.default", "aten::cumsum.default", "aten::diff.default",
      "aten::div.Tensor", "aten::dropout.default", "aten::dropout_.default", "aten::eq.Scalar", "aten::eq.Tensor",
      "aten::expand.default", "aten::flatten.using_ints", "aten::full.default", "aten::full_like.default",
      "aten::gather.default", "aten::ge.Scalar", "aten::gelu.default", "aten::hardsigmoid.default",
      "aten::hardswish_.default", "aten::hardtanh.default", "aten::hardtanh_.default", "aten::index.Tensor",
      "aten::index_copy_.default", "aten::index_put.default", "aten::le.Tensor", "aten::logical_not.default",
      "aten::mean.dim", "aten::mul.Scalar", "aten::mul.Tensor", "aten::ne.Scalar", "aten::neg.default",
      "aten::new_ones.default", "aten::permute.default", "aten::pow.Tensor_Scalar", "aten::relu.default",
      "aten::relu_.default", "aten::repeat_interleave.self_int", "aten::reshape.default", "aten::rsqrt.default",
      "aten::scalar_tensor.default", "aten::select.int", "aten::sigmoid.default", "aten::silu.default",
      "aten::silu_.default", "aten::slice.Tensor", "aten::split.Tensor", "aten::split_with_sizes.default",
      "aten::squeeze.dim", "aten::squeeze.dims", "aten::sub.Tensor", "aten::sym_size.int", "aten::tanh.default",
      "aten::to.device", "aten::to.dtype_layout", "aten::transpose.int", "aten::unflatten.int",
      "aten::unsqueeze.default", "aten::view.default", "aten::where.self", "aten::zeros.default"};
  for (const char* op : ops) EXPECT_NE(find_kernel(op), nullptr) << op;
}

}  // namespace
}  // namespace testing
}  // namespace ember
