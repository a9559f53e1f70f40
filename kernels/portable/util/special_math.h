// Special functions not in <cmath>: erfinv, digamma, polygamma, i0. Written for double and
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

// Hurwitz zeta(s, q) = sum_k (q + k)^-s for integer s > 1 (as polygamma needs): terms are
// summed directly until q + k >= 10, then Euler-Maclaurin with Bernoulli corrections.
inline double hurwitz_zeta(double s, double q) {
  if (s == 1) return std::numeric_limits<double>::infinity();
  if (q <= 0 && q == std::floor(q)) return std::numeric_limits<double>::infinity();
  double sum = 0;
  while (q < 10) {
    sum += std::pow(q, -s);
    q += 1;
  }
  sum += std::pow(q, 1 - s) / (s - 1) + 0.5 * std::pow(q, -s);
  // Bernoulli terms B2k / (2k)!.
  static const double b[] = {1.0 / 12, -1.0 / 720, 1.0 / 30240, -1.0 / 1209600, 1.0 / 47900160,
                             -691.0 / 1307674368000.0};
  double fac = s * std::pow(q, -s - 1);
  for (int k = 0; k < 6; ++k) {
    sum += b[k] * fac;
    fac *= (s + 2 * k + 1) * (s + 2 * k + 2) / (q * q);
  }
  return sum;
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
  if (scaled && x > 600) {  // exp(x) K(x) ~ sqrt(pi / 2x) (1 + (4v^2 - 1) / 8x)
    return std::sqrt(M_PI / (2 * x)) * (1 + (4 * order * order - 1) / (8 * x));
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

}  // namespace portable
}  // namespace ember
