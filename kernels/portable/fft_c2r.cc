// Real-output FFTs of real input: fft_irfft, fft_irfft2, fft_irfftn (inverse of rfft) and
// fft_hfft, fft_hfft2, fft_hfftn (forward FFT of a Hermitian signal given by its half).
// Ember has no complex dtype, so the input is real (a complex one cannot reach a kernel); it
// is read as complex with zero imaginary part, as PyTorch reads a real tensor here. For real
// input conj(x) = x, so hfftn(x) = irfftn(x) up to the scale: both are complex inverse DFTs
// over all but the last transformed dim, then a complex-to-real inverse DFT over the last
// one (the Hermitian extension of its n/2 + 1 entries; the imaginary parts of the DC and
// Nyquist entries are ignored, as pocketfft does). Scale: irfft* "backward" (default) 1/N,
// "forward" 1; hfft* the other way round; "ortho" 1/sqrt(N) (N: the output signal size).
// Direct O(n^2) DFTs in double with a twiddle table; scratch from the temp allocator.
#include <cmath>

#include "kernels/portable/linalg_decomp/dense.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

enum class Norm { Backward, Forward, Ortho };

bool parse_norm(KernelArgs& a, size_t i, Norm* norm) {
  if (a.is_none(i) || a.string_is(i, "backward")) *norm = Norm::Backward;
  else if (a.string_is(i, "forward")) *norm = Norm::Forward;
  else if (a.string_is(i, "ortho")) *norm = Norm::Ortho;
  else return a.fail("norm must be None, \"backward\", \"forward\" or \"ortho\"");
  return true;
}

struct Plan {
  int count = 0;              // transformed dims
  int dims[kMaxRank] = {};    // in order; the last one is the complex-to-real dim
  int64_t n[kMaxRank] = {};   // output signal size per transformed dim
};

// Line-wise loops over dim d of a contiguous shape: calls fn(offset, stride) per line.
template <typename Fn>
void for_each_line(const Shape& s, int d, Fn fn) {
  int64_t stride = 1;
  for (int i = s.rank - 1; i > d; --i) stride *= s.d[i];
  const int64_t len = s.d[d], outer = s.numel() / (len * stride == 0 ? 1 : len * stride);
  if (len == 0 || stride == 0) return;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < stride; ++i) fn(o * len * stride + i, stride);
}

// twiddle table of length m: (cos, sin)(2 pi k / m).
void twiddles(double* t, int64_t m) {
  const double w = 2.0 * 3.14159265358979323846 / static_cast<double>(m);
  for (int64_t k = 0; k < m; ++k) {
    t[2 * k] = std::cos(w * static_cast<double>(k));
    t[2 * k + 1] = std::sin(w * static_cast<double>(k));
  }
}

Error c2r_common(KernelContext& ctx, KernelArgs& a, const Tensor* in, const Plan& p, bool hermitian_forward, Norm norm,
                 Tensor* out) {
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  if (!is_floating(in->dtype)) return a.fail("expected a real floating-point input"), a.error();
  if (out->dtype != in->dtype) return a.fail("out must have the input's dtype"), a.error();
  if (p.count == 0) return a.fail("no dims to transform"), a.error();
  Shape work(*in), os(*in);
  double total = 1.0;
  int64_t longest = 1;
  for (int k = 0; k < p.count; ++k) {
    const int d = p.dims[k];
    if (p.n[k] < 1) return a.fail("invalid output signal size (must be >= 1)"), a.error();
    const bool last = k + 1 == p.count;
    work.d[d] = last ? p.n[k] / 2 + 1 : p.n[k];
    os.d[d] = p.n[k];
    total *= static_cast<double>(p.n[k]);
    longest = p.n[k] > longest ? p.n[k] : longest;
  }
  if (!resize_to(a, out, os)) return a.error();
  dense::Scratch sc(ctx, a);
  double* w = sc.doubles(2 * work.numel() + 2);
  double* line = sc.doubles(2 * longest + 2);
  double* res = sc.doubles(2 * longest + 2);
  double* tw = sc.doubles(2 * longest + 2);
  if (!a.ok()) return a.error();
  // Load (crop / zero-pad each transformed dim), imaginary parts zero.
  int64_t in_strides[kMaxRank], idx[kMaxRank] = {};
  contiguous_strides(in->sizes, in->rank, in_strides);
  const int64_t wn = work.numel();
  for (int64_t i = 0; i < wn; ++i) {
    bool inside = true;
    int64_t off = 0;
    for (int d = 0; d < work.rank; ++d) {
      inside = inside && idx[d] < in->sizes[d];
      off += idx[d] * in_strides[d];
    }
    w[2 * i] = inside ? load_as<double>(in->data, in->dtype, off) : 0.0;
    w[2 * i + 1] = 0.0;
    for (int d = work.rank - 1; d >= 0; --d) {
      if (++idx[d] < work.d[d]) break;
      idx[d] = 0;
    }
  }
  // Complex inverse DFTs (exponent +) over all but the last transformed dim.
  for (int k = 0; k + 1 < p.count; ++k) {
    const int d = p.dims[k];
    const int64_t m = work.d[d];
    twiddles(tw, m);
    for_each_line(work, d, [&](int64_t base, int64_t stride) {
      for (int64_t j = 0; j < m; ++j) {
        line[2 * j] = w[2 * (base + j * stride)];
        line[2 * j + 1] = w[2 * (base + j * stride) + 1];
      }
      for (int64_t q = 0; q < m; ++q) {
        double re = 0, im = 0;
        for (int64_t j = 0; j < m; ++j) {
          const int64_t t = (j * q) % m;
          const double c = tw[2 * t], s = tw[2 * t + 1];
          re += line[2 * j] * c - line[2 * j + 1] * s;
          im += line[2 * j] * s + line[2 * j + 1] * c;
        }
        res[2 * q] = re;
        res[2 * q + 1] = im;
      }
      for (int64_t q = 0; q < m; ++q) {
        w[2 * (base + q * stride)] = res[2 * q];
        w[2 * (base + q * stride) + 1] = res[2 * q + 1];
      }
    });
  }
  // Complex-to-real over the last transformed dim, scaled.
  double scale = 1.0;
  const bool inverse_scaled = hermitian_forward ? norm == Norm::Forward : norm == Norm::Backward;
  if (norm == Norm::Ortho) scale = 1.0 / std::sqrt(total);
  else if (inverse_scaled) scale = 1.0 / total;
  const int dl = p.dims[p.count - 1];
  const int64_t nl = p.n[p.count - 1], half = work.d[dl];
  twiddles(tw, nl);
  int64_t os_strides[kMaxRank], ws_strides[kMaxRank];
  contiguous_strides(os.d, os.rank, os_strides);
  contiguous_strides(work.d, work.rank, ws_strides);
  // Lines of `work` along dl map to lines of `out` with the same other coordinates.
  for_each_line(work, dl, [&](int64_t base, int64_t stride) {
    // Coordinates of base -> output offset.
    int64_t rem = base, obase = 0;
    for (int d = 0; d < work.rank; ++d) {
      const int64_t c = rem / ws_strides[d];
      rem -= c * ws_strides[d];
      obase += c * os_strides[d];
    }
    const int64_t ostride = os_strides[dl];
    for (int64_t q = 0; q < nl; ++q) {
      double acc = w[2 * base];  // DC (its imaginary part is ignored)
      for (int64_t j = 1; j < half; ++j) {
        if (2 * j == nl) {  // Nyquist: real, counted once
          acc += w[2 * (base + j * stride)] * ((q % 2 == 0) ? 1.0 : -1.0);
          continue;
        }
        const int64_t t = (j * q) % nl;
        acc += 2.0 * (w[2 * (base + j * stride)] * tw[2 * t] - w[2 * (base + j * stride) + 1] * tw[2 * t + 1]);
      }
      store_as<double>(out->data, out->dtype, obase + q * ostride, acc * scale);
    }
  });
  return Error::Ok;
}

// Fills p from (s, dim) of the 2-D / n-D forms: dims given, or the last len(s) dims, or all
// (2-D: dim's default is [-2, -1]); sizes from s, else the input's (last: 2 * (size - 1)).
bool plan_nd(KernelArgs& a, const Tensor* in, size_t s_arg, size_t dim_arg, Plan* p) {
  if (!a.ok() || in == nullptr) return false;
  const int rank = in->rank;
  Span<const int64_t> s, dims;
  const bool has_s = !a.is_none(s_arg), has_dim = !a.is_none(dim_arg);
  if (has_s) s = a.int_list(s_arg);
  if (has_dim) dims = a.int_list(dim_arg);
  if (!a.ok()) return false;
  if (has_s && has_dim && s.size() != dims.size()) return a.fail("s and dim must have the same length");
  const int count = has_dim ? static_cast<int>(dims.size()) : has_s ? static_cast<int>(s.size()) : rank;
  if (count < 1 || count > rank) return a.fail("invalid number of dims to transform");
  p->count = count;
  for (int k = 0; k < count; ++k) {
    int64_t d = has_dim ? dims[static_cast<size_t>(k)] : rank - count + k;
    if (d < 0) d += rank;
    if (d < 0 || d >= rank) return a.fail("dim out of range");
    for (int j = 0; j < k; ++j)
      if (p->dims[j] == d) return a.fail("dims must be unique");
    p->dims[k] = static_cast<int>(d);
    const bool last = k + 1 == count;
    int64_t size = has_s ? s[static_cast<size_t>(k)] : -1;
    if (size == -1) size = last ? 2 * (in->sizes[d] - 1) : in->sizes[d];
    p->n[k] = size;
  }
  return true;
}

// fft_irfft / fft_hfft(self, n=None, dim=-1, norm=None)
Error c2r_1d(KernelContext& ctx, EValue** args, size_t n, bool hermitian) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(4);
  Norm norm = Norm::Backward;
  if (!a.ok() || !parse_norm(a, 3, &norm)) return a.error();
  int64_t d = a.int_value(2);
  if (!a.ok()) return a.error();
  if (in->rank == 0) return a.fail("expected at least a 1-D input"), a.error();
  if (d < 0) d += in->rank;
  if (d < 0 || d >= in->rank) return a.fail("dim out of range"), a.error();
  Plan p;
  p.count = 1;
  p.dims[0] = static_cast<int>(d);
  p.n[0] = a.optional_int(1, 2 * (in->sizes[d] - 1));
  if (!a.ok()) return a.error();
  return c2r_common(ctx, a, in, p, hermitian, norm, out);
}

// fft_irfft2 / fft_irfftn / fft_hfft2 / fft_hfftn(self, s=None, dim=..., norm=None)
Error c2r_nd(KernelContext& ctx, EValue** args, size_t n, bool hermitian) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(4);
  Norm norm = Norm::Backward;
  if (!a.ok() || !parse_norm(a, 3, &norm)) return a.error();
  Plan p;
  if (!plan_nd(a, in, 1, 2, &p)) return a.error();
  return c2r_common(ctx, a, in, p, hermitian, norm, out);
}

Error fft_irfft(KernelContext& ctx, EValue** args, size_t n) { return c2r_1d(ctx, args, n, false); }
Error fft_hfft(KernelContext& ctx, EValue** args, size_t n) { return c2r_1d(ctx, args, n, true); }
Error fft_irfftn(KernelContext& ctx, EValue** args, size_t n) { return c2r_nd(ctx, args, n, false); }
Error fft_hfftn(KernelContext& ctx, EValue** args, size_t n) { return c2r_nd(ctx, args, n, true); }

}  // namespace

EMBER_REGISTER_KERNEL("aten::fft_irfft.default", fft_irfft);
EMBER_REGISTER_KERNEL("aten::fft_hfft.default", fft_hfft);
EMBER_REGISTER_KERNEL("aten::fft_irfft2.default", fft_irfftn);
EMBER_REGISTER_KERNEL("aten::fft_irfftn.default", fft_irfftn);
EMBER_REGISTER_KERNEL("aten::fft_hfft2.default", fft_hfftn);
EMBER_REGISTER_KERNEL("aten::fft_hfftn.default", fft_hfftn);

}  // namespace portable
}  // namespace ember
