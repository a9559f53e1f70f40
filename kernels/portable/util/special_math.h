// Special functions not in <cmath>: erfinv, digamma, polygamma, i0, ..., Hurwitz zeta, Airy Ai. Written for double and
// float; accuracy is a few ulp of the computing type.
#pragma once

#include <cmath>
#include <limits>

namespace ember {
namespace portable {

// Inverse error function: an initial rational estimate refined by Newton steps on erf.
template <typename C>
inline C erfinv_value(C y) {
  double x = static_cast<double>(y);
  if (std::isnan(x) || x < -1 || x > 1) return std::numeric_limits<C>::quiet_NaN();
  if (x == 1) return std::numeric_limits<C>::infinity();
  if (x == -1) return -std::numeric_limits<C>::infinity();
  // Initial estimate (Winitzki-style closed form), then Newton iterations.
  const double a = 0.147;
  double ln = std::log(1.0 - x * x);
  double t = 2.0 / (M_PI * a) + ln / 2.0;
  double r = std::sqrt(std::sqrt(t * t - ln / a) - t);
  if (x < 0) r = -r;
  for (int i = 0; i < 4; ++i) {
    double err = std::erf(r) - x;
    r -= err / (2.0 / std::sqrt(M_PI) * std::exp(-r * r));
  }
  return static_cast<C>(r);
}

// Digamma via the recurrence psi(x) = psi(x + 1) - 1/x and the asymptotic series.
inline double digamma_value(double x) {
  if (std::isnan(x)) return x;
  if (x == 0) return std::signbit(x) ? std::numeric_limits<double>::infinity()
                                     : -std::numeric_limits<double>::infinity();
  if (x < 0) {
    if (x == std::floor(x)) return std::numeric_limits<double>::quiet_NaN();
    // Reflection: psi(1 - x) - psi(x) = pi / tan(pi x).
    return digamma_value(1.0 - x) - M_PI / std::tan(M_PI * x);
  }
  double result = 0;
  while (x < 10) {
    result -= 1.0 / x;
    x += 1.0;
  }
  double inv = 1.0 / x, inv2 = inv * inv;
  result += std::log(x) - 0.5 * inv -
            inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 / 132))));
  return result;
}

// Hurwitz zeta(x, q) = sum_k (k + q)^-x, as ATen computes it (Cephes: direct sum until the
// terms are negligible or a = q + k > 9, then Euler-Maclaurin with 12 Bernoulli terms).
inline double hurwitz_zeta(double x, double q) {
  static const double A[] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
                             7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
                             -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18};
  const double machep = 1.11022302462515654042e-16;
  if (x == 1.0) return std::numeric_limits<double>::infinity();
  if (x < 1.0) return std::numeric_limits<double>::quiet_NaN();
  if (q <= 0.0) {
    if (q == std::floor(q)) return std::numeric_limits<double>::infinity();
    if (x != std::floor(x)) return std::numeric_limits<double>::quiet_NaN();
  }
  double s = std::pow(q, -x), a = q, b = 0.0;
  int i = 0;
  while (i < 9 || a <= 9.0) {
    i += 1;
    a += 1.0;
    b = std::pow(a, -x);
    s += b;
    if (-machep * s < b && b < machep * s) return s;
  }
  const double w = a;
  s += b * w / (x - 1.0);
  s -= 0.5 * b;
  a = 1.0;
  double k = 0.0;
  for (int j = 0; j < 12; ++j) {
    a *= x + k;
    b /= w;
    double t = a * b / A[j];
    s = s + t;
    t = std::fabs(t / s);
    if (t < machep) return s;
    k += 1.0;
    a *= x + k;
    b /= w;
    k += 1.0;
  }
  return s;
}

inline double polygamma_value(int64_t n, double x) {
  if (n == 0) return digamma_value(x);
  double fact = 1;
  for (int64_t k = 2; k <= n; ++k) fact *= static_cast<double>(k);
  double sign = (n % 2 == 1) ? 1.0 : -1.0;
  return sign * fact * hurwitz_zeta(static_cast<double>(n + 1), x);
}

// Regularized lower incomplete gamma P(a, x) (series for x < a + 1, continued fraction
// otherwise); upper Q = 1 - P.
inline double igamma_value(double a, double x, bool upper) {
  if (std::isnan(a) || std::isnan(x) || a < 0 || x < 0) return std::numeric_limits<double>::quiet_NaN();
  if (a == 0) return x > 0 ? (upper ? 0.0 : 1.0) : std::numeric_limits<double>::quiet_NaN();
  if (x == 0) return upper ? 1.0 : 0.0;
  if (std::isinf(a)) return std::isinf(x) ? std::numeric_limits<double>::quiet_NaN() : (upper ? 1.0 : 0.0);
  if (std::isinf(x)) return upper ? 0.0 : 1.0;
  double lg = std::lgamma(a);
  if (x < a + 1) {
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 1000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (std::fabs(term) < std::fabs(sum) * 1e-16) break;
    }
    double p = sum * std::exp(-x + a * std::log(x) - lg);
    return upper ? 1.0 - p : p;
  }
  // Lentz's continued fraction for Q.
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 1000; ++i) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-16) break;
  }
  double q = std::exp(-x + a * std::log(x) - lg) * h;
  return upper ? q : 1.0 - q;
}

// Modified Bessel function of the first kind, order 0.
inline double i0_value(double x) {
  double ax = std::fabs(x);
  if (ax > 700) return std::numeric_limits<double>::infinity();
  double q = (x / 2) * (x / 2);
  double term = 1, sum = 1;
  for (int k = 1; k < 1000; ++k) {
    term *= q / (static_cast<double>(k) * k);
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return sum;
}

// torch.special functions of one argument, in double (the float32 results round once).
// Bessel functions come from C++17's special math (std::cyl_bessel_*), with ATen's
// conventions at the domain edges; large arguments use the asymptotic series where the
// plain formula would overflow.
inline double special_i0e(double x) {
  const double ax = std::fabs(x);
  if (ax > 500) return 1.0 / std::sqrt(2 * M_PI * ax) * (1 + 1 / (8 * ax) + 9 / (128 * ax * ax));
  return std::exp(-ax) * std::cyl_bessel_i(0.0, ax);
}
inline double special_i1(double x) {
  const double ax = std::fabs(x);
  if (ax > 700) return x > 0 ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  const double v = std::cyl_bessel_i(1.0, ax);
  return x < 0 ? -v : v;
}
inline double special_i1e(double x) {
  const double ax = std::fabs(x);
  double v = ax > 500 ? 1.0 / std::sqrt(2 * M_PI * ax) * (1 - 3 / (8 * ax) - 15 / (128 * ax * ax))
                      : std::exp(-ax) * std::cyl_bessel_i(1.0, ax);
  return x < 0 ? -v : v;
}
inline double special_bessel_j(double order, double x) {
  const double v = std::cyl_bessel_j(order, std::fabs(x));
  return order == 1.0 && x < 0 ? -v : v;  // j1 is odd, j0 even
}
inline double special_bessel_y(double order, double x) {
  if (std::isnan(x) || x < 0) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0) return -std::numeric_limits<double>::infinity();
  return std::cyl_neumann(order, x);
}
inline double special_bessel_k(double order, double x, bool scaled) {
  if (std::isnan(x) || x < 0) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0) return std::numeric_limits<double>::infinity();
  if (x > 600) {  // exp(x) K(x) ~ sqrt(pi / 2x) (1 + (mu - 1) / 8x + (mu - 1)(mu - 9) / 2(8x)^2), mu = 4v^2
    // (libstdc++'s cyl_bessel_k throws std::domain_error for large x: never call it there.)
    const double mu = 4 * order * order, z = 8 * x;
    const double e = std::sqrt(M_PI / (2 * x)) * (1 + (mu - 1) / z + (mu - 1) * (mu - 9) / (2 * z * z));
    return scaled ? e : e * std::exp(-x);
  }
  const double k = std::cyl_bessel_k(order, x);
  return scaled ? std::exp(x) * k : k;
}
inline double special_erfcx(double x) {
  if (x > 25) {  // exp(x^2) erfc(x) ~ 1 / (x sqrt(pi)) (1 - 1/2x^2 + 3/4x^4)
    const double x2 = x * x;
    return 1.0 / (x * std::sqrt(M_PI)) * (1 - 1 / (2 * x2) + 3 / (4 * x2 * x2));
  }
  return std::exp(x * x) * std::erfc(x);
}
inline double special_entr(double x) {
  if (std::isnan(x)) return x;
  if (x > 0) return -x * std::log(x);
  return x == 0 ? 0.0 : -std::numeric_limits<double>::infinity();
}
inline double special_log_ndtr(double x) {
  if (x < -20) {  // log of the lower tail's asymptotic series
    const double x2 = x * x;
    return -x2 / 2 - std::log(-x) - 0.5 * std::log(2 * M_PI) + std::log(1 - 1 / x2 + 3 / (x2 * x2));
  }
  return std::log(0.5 * std::erfc(-x / std::sqrt(2.0)));
}
inline double special_ndtri(double p) {
  if (p == 0) return -std::numeric_limits<double>::infinity();
  if (p == 1) return std::numeric_limits<double>::infinity();
  if (!(p > 0 && p < 1)) return std::numeric_limits<double>::quiet_NaN();
  return std::sqrt(2.0) * erfinv_value<double>(2 * p - 1);
}
inline double special_spherical_bessel_j0(double x) {
  if (std::isinf(x)) return 0.0;
  return x == 0 ? 1.0 : std::sin(x) / x;
}



// Airy function Ai(x) in double: the Maclaurin series on [-7, 5] (its cancellation costs at
// most ~2e-11 absolute there), the asymptotic expansions (DLMF 9.7.5, 9.7.9) outside.
inline double special_airy_ai(double x) {
  if (std::isnan(x)) return x;
  const double pi = 3.14159265358979323846;
  if (x >= -7.0 && x <= 5.0) {
    const double c1 = 0.355028053887817239260, c2 = 0.258819403792806798405;
    const double x3 = x * x * x;
    double f = 1.0, g = x, tf = 1.0, tg = x;
    for (int k = 1; k < 200; ++k) {
      tf *= x3 / ((3.0 * k - 1.0) * (3.0 * k));
      tg *= x3 / ((3.0 * k) * (3.0 * k + 1.0));
      f += tf;
      g += tg;
      if (std::fabs(tf) < 1e-18 * std::fmax(1.0, std::fabs(f)) && std::fabs(tg) < 1e-18 * std::fmax(1.0, std::fabs(g))) break;
    }
    return c1 * f - c2 * g;
  }
  const double z = std::fabs(x);
  if (std::isinf(z)) return x > 0 ? 0.0 : std::numeric_limits<double>::quiet_NaN();
  const double zeta = 2.0 / 3.0 * z * std::sqrt(z);
  // u_k = (6k-5)(6k-3)(6k-1) / ((2k-1) 216 k) u_{k-1}; terms u_k / zeta^k until they grow.
  if (x > 0) {
    double sum = 1.0, u = 1.0, pw = 1.0, last = 1.0;
    for (int k = 1; k < 40; ++k) {
      u *= (6.0 * k - 5.0) * (6.0 * k - 3.0) * (6.0 * k - 1.0) / ((2.0 * k - 1.0) * 216.0 * k);
      pw /= zeta;
      const double term = u * pw;
      if (term > last || term < 1e-17) break;
      sum += (k % 2 == 1) ? -term : term;
      last = term;
    }
    return std::exp(-zeta) / (2.0 * std::sqrt(pi) * std::sqrt(std::sqrt(z))) * sum;
  }
  double p = 1.0, q = 0.0, u = 1.0, pw = 1.0, last = 1.0;
  for (int k = 1; k < 60; ++k) {
    u *= (6.0 * k - 5.0) * (6.0 * k - 3.0) * (6.0 * k - 1.0) / ((2.0 * k - 1.0) * 216.0 * k);
    pw /= zeta;
    const double term = u * pw;
    if (term > last || term < 1e-17) break;
    last = term;
    // Even k go to P with sign (-1)^(k/2); odd k to Q with sign (-1)^((k-1)/2).
    const int j = k / 2;
    const double sign = (j % 2 == 0) ? 1.0 : -1.0;
    if (k % 2 == 0) p += sign * term;
    else q += sign * term;
  }
  const double phase = zeta - pi / 4.0;
  return (std::cos(phase) * p + std::sin(phase) * q) / (std::sqrt(pi) * std::sqrt(std::sqrt(z)));
}

}  // namespace portable
}  // namespace ember
