// Random-valued ops: rand/randn(+_like), randint(+_like), uniform, normal (Tensor/float
// overloads, normal_/normal_functional), bernoulli, exponential, cauchy, log_normal,
// geometric, multinomial, rrelu. A counter-based generator (splitmix64) gives each call a fresh stream; the
// values are not PyTorch's (only shapes, dtypes and distributions match). Generator
// arguments are ignored.
#include <atomic>
#include <cmath>

#include "kernels/portable/util/binary_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

std::atomic<uint64_t> g_stream{0x853c49e6748fea9bULL};

struct Rng {
  uint64_t state;
  Rng() : state(g_stream.fetch_add(0x9e3779b97f4a7c15ULL, std::memory_order_relaxed)) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  double normal() {
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
};

// Fills out (already sized) with f(rng, i).
template <typename F>
void fill_random(Tensor* out, const F& f) {
  Rng rng;
  for (int64_t i = 0; i < out->numel(); ++i) store_as<double>(out->data, out->dtype, i, f(rng, i));
}

bool sized(KernelArgs& a, size_t size_index, Tensor* out) {
  Span<const int64_t> sizes = a.int_list(size_index);
  if (!a.ok()) return false;
  Shape s;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || !s.push(sizes[i])) return a.fail("invalid size");
  }
  return resize_to(a, out, s);
}

// rand/randn(size[], dtype?, layout?, device?, pin_memory?, out)
template <bool kNormal>
Error rand(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  Tensor* out = a.out(5);
  if (!sized(a, 0, out)) return a.error();
  fill_random(out, [](Rng& r, int64_t) { return kNormal ? r.normal() : r.uniform(); });
  return Error::Ok;
}

// rand_like/randn_like(self, dtype?, layout?, device?, pin_memory?, memory_format?, out)
template <bool kNormal>
Error rand_like(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  const Tensor* self = a.tensor(0);
  Tensor* out = a.out(6);
  if (!a.ok() || !resize_like(a, out, *self)) return a.error();
  fill_random(out, [](Rng& r, int64_t) { return kNormal ? r.normal() : r.uniform(); });
  return Error::Ok;
}

Error fill_randint(KernelArgs& a, Tensor* out, int64_t low, int64_t high) {
  if (high <= low) return a.fail("randint needs low < high"), a.error();
  uint64_t range = static_cast<uint64_t>(high - low);
  Rng rng;
  for (int64_t i = 0; i < out->numel(); ++i) {
    store_as<int64_t>(out->data, out->dtype, i, low + static_cast<int64_t>(rng.next() % range));
  }
  return Error::Ok;
}

// randint_like.default(self, high, ..., out) / randint_like.low_dtype(self, low, high, ..., out)
Error randint_like(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n != 8 && n != 9) return a.expect(8), a.error();
  const Tensor* self = a.tensor(0);
  int64_t low = n == 9 ? a.int_value(1) : 0;
  int64_t high = a.int_value(n == 9 ? 2 : 1);
  Tensor* out = a.out(n - 1);
  if (!a.ok() || !resize_like(a, out, *self)) return a.error();
  return fill_randint(a, out, low, high);
}

// randint.default(high, size[], ..., out) / randint.low(low, high, size[], ..., out)
Error randint(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n != 7 && n != 8) return a.expect(7), a.error();
  int64_t low = n == 8 ? a.int_value(0) : 0;
  int64_t high = a.int_value(n == 8 ? 1 : 0);
  Tensor* out = a.out(n - 1);
  if (!sized(a, n == 8 ? 2 : 1, out)) return a.error();
  return fill_randint(a, out, low, high);
}

// Ops shaped like self with two scalar parameters: (self, p1, p2, generator?, out).
enum class Dist { Uniform, Normal, Cauchy, LogNormal };

template <Dist kDist>
Error dist2(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* self = a.tensor(0);
  double p = a.scalar(1), q = a.scalar(2);
  Tensor* out = a.out(4);
  if (!a.ok() || !resize_like(a, out, *self)) return a.error();
  fill_random(out, [=](Rng& r, int64_t) {
    switch (kDist) {
      case Dist::Uniform: return p + (q - p) * r.uniform();
      case Dist::Normal: return p + q * r.normal();
      case Dist::Cauchy: return p + q * std::tan(M_PI * (r.uniform() - 0.5));
      case Dist::LogNormal: return std::exp(p + q * r.normal());
    }
    return 0.0;
  });
  return Error::Ok;
}

// exponential(self, lambd, generator?, out) / geometric(self, p, generator?, out)
template <bool kGeometric>
Error dist1(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* self = a.tensor(0);
  double p = a.scalar(1);
  Tensor* out = a.out(3);
  if (!a.ok() || !resize_like(a, out, *self)) return a.error();
  if (p <= 0 || (kGeometric && p > 1)) return a.fail("invalid distribution parameter"), a.error();
  fill_random(out, [=](Rng& r, int64_t) {
    double u = 1.0 - r.uniform();  // (0, 1]
    if (kGeometric) return p == 1 ? 1.0 : std::ceil(std::log(u) / std::log1p(-p));
    return -std::log(u) / p;
  });
  return Error::Ok;
}

// normal.Tensor_float(mean, std, gen, out) / normal.Tensor_Tensor / normal.float_Tensor
Error normal_tensor(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  Operand mean(a.at(0)), stdv(a.at(1));
  Tensor* out = a.out(3);
  if (!a.ok()) return a.error();
  if (!mean.valid() || !stdv.valid()) return a.fail("mean/std must be tensors or numbers"), a.error();
  Rng rng;
  KernelContext serial = ctx;  // one generator: no parallel chunks
  serial.thread_pool = nullptr;
  return binary_op(serial, a, mean.tensor(), stdv.tensor(), out, ScalarType::Float64, [&rng](auto tag) {
    using C = decltype(tag);
    return [&rng](C m, C s) -> C {
      if constexpr (std::is_integral<C>::value) return m;
      else return m + s * static_cast<C>(rng.normal());
    };
  });
}

// normal.float_float(mean, std, size[], generator?, dtype?, layout?, device?, pin_memory?, out):
// a new tensor of `size` drawn from N(mean, std^2).
Error normal_sized(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(9)) return a.error();
  const double mean = a.scalar(0), stdv = a.scalar(1);
  Tensor* out = a.out(8);
  if (!a.ok() || !sized(a, 2, out)) return a.error();
  if (!is_floating(out->dtype)) return a.fail("normal needs a floating-point dtype"), a.error();
  if (!(stdv >= 0.0)) return a.fail("normal: std must be non-negative"), a.error();
  fill_random(out, [mean, stdv](Rng& r, int64_t) { return mean + stdv * r.normal(); });
  return Error::Ok;
}

// bernoulli.default(self, generator?, out): p = self; bernoulli.p(self, p, generator?, out)
Error bernoulli(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n != 3 && n != 4) return a.expect(3), a.error();
  const Tensor* self = a.tensor(0);
  double p = n == 4 ? a.scalar(1) : 0;
  Tensor* out = a.out(n - 1);
  if (!a.ok() || !require_contiguous(a, self) || !resize_like(a, out, *self)) return a.error();
  fill_random(out, [&](Rng& r, int64_t i) {
    double prob = n == 4 ? p : load_as<double>(self->data, self->dtype, i);
    return r.uniform() < prob ? 1.0 : 0.0;
  });
  return Error::Ok;
}

// multinomial(self, num_samples, replacement, generator?, out): rows of weights -> indices.
Error multinomial(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* w = a.tensor(0);
  int64_t samples = a.int_value(1);
  bool replacement = a.bool_value(2);
  Tensor* out = a.out(4);
  if (!a.ok() || !require_contiguous(a, w)) return a.error();
  if (w->rank < 1 || w->rank > 2) return a.fail("weights must be 1-D or 2-D"), a.error();
  int64_t cats = w->sizes[w->rank - 1], rows = w->rank == 2 ? w->sizes[0] : 1;
  if (samples <= 0 || (!replacement && samples > cats)) return a.fail("invalid num_samples"), a.error();
  Shape s;
  if (w->rank == 2) s.push(rows);
  s.push(samples);
  if (!resize_to(a, out, s)) return a.error();
  // Without replacement, drawn categories are masked by zeroing their weight in a temp copy.
  double* weights = static_cast<double*>(ctx.allocate_temp(sizeof(double) * static_cast<size_t>(cats + 1)));
  if (weights == nullptr) return a.fail("multinomial needs temp memory", Error::OutOfMemory), a.error();
  Rng rng;
  for (int64_t r = 0; r < rows; ++r) {
    double total = 0;
    for (int64_t c = 0; c < cats; ++c) {
      weights[c] = load_as<double>(w->data, w->dtype, r * cats + c);
      if (!(weights[c] >= 0)) return a.fail("weights must be non-negative"), a.error();
      total += weights[c];
    }
    for (int64_t k = 0; k < samples; ++k) {
      if (!(total > 0)) return a.fail("weights sum to zero"), a.error();
      double u = rng.uniform() * total, acc = 0;
      int64_t pick = cats - 1;
      for (int64_t c = 0; c < cats; ++c) {
        acc += weights[c];
        if (u < acc && weights[c] > 0) {
          pick = c;
          break;
        }
      }
      store_as<int64_t>(out->data, out->dtype, r * samples + k, pick);
      if (!replacement) {
        total -= weights[pick];
        weights[pick] = 0;
      }
    }
  }
  return Error::Ok;
}

// rrelu(self, lower, upper, training, generator?, out): eval mode is leaky_relu with slope
// (lower + upper) / 2; training draws a slope per negative element.
// rrelu_with_noise_functional(self, noise, lower, upper, training, generator?, out, noise_out).
Error rrelu_core(KernelArgs& a, const Tensor* in, double lower, double upper, bool training, Tensor* out,
                 Tensor* noise_out) {
  if (!a.ok() || !require_contiguous(a, in) || !resize_like(a, out, *in)) return a.error();
  if (noise_out != nullptr && !resize_like(a, noise_out, *in)) return a.error();
  Rng rng;
  for (int64_t i = 0; i < in->numel(); ++i) {
    double v = load_as<double>(in->data, in->dtype, i);
    double slope = training ? lower + (upper - lower) * rng.uniform() : (lower + upper) / 2;
    double r = v >= 0 ? v : v * slope;
    store_as<double>(out->data, out->dtype, i, r);
    if (noise_out != nullptr) store_as<double>(noise_out->data, noise_out->dtype, i, v >= 0 || !training ? 1.0 : slope);
  }
  return Error::Ok;
}

Error rrelu(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  return rrelu_core(a, a.tensor(0), a.scalar(1), a.scalar(2), a.bool_value(3), a.out(5), nullptr);
}

Error rrelu_with_noise(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(8)) return a.error();
  return rrelu_core(a, a.tensor(0), a.scalar(2), a.scalar(3), a.bool_value(4), a.out(6), a.out(7));
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::multinomial.default", multinomial);
EMBER_REGISTER_KERNEL("aten::rrelu.default", rrelu);
EMBER_REGISTER_KERNEL("aten::rrelu_with_noise_functional.default", rrelu_with_noise);
EMBER_REGISTER_KERNEL("aten::rand.default", rand<false>);
EMBER_REGISTER_KERNEL("aten::randn.default", rand<true>);
EMBER_REGISTER_KERNEL("aten::rand_like.default", rand_like<false>);
EMBER_REGISTER_KERNEL("aten::randn_like.default", rand_like<true>);
EMBER_REGISTER_KERNEL("aten::randint_like.default", randint_like);
EMBER_REGISTER_KERNEL("aten::randint_like.low_dtype", randint_like);
EMBER_REGISTER_KERNEL("aten::randint.default", randint);
EMBER_REGISTER_KERNEL("aten::randint.low", randint);
EMBER_REGISTER_KERNEL("aten::uniform.default", dist2<Dist::Uniform>);
EMBER_REGISTER_KERNEL("aten::uniform_.default", dist2<Dist::Uniform>);
EMBER_REGISTER_KERNEL("aten::normal_.default", dist2<Dist::Normal>);
EMBER_REGISTER_KERNEL("aten::normal_functional.default", dist2<Dist::Normal>);
EMBER_REGISTER_KERNEL("aten::cauchy.default", dist2<Dist::Cauchy>);
EMBER_REGISTER_KERNEL("aten::cauchy_.default", dist2<Dist::Cauchy>);
EMBER_REGISTER_KERNEL("aten::log_normal.default", dist2<Dist::LogNormal>);
EMBER_REGISTER_KERNEL("aten::log_normal_.default", dist2<Dist::LogNormal>);
EMBER_REGISTER_KERNEL("aten::exponential.default", dist1<false>);
EMBER_REGISTER_KERNEL("aten::exponential_.default", dist1<false>);
EMBER_REGISTER_KERNEL("aten::geometric.default", dist1<true>);
EMBER_REGISTER_KERNEL("aten::geometric_.default", dist1<true>);
EMBER_REGISTER_KERNEL("aten::normal.Tensor_float", normal_tensor);
EMBER_REGISTER_KERNEL("aten::normal.Tensor_Tensor", normal_tensor);
EMBER_REGISTER_KERNEL("aten::normal.float_Tensor", normal_tensor);
EMBER_REGISTER_KERNEL("aten::normal.float_float", normal_sized);
EMBER_REGISTER_KERNEL("aten::bernoulli.default", bernoulli);
EMBER_REGISTER_KERNEL("aten::bernoulli.p", bernoulli);

}  // namespace portable
}  // namespace ember
