// Resampling of the trailing 1-3 spatial dims of [N, C, ...] / [C, ...] tensors (float32 and
// float64): nearest (upsample_nearest{1,2,3}d), nearest-exact (_upsample_nearest_exact{1,2,3}d),
// linear / bilinear / trilinear, bicubic, and antialiased bilinear / bicubic
// (_upsample_{bilinear,bicubic}2d_aa), each as .vec (output_size? + scale_factors?) and
// .default (output_size + per-dim scales?).
//
// Source coordinates follow PyTorch's CPU kernels: the scale is (in-1)/(out-1) with
// align_corners, else 1/scale_factor when a factor was given, else in/out (all in float);
// linear and cubic sources are scale*(i+0.5)-0.5 (clamped at 0 for linear), cubic uses
// A = -0.75 with clamped taps; antialiased filters widen the support by the scale when
// downsampling (PIL's scheme) and normalise the weights. Parallel over channel planes.
#include <cmath>

#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

enum class Mode { Nearest, NearestExact, Linear, Cubic, LinearAA, CubicAA };

struct Resample {
  int spatial = 1;
  int64_t in[3] = {1, 1, 1};   // d, h, w (leading unused dims are 1)
  int64_t out[3] = {1, 1, 1};
  double scales[3] = {0, 0, 0};  // 0: none
  bool align_corners = false;
  int64_t planes = 1;
};

// ---- source index math ----

float compute_scale_value(double scale, int64_t in, int64_t out) {
  return scale > 0 ? static_cast<float>(1.0 / scale) : static_cast<float>(in) / static_cast<float>(out);
}

float area_scale(int64_t in, int64_t out, bool align_corners, double scale) {
  if (align_corners) {
    return out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
  }
  return compute_scale_value(scale, in, out);
}

float source_index(float scale, int64_t i, bool align_corners, bool cubic) {
  if (align_corners) return scale * static_cast<float>(i);
  const float src = static_cast<float>(static_cast<double>(scale) * (static_cast<double>(i) + 0.5) - 0.5);
  return (!cubic && src < 0.0f) ? 0.0f : src;
}

int64_t nearest_index(int64_t i, int64_t in, int64_t out, double scale, bool exact) {
  if (!exact) {
    if (out == in) return i;
    if (out == 2 * in) return i >> 1;
    const float s = compute_scale_value(scale, in, out);
    const int64_t v = static_cast<int64_t>(std::floor(static_cast<float>(i) * s));
    return v < in - 1 ? v : in - 1;
  }
  const float s = compute_scale_value(scale, in, out);
  const int64_t v = static_cast<int64_t>(std::floor(static_cast<float>((static_cast<double>(i) + 0.5) * s)));
  return v < in - 1 ? v : in - 1;
}

// Linear taps: x0, x1 (x1 = x0 or x0+1) and weights.
void linear_taps(float scale, int64_t i, int64_t in, bool align_corners, int64_t* idx, float* w) {
  const float real = source_index(scale, i, align_corners, false);
  int64_t i0 = static_cast<int64_t>(std::floor(real));
  if (i0 > in - 1) i0 = in - 1;
  float l = real - static_cast<float>(i0);
  l = l < 0.0f ? 0.0f : (l > 1.0f ? 1.0f : l);
  idx[0] = i0;
  idx[1] = i0 + (i0 < in - 1 ? 1 : 0);
  w[0] = 1.0f - l;
  w[1] = l;
}

inline float cubic1(float x, float a) { return ((a + 2) * x - (a + 3)) * x * x + 1; }
inline float cubic2(float x, float a) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; }

void cubic_taps(float scale, int64_t i, int64_t in, bool align_corners, int64_t* idx, float* w) {
  const float real = source_index(scale, i, align_corners, true);
  int64_t i0 = static_cast<int64_t>(std::floor(real));
  if (i0 > in - 1) i0 = in - 1;
  float t = real - static_cast<float>(i0);
  t = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
  const float a = -0.75f;
  w[0] = cubic2(t + 1.0f, a);
  w[1] = cubic1(t, a);
  w[2] = cubic1(1.0f - t, a);
  w[3] = cubic2(2.0f - t, a);
  for (int j = 0; j < 4; ++j) {
    int64_t v = i0 - 1 + j;
    v = v < in - 1 ? v : in - 1;
    idx[j] = v > 0 ? v : 0;
  }
}

// Antialiasing filters (support 1 for linear, 2 for cubic with a = -0.5).
inline float aa_linear(float x) {
  x = std::fabs(x);
  return x < 1.0f ? 1.0f - x : 0.0f;
}
inline float aa_cubic(float x) {
  const float a = -0.5f;
  x = std::fabs(x);
  if (x < 1.0f) return cubic1(x, a);
  if (x < 2.0f) return cubic2(x, a);
  return 0.0f;
}

constexpr int kMaxAaTaps = 256;

// Antialiased taps of output i: first input index, count and normalised weights.
bool aa_taps(bool cubic, float scale, int64_t i, int64_t in, int64_t* first, int64_t* count, float* w) {
  const float interp = cubic ? 4.0f : 2.0f;
  const float support = scale >= 1.0f ? interp * 0.5f * scale : interp * 0.5f;
  const float center = scale * static_cast<float>(static_cast<double>(i) + 0.5);
  const float invscale = scale >= 1.0f ? 1.0f / scale : 1.0f;
  int64_t lo = static_cast<int64_t>(center - support + 0.5f);
  if (lo < 0) lo = 0;
  int64_t hi = static_cast<int64_t>(center + support + 0.5f);
  if (hi > in) hi = in;
  const int64_t n = hi - lo;
  if (n > kMaxAaTaps) return false;
  float total = 0.0f;
  for (int64_t j = 0; j < n; ++j) {
    const float x = (static_cast<float>(j + lo) - center + 0.5f) * invscale;
    w[j] = cubic ? aa_cubic(x) : aa_linear(x);
    total += w[j];
  }
  if (total != 0.0f) {
    for (int64_t j = 0; j < n; ++j) w[j] /= total;
  }
  *first = lo;
  *count = n > 0 ? n : 0;
  return true;
}

// ---- kernels ----

template <typename T>
void run_nearest(KernelContext& ctx, const Resample& r, bool exact, const T* x, T* o) {
  const int64_t in_plane = r.in[0] * r.in[1] * r.in[2];
  const int64_t out_plane = r.out[0] * r.out[1] * r.out[2];
  parallel_for_range(ctx, r.planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const T* xp = x + p * in_plane;
      T* op = o + p * out_plane;
      for (int64_t od = 0; od < r.out[0]; ++od) {
        const int64_t id = nearest_index(od, r.in[0], r.out[0], r.scales[0], exact);
        for (int64_t oh = 0; oh < r.out[1]; ++oh) {
          const int64_t ih = nearest_index(oh, r.in[1], r.out[1], r.scales[1], exact);
          const T* row = xp + (id * r.in[1] + ih) * r.in[2];
          T* orow = op + (od * r.out[1] + oh) * r.out[2];
          for (int64_t ow = 0; ow < r.out[2]; ++ow) {
            orow[ow] = row[nearest_index(ow, r.in[2], r.out[2], r.scales[2], exact)];
          }
        }
      }
    }
  });
}

// Linear family (1-3 dims): nested 2-tap interpolation, outermost dim first.
template <typename T>
void run_linear(KernelContext& ctx, const Resample& r, const T* x, T* o) {
  const int64_t in_plane = r.in[0] * r.in[1] * r.in[2];
  const int64_t out_plane = r.out[0] * r.out[1] * r.out[2];
  float sc[3];
  for (int d = 0; d < 3; ++d) sc[d] = area_scale(r.in[d], r.out[d], r.align_corners, r.scales[d]);
  const int first = 3 - r.spatial;
  parallel_for_range(ctx, r.planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const T* xp = x + p * in_plane;
      T* op = o + p * out_plane;
      for (int64_t od = 0; od < r.out[0]; ++od) {
        int64_t di[2] = {0, 0};
        float dw[2] = {1.0f, 0.0f};
        if (first == 0) linear_taps(sc[0], od, r.in[0], r.align_corners, di, dw);
        for (int64_t oh = 0; oh < r.out[1]; ++oh) {
          int64_t hi[2] = {0, 0};
          float hw[2] = {1.0f, 0.0f};
          if (first <= 1) linear_taps(sc[1], oh, r.in[1], r.align_corners, hi, hw);
          T* orow = op + (od * r.out[1] + oh) * r.out[2];
          for (int64_t ow = 0; ow < r.out[2]; ++ow) {
            int64_t wi[2];
            float ww[2];
            linear_taps(sc[2], ow, r.in[2], r.align_corners, wi, ww);
            auto row_value = [&](int64_t id, int64_t ih) {
              const T* row = xp + (id * r.in[1] + ih) * r.in[2];
              return static_cast<T>(row[wi[0]] * ww[0] + row[wi[1]] * ww[1]);
            };
            T v;
            if (first == 2) {
              v = row_value(0, 0);
            } else if (first == 1) {
              v = static_cast<T>(row_value(0, hi[0]) * hw[0] + row_value(0, hi[1]) * hw[1]);
            } else {
              const T v0 = static_cast<T>(row_value(di[0], hi[0]) * hw[0] + row_value(di[0], hi[1]) * hw[1]);
              const T v1 = static_cast<T>(row_value(di[1], hi[0]) * hw[0] + row_value(di[1], hi[1]) * hw[1]);
              v = static_cast<T>(v0 * dw[0] + v1 * dw[1]);
            }
            orow[ow] = v;
          }
        }
      }
    }
  });
}

// Bicubic (2-D): 4x4 taps, rows first then combined over height.
template <typename T>
void run_cubic(KernelContext& ctx, const Resample& r, const T* x, T* o) {
  const int64_t in_plane = r.in[1] * r.in[2];
  const int64_t out_plane = r.out[1] * r.out[2];
  const float sh = area_scale(r.in[1], r.out[1], r.align_corners, r.scales[1]);
  const float sw = area_scale(r.in[2], r.out[2], r.align_corners, r.scales[2]);
  parallel_for_range(ctx, r.planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const T* xp = x + p * in_plane;
      T* op = o + p * out_plane;
      for (int64_t oh = 0; oh < r.out[1]; ++oh) {
        int64_t hi[4];
        float hw[4];
        cubic_taps(sh, oh, r.in[1], r.align_corners, hi, hw);
        for (int64_t ow = 0; ow < r.out[2]; ++ow) {
          int64_t wi[4];
          float ww[4];
          cubic_taps(sw, ow, r.in[2], r.align_corners, wi, ww);
          T acc = 0;
          for (int j = 0; j < 4; ++j) {
            const T* row = xp + hi[j] * r.in[2];
            const T rv = static_cast<T>(row[wi[0]] * ww[0] + row[wi[1]] * ww[1] + row[wi[2]] * ww[2] +
                                        row[wi[3]] * ww[3]);
            acc += rv * hw[j];
          }
          op[oh * r.out[2] + ow] = acc;
        }
      }
    }
  });
}

// Antialiased (2-D): separable normalised filters, horizontal then vertical.
template <typename T>
bool run_aa(KernelContext& ctx, const Resample& r, bool cubic, const T* x, T* o) {
  const int64_t in_plane = r.in[1] * r.in[2];
  const int64_t out_plane = r.out[1] * r.out[2];
  const float sh = area_scale(r.in[1], r.out[1], r.align_corners, r.scales[1]);
  const float sw = area_scale(r.in[2], r.out[2], r.align_corners, r.scales[2]);
  // Every output row/column must have a bounded tap count.
  const float interp = cubic ? 4.0f : 2.0f;
  if ((sh >= 1.0f ? interp * sh : interp) + 2 > kMaxAaTaps || (sw >= 1.0f ? interp * sw : interp) + 2 > kMaxAaTaps) {
    return false;
  }
  parallel_for_range(ctx, r.planes, 1, [&](int64_t begin, int64_t end) {
    float hw[kMaxAaTaps], ww[kMaxAaTaps];
    for (int64_t p = begin; p < end; ++p) {
      const T* xp = x + p * in_plane;
      T* op = o + p * out_plane;
      for (int64_t oh = 0; oh < r.out[1]; ++oh) {
        int64_t h0 = 0, hn = 0;
        aa_taps(cubic, sh, oh, r.in[1], &h0, &hn, hw);
        for (int64_t ow = 0; ow < r.out[2]; ++ow) {
          int64_t w0 = 0, wn = 0;
          aa_taps(cubic, sw, ow, r.in[2], &w0, &wn, ww);
          T acc = 0;
          for (int64_t j = 0; j < hn; ++j) {
            const T* row = xp + (h0 + j) * r.in[2] + w0;
            T rv = 0;
            for (int64_t i = 0; i < wn; ++i) rv += row[i] * ww[i];
            acc += rv * hw[j];
          }
          op[oh * r.out[2] + ow] = acc;
        }
      }
    }
  });
  return true;
}

// ---- argument handling ----

// Fills sizes/planes from the input and the requested output sizes.
bool setup(KernelArgs& a, const Tensor* in, Tensor* out, int spatial, const int64_t* out_sizes, Resample& r) {
  if (!a.ok()) return false;
  if (in->dtype != ScalarType::Float32 && in->dtype != ScalarType::Float64) {
    return a.fail("only float32 and float64 tensors are supported");
  }
  if (out->dtype != in->dtype) return a.fail("output dtype must match the input");
  if (!in->is_contiguous() || !out->is_contiguous()) return a.fail("non-contiguous tensors are not supported", Error::NotSupported);
  if (in->rank != spatial + 2 && in->rank != spatial + 1) return a.fail("input has the wrong rank for this upsample");
  r.spatial = spatial;
  const int lead = in->rank - spatial;
  r.planes = 1;
  for (int d = 0; d < lead; ++d) r.planes *= in->sizes[d];
  for (int i = 0; i < spatial; ++i) {
    r.in[3 - spatial + i] = in->sizes[lead + i];
    r.out[3 - spatial + i] = out_sizes[i];
    if (out_sizes[i] <= 0) return a.fail("output size must be positive");
    if (in->sizes[lead + i] <= 0) return a.fail("input spatial size must be positive");
  }
  int64_t sizes[kMaxRank];
  for (int d = 0; d < lead; ++d) sizes[d] = in->sizes[d];
  for (int i = 0; i < spatial; ++i) sizes[lead + i] = out_sizes[i];
  return resize_out(a, out, sizes, in->rank);
}

Error dispatch(KernelContext& ctx, KernelArgs& a, Mode mode, const Resample& r, const Tensor* in, Tensor* out) {
  if (out->numel() == 0) return Error::Ok;
  bool ok = true;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* x = in->data_as<T>();
    T* o = out->data_as<T>();
    switch (mode) {
      case Mode::Nearest: run_nearest(ctx, r, false, x, o); break;
      case Mode::NearestExact: run_nearest(ctx, r, true, x, o); break;
      case Mode::Linear: run_linear(ctx, r, x, o); break;
      case Mode::Cubic: run_cubic(ctx, r, x, o); break;
      case Mode::LinearAA: ok = run_aa(ctx, r, false, x, o); break;
      case Mode::CubicAA: ok = run_aa(ctx, r, true, x, o); break;
    }
  };
  if (in->dtype == ScalarType::Float64) {
    run(double{});
  } else {
    run(float{});
  }
  if (!ok) return ctx.fail(Error::NotSupported, "antialiased downsampling factor is too large");
  return Error::Ok;
}

inline bool has_align(Mode m) { return m != Mode::Nearest && m != Mode::NearestExact; }

// .vec: (input, output_size?, [align_corners,] scale_factors?) -> out
template <Mode kMode, int kSpatial>
Error upsample_vec(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  const bool align = has_align(kMode);
  if (!a.expect(align ? 5 : 4)) return a.error();
  Tensor* in = a.tensor(0);
  Tensor* out = a.tensor(align ? 4 : 3);
  if (!a.ok()) return a.error();
  Resample r;
  r.align_corners = align ? a.bool_value(2) : false;
  const size_t scale_i = align ? 3 : 2;
  int64_t out_sizes[3];
  const int lead = in->rank - kSpatial;
  if (lead < 1) return ctx.fail(Error::InvalidArgument, "input has the wrong rank for this upsample");
  if (!a.is_none(1)) {
    Span<const int64_t> os = a.int_list(1);
    if (!a.ok()) return a.error();
    if (os.size() != static_cast<size_t>(kSpatial)) return ctx.fail(Error::InvalidArgument, "output_size has the wrong length");
    for (int i = 0; i < kSpatial; ++i) out_sizes[i] = os[i];
    // PyTorch passes no scales when output_size is given.
  } else {
    const EValue& sv = a.at(scale_i);
    if (sv.tag != ValueTag::DoubleList || sv.as_double_list.size() != static_cast<size_t>(kSpatial)) {
      return ctx.fail(Error::InvalidArgument, "either output_size or scale_factors (one per spatial dim) is needed");
    }
    for (int i = 0; i < kSpatial; ++i) {
      const double s = sv.as_double_list[i];
      r.scales[3 - kSpatial + i] = s;
      out_sizes[i] = static_cast<int64_t>(std::floor(static_cast<double>(in->sizes[lead + i]) * s));
    }
  }
  if (!setup(a, in, out, kSpatial, out_sizes, r)) return a.error();
  return dispatch(ctx, a, kMode, r, in, out);
}

// .default: (self, output_size, [align_corners,] scales_*?...) -> out
template <Mode kMode, int kSpatial>
Error upsample_default(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  const bool align = has_align(kMode);
  const size_t first_scale = align ? 3 : 2;
  if (!a.expect(first_scale + kSpatial + 1)) return a.error();
  Tensor* in = a.tensor(0);
  Span<const int64_t> os = a.int_list(1);
  Tensor* out = a.tensor(first_scale + kSpatial);
  if (!a.ok()) return a.error();
  Resample r;
  r.align_corners = align ? a.bool_value(2) : false;
  if (os.size() != static_cast<size_t>(kSpatial)) return ctx.fail(Error::InvalidArgument, "output_size has the wrong length");
  int64_t out_sizes[3];
  for (int i = 0; i < kSpatial; ++i) {
    out_sizes[i] = os[i];
    double s = 0;
    if (a.optional_scalar(first_scale + i, &s)) r.scales[3 - kSpatial + i] = s;
  }
  if (!a.ok()) return a.error();
  if (!setup(a, in, out, kSpatial, out_sizes, r)) return a.error();
  return dispatch(ctx, a, kMode, r, in, out);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::upsample_nearest1d.vec", (upsample_vec<Mode::Nearest, 1>));
EMBER_REGISTER_KERNEL("aten::upsample_nearest2d.vec", (upsample_vec<Mode::Nearest, 2>));
EMBER_REGISTER_KERNEL("aten::upsample_nearest3d.vec", (upsample_vec<Mode::Nearest, 3>));
EMBER_REGISTER_KERNEL("aten::upsample_nearest1d.default", (upsample_default<Mode::Nearest, 1>));
EMBER_REGISTER_KERNEL("aten::upsample_nearest2d.default", (upsample_default<Mode::Nearest, 2>));
EMBER_REGISTER_KERNEL("aten::upsample_nearest3d.default", (upsample_default<Mode::Nearest, 3>));
EMBER_REGISTER_KERNEL("aten::_upsample_nearest_exact1d.vec", (upsample_vec<Mode::NearestExact, 1>));
EMBER_REGISTER_KERNEL("aten::_upsample_nearest_exact2d.vec", (upsample_vec<Mode::NearestExact, 2>));
EMBER_REGISTER_KERNEL("aten::_upsample_nearest_exact3d.vec", (upsample_vec<Mode::NearestExact, 3>));
EMBER_REGISTER_KERNEL("aten::_upsample_nearest_exact1d.default", (upsample_default<Mode::NearestExact, 1>));
EMBER_REGISTER_KERNEL("aten::_upsample_nearest_exact2d.default", (upsample_default<Mode::NearestExact, 2>));
EMBER_REGISTER_KERNEL("aten::_upsample_nearest_exact3d.default", (upsample_default<Mode::NearestExact, 3>));
EMBER_REGISTER_KERNEL("aten::upsample_linear1d.vec", (upsample_vec<Mode::Linear, 1>));
EMBER_REGISTER_KERNEL("aten::upsample_bilinear2d.vec", (upsample_vec<Mode::Linear, 2>));
EMBER_REGISTER_KERNEL("aten::upsample_trilinear3d.vec", (upsample_vec<Mode::Linear, 3>));
EMBER_REGISTER_KERNEL("aten::upsample_linear1d.default", (upsample_default<Mode::Linear, 1>));
EMBER_REGISTER_KERNEL("aten::upsample_bilinear2d.default", (upsample_default<Mode::Linear, 2>));
EMBER_REGISTER_KERNEL("aten::upsample_trilinear3d.default", (upsample_default<Mode::Linear, 3>));
EMBER_REGISTER_KERNEL("aten::upsample_bicubic2d.vec", (upsample_vec<Mode::Cubic, 2>));
EMBER_REGISTER_KERNEL("aten::upsample_bicubic2d.default", (upsample_default<Mode::Cubic, 2>));
EMBER_REGISTER_KERNEL("aten::_upsample_bilinear2d_aa.vec", (upsample_vec<Mode::LinearAA, 2>));
EMBER_REGISTER_KERNEL("aten::_upsample_bilinear2d_aa.default", (upsample_default<Mode::LinearAA, 2>));
EMBER_REGISTER_KERNEL("aten::_upsample_bicubic2d_aa.vec", (upsample_vec<Mode::CubicAA, 2>));
EMBER_REGISTER_KERNEL("aten::_upsample_bicubic2d_aa.default", (upsample_default<Mode::CubicAA, 2>));

}  // namespace portable
}  // namespace ember
