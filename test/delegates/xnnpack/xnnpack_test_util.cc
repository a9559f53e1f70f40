#include "test/delegates/xnnpack/xnnpack_test_util.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ember {
namespace xnnpack {
namespace testing {

size_t numel(const std::vector<int64_t>& sizes) {
  size_t n = 1;
  for (int64_t s : sizes) n *= static_cast<size_t>(s);
  return n;
}

HostTensor::HostTensor(std::vector<int64_t> sizes, bool dynamic, std::vector<int64_t> max_sizes)
    : sizes_(std::move(sizes)), max_sizes_(max_sizes.empty() ? sizes_ : std::move(max_sizes)) {
  const size_t cap = numel(max_sizes_);
  data_.assign(cap + 2 * kGuard, kGuardValue);
  tensor_.dtype = ScalarType::Float32;
  tensor_.rank = static_cast<uint8_t>(sizes_.size());
  tensor_.dynamic = dynamic;
  tensor_.sizes = sizes_.data();
  tensor_.max_sizes = max_sizes_.data();
  tensor_.data = data_.data() + kGuard;
  tensor_.capacity_bytes = cap * sizeof(float);
  value_.tag = ValueTag::Tensor;
  value_.as_tensor = &tensor_;
}

std::vector<float> HostTensor::values() const {
  const float* p = data_.data() + kGuard;
  return std::vector<float>(p, p + numel(sizes_));
}

void HostTensor::set_sizes(const std::vector<int64_t>& sizes) {
  for (size_t i = 0; i < sizes.size(); ++i) sizes_[i] = sizes[i];
}

void HostTensor::fill(const std::vector<float>& v) { std::copy(v.begin(), v.end(), data_.begin() + kGuard); }

bool HostTensor::guards_intact() const {
  const size_t cap = numel(max_sizes_);
  for (size_t i = 0; i < kGuard; ++i) {
    if (data_[i] != kGuardValue || data_[kGuard + cap + i] != kGuardValue) return false;
  }
  return true;
}

Runner::Runner(size_t method_bytes) : memory_(method_bytes), alloc_(memory_.data(), memory_.size()) {
  backend_ = find_backend("xnnpack");
}

Runner::~Runner() {
  if (handle_ != nullptr) backend_->destroy(handle_);
}

Error Runner::init(std::vector<uint8_t> blob, const std::vector<std::pair<std::string, std::vector<uint8_t>>>& specs,
                   const Program* program) {
  if (backend_ == nullptr) return Error::NotFound;
  blob_ = std::move(blob);
  std::vector<CompileSpecView> views;
  for (const auto& s : specs) views.push_back(CompileSpecView{s.first.c_str(), Span<const uint8_t>(s.second.data(), s.second.size())});
  BackendInitContext ctx{&alloc_, program, nullptr, &diag_};
  Result<void*> h = backend_->init(ctx, Span<const uint8_t>(blob_.data(), blob_.size()),
                                   Span<const CompileSpecView>(views.data(), views.size()));
  if (!h.ok()) return h.error();
  handle_ = *h;
  return Error::Ok;
}

Error Runner::run(const std::vector<HostTensor*>& args) {
  std::vector<EValue*> values;
  for (HostTensor* t : args) values.push_back(t->value());
  BackendExecuteContext ctx{nullptr, nullptr, &diag_};
  return backend_->execute(ctx, handle_, values.data(), values.size());
}

std::vector<float> random_vector(size_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

double max_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double e = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]) / (1.0 + std::fabs(b[i]));
    if (!(d <= e)) e = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(e, d);
  }
  return e;
}

std::vector<float> ref_conv2d(const std::vector<float>& x, const std::vector<int64_t>& xs, const std::vector<float>& w,
                              const std::vector<int64_t>& ws, const float* bias, const Conv2dArgs& a,
                              std::vector<int64_t>* out_sizes) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const int64_t O = ws[0], CG = ws[1], KH = ws[2], KW = ws[3];
  const int64_t OG = O / a.groups;
  const int64_t OH = (H + a.pad[0] + a.pad[2] - a.dilation[0] * (KH - 1) - 1) / a.stride[0] + 1;
  const int64_t OW = (W + a.pad[3] + a.pad[1] - a.dilation[1] * (KW - 1) - 1) / a.stride[1] + 1;
  *out_sizes = {N, O, OH, OW};
  (void)C;
  std::vector<float> y(static_cast<size_t>(N * O * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double acc = bias ? bias[o] : 0.0;
          const int64_t g = o / OG;
          for (int64_t c = 0; c < CG; ++c)
            for (int64_t ky = 0; ky < KH; ++ky)
              for (int64_t kx = 0; kx < KW; ++kx) {
                const int64_t iy = oy * a.stride[0] - a.pad[0] + ky * a.dilation[0];
                const int64_t ix = ox * a.stride[1] - a.pad[3] + kx * a.dilation[1];
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                acc += static_cast<double>(x[((n * C + g * CG + c) * H + iy) * W + ix]) *
                       w[((o * CG + c) * KH + ky) * KW + kx];
              }
          float v = static_cast<float>(acc);
          y[((n * O + o) * OH + oy) * OW + ox] = std::min(std::max(v, a.lo), a.hi);
        }
  return y;
}

std::vector<float> ref_pool2d(bool max, const std::vector<float>& x, const std::vector<int64_t>& xs, int64_t kh,
                              int64_t kw, const Conv2dArgs& a, std::vector<int64_t>* out_sizes) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const int64_t OH = (H + a.pad[0] + a.pad[2] - a.dilation[0] * (kh - 1) - 1) / a.stride[0] + 1;
  const int64_t OW = (W + a.pad[3] + a.pad[1] - a.dilation[1] * (kw - 1) - 1) / a.stride[1] + 1;
  *out_sizes = {N, C, OH, OW};
  std::vector<float> y(static_cast<size_t>(N * C * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
          int count = 0;
          for (int64_t ky = 0; ky < kh; ++ky)
            for (int64_t kx = 0; kx < kw; ++kx) {
              const int64_t iy = oy * a.stride[0] - a.pad[0] + ky * a.dilation[0];
              const int64_t ix = ox * a.stride[1] - a.pad[3] + kx * a.dilation[1];
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              const double v = x[((n * C + c) * H + iy) * W + ix];
              acc = max ? std::max(acc, v) : acc + v;
              ++count;
            }
          float v = static_cast<float>(max ? acc : acc / count);
          y[((n * C + c) * OH + oy) * OW + ox] = std::min(std::max(v, a.lo), a.hi);
        }
  return y;
}

std::vector<float> ref_linear(const std::vector<float>& x, int64_t rows, int64_t k, const std::vector<float>& w,
                              int64_t o, const float* bias, float lo, float hi) {
  std::vector<float> y(static_cast<size_t>(rows * o));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < o; ++j) {
      double acc = bias ? bias[j] : 0.0;
      for (int64_t i = 0; i < k; ++i) acc += static_cast<double>(x[r * k + i]) * w[j * k + i];
      y[r * o + j] = std::min(std::max(static_cast<float>(acc), lo), hi);
    }
  return y;
}

std::vector<float> ref_binary(char op, const std::vector<float>& a, const std::vector<int64_t>& as,
                              const std::vector<float>& b, const std::vector<int64_t>& bs,
                              std::vector<int64_t>* out_sizes) {
  const size_t rank = std::max(as.size(), bs.size());
  std::vector<int64_t> A(rank, 1), B(rank, 1), O(rank);
  std::copy(as.begin(), as.end(), A.begin() + (rank - as.size()));
  std::copy(bs.begin(), bs.end(), B.begin() + (rank - bs.size()));
  for (size_t i = 0; i < rank; ++i) O[i] = std::max(A[i], B[i]);
  *out_sizes = O;
  std::vector<float> y(numel(O));
  std::vector<int64_t> idx(rank, 0);
  for (size_t lin = 0; lin < y.size(); ++lin) {
    size_t rem = lin;
    for (size_t d = rank; d-- > 0;) {
      idx[d] = static_cast<int64_t>(rem % O[d]);
      rem /= O[d];
    }
    size_t ia = 0, ib = 0;
    for (size_t d = 0; d < rank; ++d) {
      ia = ia * A[d] + (A[d] == 1 ? 0 : idx[d]);
      ib = ib * B[d] + (B[d] == 1 ? 0 : idx[d]);
    }
    const float x = a[ia], z = b[ib];
    float r = 0;
    switch (op) {
      case '+': r = x + z; break;
      case '-': r = x - z; break;
      case '*': r = x * z; break;
      case '/': r = x / z; break;
      case 'M': r = std::max(x, z); break;
      case 'm': r = std::min(x, z); break;
      case 'q': r = (x - z) * (x - z); break;
    }
    y[lin] = r;
  }
  return y;
}

std::vector<float> ref_softmax_lastdim(const std::vector<float>& x, int64_t rows, int64_t cols) {
  std::vector<float> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double m = -1e30, s = 0;
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, static_cast<double>(x[r * cols + c]));
    for (int64_t c = 0; c < cols; ++c) s += std::exp(x[r * cols + c] - m);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = static_cast<float>(std::exp(x[r * cols + c] - m) / s);
  }
  return y;
}

std::vector<float> ref_resize_bilinear(const std::vector<float>& x, const std::vector<int64_t>& xs, int64_t oh,
                                       int64_t ow, bool align_corners) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  std::vector<float> y(static_cast<size_t>(N * C * oh * ow));
  auto src = [&](int64_t dst, int64_t in, int64_t out) {
    if (align_corners) return out > 1 ? static_cast<double>(dst) * (in - 1) / (out - 1) : 0.0;
    double s = (dst + 0.5) * static_cast<double>(in) / out - 0.5;
    return s < 0 ? 0.0 : s;
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          const double sy = src(oy, H, oh), sx = src(ox, W, ow);
          const int64_t y0 = std::min<int64_t>(static_cast<int64_t>(sy), H - 1), x0 = std::min<int64_t>(static_cast<int64_t>(sx), W - 1);
          const int64_t y1 = std::min<int64_t>(y0 + 1, H - 1), x1 = std::min<int64_t>(x0 + 1, W - 1);
          const double fy = sy - y0, fx = sx - x0;
          const float* p = x.data() + (n * C + c) * H * W;
          const double v = (1 - fy) * ((1 - fx) * p[y0 * W + x0] + fx * p[y0 * W + x1]) +
                           fy * ((1 - fx) * p[y1 * W + x0] + fx * p[y1 * W + x1]);
          y[((n * C + c) * oh + oy) * ow + ox] = static_cast<float>(v);
        }
  return y;
}

}  // namespace testing
}  // namespace xnnpack
}  // namespace ember
