// grid_sampler_2d / grid_sampler_3d / grid_sampler (float32, float64): samples input
// [N, C, (D,) H, W] at the normalised coordinates of grid [N, (OD,) OH, OW, 2|3] (x = width
// first). interpolation_mode 0 bilinear, 1 nearest, 2 bicubic (2-D only); padding_mode
// 0 zeros, 1 border, 2 reflection; align_corners maps -1/1 to the corner pixel centres
// (else to the outer edges). Coordinate handling follows PyTorch's CPU kernel: unnormalise,
// apply padding (clip / reflect then clip), nearest rounds half to even, bicubic uses A = -0.75
// with each tap's coordinate passed through the padding rule.
#include <cmath>

#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

enum Interp { kBilinear = 0, kNearest = 1, kBicubic = 2 };
enum Padding { kZeros = 0, kBorder = 1, kReflection = 2 };

template <typename S>
S unnormalize(S coord, int64_t size, bool align_corners) {
  if (align_corners) return ((coord + 1) / 2) * static_cast<S>(size - 1);
  return ((coord + 1) * static_cast<S>(size) - 1) / 2;
}

template <typename S>
S clip(S coord, int64_t size) {
  const S hi = static_cast<S>(size - 1);
  // NaN stays NaN (it is rejected by the bounds checks later).
  return coord < 0 ? S(0) : (coord > hi ? hi : coord);
}

template <typename S>
S reflect(S in, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return S(0);
  const S min = static_cast<S>(twice_low) / 2;
  const S span = static_cast<S>(twice_high - twice_low) / 2;
  in = std::fabs(in - min);
  const S extra = std::fmod(in, span);
  const int64_t flips = static_cast<int64_t>(std::floor(in / span));
  return flips % 2 == 0 ? extra + min : span - extra + min;
}

template <typename S>
S apply_padding(S coord, int64_t size, int padding, bool align_corners) {
  if (padding == kBorder) return clip(coord, size);
  if (padding == kReflection) {
    coord = align_corners ? reflect(coord, 0, 2 * (size - 1)) : reflect(coord, -1, 2 * size - 1);
    return clip(coord, size);
  }
  return coord;
}

template <typename S>
S source_coord(S coord, int64_t size, int padding, bool align_corners) {
  return apply_padding(unnormalize(coord, size, align_corners), size, padding, align_corners);
}

inline bool inside(int64_t v, int64_t size) { return v >= 0 && v < size; }

template <typename S>
S cubic1(S x, S a) { return ((a + 2) * x - (a + 3)) * x * x + 1; }
template <typename S>
S cubic2(S x, S a) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; }

struct Geometry {
  int64_t n, c, d, h, w;     // input (d = 1 for 2-D)
  int64_t od, oh, ow;        // output (od = 1 for 2-D)
  int interp, padding;
  bool align_corners;
};

template <typename T>
void sample_2d(KernelContext& ctx, const Geometry& g, const T* x, const T* grid, T* out) {
  const int64_t points = g.oh * g.ow;
  parallel_for_range(ctx, g.n * points, 16, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / points, pt = item % points;
      const T gx = grid[item * 2], gy = grid[item * 2 + 1];
      const T* xb = x + b * g.c * g.h * g.w;
      T* ob = out + b * g.c * points + pt;
      if (g.interp == kBicubic) {
        const T ix = unnormalize(gx, g.w, g.align_corners);
        const T iy = unnormalize(gy, g.h, g.align_corners);
        const T fx = std::floor(ix), fy = std::floor(iy);
        const T tx = ix - fx, ty = iy - fy;
        const T a = T(-0.75);
        const T wx[4] = {cubic2(tx + 1, a), cubic1(tx, a), cubic1(1 - tx, a), cubic2(2 - tx, a)};
        const T wy[4] = {cubic2(ty + 1, a), cubic1(ty, a), cubic1(1 - ty, a), cubic2(2 - ty, a)};
        int64_t xs[4], ys[4];
        bool xin[4], yin[4];
        for (int k = 0; k < 4; ++k) {
          const T cx = apply_padding(fx - 1 + k, g.w, g.padding, g.align_corners);
          const T cy = apply_padding(fy - 1 + k, g.h, g.padding, g.align_corners);
          xs[k] = static_cast<int64_t>(cx);
          ys[k] = static_cast<int64_t>(cy);
          xin[k] = cx == cx && inside(xs[k], g.w);
          yin[k] = cy == cy && inside(ys[k], g.h);
        }
        for (int64_t ch = 0; ch < g.c; ++ch) {
          const T* plane = xb + ch * g.h * g.w;
          T acc = 0;
          for (int j = 0; j < 4; ++j) {
            T row = 0;
            for (int k = 0; k < 4; ++k) {
              const T v = (yin[j] && xin[k]) ? plane[ys[j] * g.w + xs[k]] : T(0);
              row += v * wx[k];
            }
            acc += row * wy[j];
          }
          ob[ch * points] = acc;
        }
        continue;
      }
      const T ix = source_coord(gx, g.w, g.padding, g.align_corners);
      const T iy = source_coord(gy, g.h, g.padding, g.align_corners);
      if (g.interp == kNearest) {
        const T rx = std::nearbyint(ix), ry = std::nearbyint(iy);
        const bool ok = rx == rx && ry == ry && rx >= 0 && ry >= 0 && rx < g.w && ry < g.h;
        const int64_t off = ok ? static_cast<int64_t>(ry) * g.w + static_cast<int64_t>(rx) : 0;
        for (int64_t ch = 0; ch < g.c; ++ch) ob[ch * points] = ok ? xb[ch * g.h * g.w + off] : T(0);
        continue;
      }
      // Bilinear.
      const T fx = std::floor(ix), fy = std::floor(iy);
      const bool finite = fx == fx && fy == fy && std::fabs(fx) < T(1e15) && std::fabs(fy) < T(1e15);
      const int64_t x0 = finite ? static_cast<int64_t>(fx) : -10, y0 = finite ? static_cast<int64_t>(fy) : -10;
      const int64_t x1 = x0 + 1, y1 = y0 + 1;
      const T e = ix - fx, s = iy - fy;  // distances to the north-west corner
      const T w_nw = (1 - e) * (1 - s), w_ne = e * (1 - s), w_sw = (1 - e) * s, w_se = e * s;
      const bool nw = finite && inside(x0, g.w) && inside(y0, g.h);
      const bool ne = finite && inside(x1, g.w) && inside(y0, g.h);
      const bool sw = finite && inside(x0, g.w) && inside(y1, g.h);
      const bool se = finite && inside(x1, g.w) && inside(y1, g.h);
      for (int64_t ch = 0; ch < g.c; ++ch) {
        const T* plane = xb + ch * g.h * g.w;
        T acc = 0;
        if (nw) acc += plane[y0 * g.w + x0] * w_nw;
        if (ne) acc += plane[y0 * g.w + x1] * w_ne;
        if (sw) acc += plane[y1 * g.w + x0] * w_sw;
        if (se) acc += plane[y1 * g.w + x1] * w_se;
        ob[ch * points] = acc;
      }
    }
  });
}

template <typename T>
void sample_3d(KernelContext& ctx, const Geometry& g, const T* x, const T* grid, T* out) {
  const int64_t points = g.od * g.oh * g.ow;
  const int64_t vol = g.d * g.h * g.w;
  parallel_for_range(ctx, g.n * points, 16, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / points, pt = item % points;
      const T ix = source_coord(grid[item * 3], g.w, g.padding, g.align_corners);
      const T iy = source_coord(grid[item * 3 + 1], g.h, g.padding, g.align_corners);
      const T iz = source_coord(grid[item * 3 + 2], g.d, g.padding, g.align_corners);
      const T* xb = x + b * g.c * vol;
      T* ob = out + b * g.c * points + pt;
      if (g.interp == kNearest) {
        const T rx = std::nearbyint(ix), ry = std::nearbyint(iy), rz = std::nearbyint(iz);
        const bool ok = rx == rx && ry == ry && rz == rz && rx >= 0 && ry >= 0 && rz >= 0 && rx < g.w &&
                        ry < g.h && rz < g.d;
        const int64_t off =
            ok ? (static_cast<int64_t>(rz) * g.h + static_cast<int64_t>(ry)) * g.w + static_cast<int64_t>(rx) : 0;
        for (int64_t ch = 0; ch < g.c; ++ch) ob[ch * points] = ok ? xb[ch * vol + off] : T(0);
        continue;
      }
      const T fx = std::floor(ix), fy = std::floor(iy), fz = std::floor(iz);
      const bool finite = fx == fx && fy == fy && fz == fz && std::fabs(fx) < T(1e15) &&
                          std::fabs(fy) < T(1e15) && std::fabs(fz) < T(1e15);
      const int64_t x0 = finite ? static_cast<int64_t>(fx) : -10;
      const int64_t y0 = finite ? static_cast<int64_t>(fy) : -10;
      const int64_t z0 = finite ? static_cast<int64_t>(fz) : -10;
      const T tx = ix - fx, ty = iy - fy, tz = iz - fz;
      int64_t offs[8];
      T ws[8];
      bool ok[8];
      for (int k = 0; k < 8; ++k) {
        const int dx = k & 1, dy = (k >> 1) & 1, dz = (k >> 2) & 1;
        const int64_t xx = x0 + dx, yy = y0 + dy, zz = z0 + dz;
        ok[k] = finite && inside(xx, g.w) && inside(yy, g.h) && inside(zz, g.d);
        offs[k] = ok[k] ? (zz * g.h + yy) * g.w + xx : 0;
        ws[k] = (dx ? tx : 1 - tx) * (dy ? ty : 1 - ty) * (dz ? tz : 1 - tz);
      }
      for (int64_t ch = 0; ch < g.c; ++ch) {
        const T* v = xb + ch * vol;
        T acc = 0;
        for (int k = 0; k < 8; ++k) {
          if (ok[k]) acc += v[offs[k]] * ws[k];
        }
        ob[ch * points] = acc;
      }
    }
  });
}

// (input, grid, interpolation_mode, padding_mode, align_corners) -> out
template <int kSpatial>  // 0: pick from the input rank
Error grid_sampler(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  Tensor* in = a.tensor(0);
  Tensor* grid = a.tensor(1);
  Geometry g;
  g.interp = static_cast<int>(a.int_value(2));
  g.padding = static_cast<int>(a.int_value(3));
  g.align_corners = a.bool_value(4);
  Tensor* out = a.tensor(5);
  if (!a.ok()) return a.error();
  const int spatial = kSpatial != 0 ? kSpatial : in->rank - 2;
  if (spatial != 2 && spatial != 3) return ctx.fail(Error::InvalidArgument, "grid_sampler needs a 4-D or 5-D input");
  if (in->rank != spatial + 2 || grid->rank != spatial + 2 || out->rank != spatial + 2) {
    return ctx.fail(Error::InvalidArgument, "grid_sampler input/grid/output ranks do not match");
  }
  if ((in->dtype != ScalarType::Float32 && in->dtype != ScalarType::Float64) || grid->dtype != in->dtype ||
      out->dtype != in->dtype) {
    return ctx.fail(Error::InvalidArgument, "grid_sampler supports float32/float64 with matching dtypes");
  }
  if (!in->is_contiguous() || !grid->is_contiguous() || !out->is_contiguous()) {
    return ctx.fail(Error::NotSupported, "non-contiguous tensors are not supported");
  }
  if (g.interp < 0 || g.interp > 2 || (spatial == 3 && g.interp == kBicubic)) {
    return ctx.fail(Error::InvalidArgument, "unsupported interpolation mode");
  }
  if (g.padding < 0 || g.padding > 2) return ctx.fail(Error::InvalidArgument, "unsupported padding mode");
  g.n = in->sizes[0];
  g.c = in->sizes[1];
  g.d = spatial == 3 ? in->sizes[2] : 1;
  g.h = in->sizes[in->rank - 2];
  g.w = in->sizes[in->rank - 1];
  if (grid->sizes[0] != g.n || grid->sizes[grid->rank - 1] != spatial) {
    return ctx.fail(Error::InvalidArgument, "grid must be [N, ..., spatial dims]");
  }
  g.od = spatial == 3 ? grid->sizes[1] : 1;
  g.oh = grid->sizes[grid->rank - 3];
  g.ow = grid->sizes[grid->rank - 2];
  int64_t sizes[5];
  sizes[0] = g.n;
  sizes[1] = g.c;
  int r = 2;
  if (spatial == 3) sizes[r++] = g.od;
  sizes[r++] = g.oh;
  sizes[r++] = g.ow;
  if (!resize_out(a, out, sizes, r)) return a.error();
  if (out->numel() == 0) return Error::Ok;
  if (g.d * g.h * g.w == 0) {
    return ctx.fail(Error::InvalidArgument, "grid_sampler input has an empty spatial dimension");
  }
  if (in->dtype == ScalarType::Float64) {
    if (spatial == 2) {
      sample_2d(ctx, g, in->data_as<double>(), grid->data_as<double>(), out->data_as<double>());
    } else {
      sample_3d(ctx, g, in->data_as<double>(), grid->data_as<double>(), out->data_as<double>());
    }
  } else if (spatial == 2) {
    sample_2d(ctx, g, in->data_as<float>(), grid->data_as<float>(), out->data_as<float>());
  } else {
    sample_3d(ctx, g, in->data_as<float>(), grid->data_as<float>(), out->data_as<float>());
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::grid_sampler.default", grid_sampler<0>);
EMBER_REGISTER_KERNEL("aten::grid_sampler_2d.default", grid_sampler<2>);
EMBER_REGISTER_KERNEL("aten::grid_sampler_3d.default", grid_sampler<3>);

}  // namespace portable
}  // namespace ember
