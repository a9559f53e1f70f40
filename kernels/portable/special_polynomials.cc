// Orthogonal polynomials of torch.special, elementwise over (x, n) with broadcasting (each
// of x and n a Tensor or a Scalar: the default, .n_scalar and .x_scalar overloads):
// chebyshev_polynomial_t/u/v/w, shifted_chebyshev_polynomial_t/u/v/w, hermite_polynomial_h/
// he, laguerre_polynomial_l, legendre_polynomial_p. Semantics are ATen's (Math.h): n is
// truncated to an integer, n < 0 gives 0, |x| == 1 (shifted: x == 0 or 1) has closed forms,
// large n inside (-1, 1) uses the trigonometric form, everything else the three-term
// recurrence, computed in the operands' (promoted) dtype as ATen does.
//
// One difference: ATen runs the recurrence n times whatever n is, so an order of 2^62 in a
// tensor (a corrupt or hostile program: the hostile-program generator drew one) would keep
// one element busy for centuries, and Laguerre / Legendre values never overflow to stop it.
// Past kMaxRecurrenceSteps the result is NaN instead, so each element's work stays bounded.
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/portable/util/binary_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

// n as ATen sees it: static_cast<int64_t>(n); NaN / out-of-range n count as negative.
template <typename T>
int64_t as_order(T n) {
  if constexpr (std::is_integral<T>::value) {
    return static_cast<int64_t>(n);
  } else {
    if (!(n > -9.2e18 && n < 9.2e18)) return -1;
    return static_cast<int64_t>(n);
  }
}

// Orders whose closed forms do not apply and whose recurrence would run longer give NaN.
constexpr int64_t kMaxRecurrenceSteps = int64_t{1} << 20;

template <typename T>
T order_out_of_range() {
  return std::numeric_limits<T>::quiet_NaN();
}

// The recurrence r = (a x-term) * q - p shared by the Chebyshev kinds: p0 = 1, q = first.
template <typename T>
T chebyshev_recurrence(T two_x, T first, int64_t n) {
  if (n > kMaxRecurrenceSteps) return order_out_of_range<T>();
  T p = 1, q = first, r = first;
  for (int64_t k = 2; k <= n; ++k) {
    r = two_x * q - p;
    p = q;
    q = r;
    if (std::isnan(r)) break;
  }
  return r;
}

template <typename T>
T chebyshev_t(T x, int64_t n) {
  if (n < 0) return 0;
  if (std::fabs(x) == T(1)) return (x > 0 || n % 2 == 0) ? T(1) : T(-1);
  if (n > 6 && std::fabs(x) < T(1)) return std::cos(T(n) * std::acos(x));
  if (n == 0) return 1;
  if (n == 1) return x;
  return chebyshev_recurrence(x + x, x, n);
}

template <typename T>
T chebyshev_u(T x, int64_t n) {
  if (n < 0) return 0;
  if (std::fabs(x) == T(1)) return (x > 0 || n % 2 == 0) ? T(n + 1) : T(-(n + 1));
  if (n > 8 && std::fabs(x) < T(1)) {
    if (std::sin(std::acos(x)) != T(0)) return std::sin(T(n + 1) * std::acos(x)) / std::sin(std::acos(x));
    return T(n + 1) * std::cos(T(n + 1) * std::acos(x)) / x;
  }
  if (n == 0) return 1;
  if (n == 1) return x + x;
  return chebyshev_recurrence(x + x, x + x, n);
}

template <typename T>
T chebyshev_v(T x, int64_t n) {
  if (n < 0) return 0;
  if (std::fabs(x) == T(1)) {
    if (x > 0) return 1;
    return n % 2 == 0 ? T(n + n + 1) : T(-(n + n + 1));
  }
  if (n > 8 && std::fabs(x) < T(1)) {
    if (std::sin(std::acos(x) / T(2)) != T(1)) return std::cos((T(n) + T(0.5)) * std::acos(x)) / std::cos(std::acos(x) / T(2));
    return n % 2 == 0 ? T(n + n + 1) : T(-(n + n + 1));
  }
  if (n == 0) return 1;
  if (n == 1) return x + x - T(1);
  return chebyshev_recurrence(x + x, x + x - T(1), n);
}

template <typename T>
T chebyshev_w(T x, int64_t n) {
  if (n < 0) return 0;
  if (std::fabs(x) == T(1)) {
    if (x > 0) return T(n + n + 1);
    return n % 2 == 0 ? T(1) : T(-1);
  }
  if (n > 8 && std::fabs(x) < T(1)) {
    if (std::cos(std::acos(x) / T(2)) != T(1)) return std::sin((T(n) + T(0.5)) * std::acos(x)) / std::sin(std::acos(x) / T(2));
    if (x > 0) return T(n + n + 1);
    return n % 2 == 0 ? T(1) : T(-1);
  }
  if (n == 0) return 1;
  if (n == 1) return x + x + T(1);
  return chebyshev_recurrence(x + x, x + x + T(1), n);
}

template <typename T>
T shifted_chebyshev_t(T x, int64_t n) {
  if (n < 0) return 0;
  if (x == T(1)) return 1;
  if (x == T(0)) return n % 2 == 0 ? T(1) : T(-1);
  const T y = x + x - T(1);
  if (n > 6 && std::fabs(y) < T(1)) return std::cos(T(n) * std::acos(y));
  if (n == 0) return 1;
  if (n == 1) return y;
  return chebyshev_recurrence(y + y, y, n);
}

template <typename T>
T shifted_chebyshev_u(T x, int64_t n) {
  if (n < 0) return 0;
  if (x == T(1)) return T(n + 1);
  if (x == T(0)) return n % 2 == 0 ? T(n + 1) : T(-(n + 1));
  const T y = x + x - T(1);
  if (n > 6 && std::fabs(y) < T(1)) {
    if (std::sin(std::acos(y)) != T(0)) return std::sin(T(n + 1) * std::acos(y)) / std::sin(std::acos(y));
    return T(n + 1) * std::cos(T(n + 1) * std::acos(y)) / y;
  }
  if (n == 0) return 1;
  if (n == 1) return y + y;
  return chebyshev_recurrence(y + y, y + y, n);
}

template <typename T>
T shifted_chebyshev_v(T x, int64_t n) {
  if (n < 0) return 0;
  if (x == T(1)) return 1;
  if (x == T(0)) return n % 2 == 0 ? T(n + n + 1) : T(-(n + n + 1));
  const T y = x + x - T(1);
  if (n > 6 && std::fabs(y) < T(1)) {
    if (std::sin(std::acos(y) / T(2)) != T(1)) return std::cos((T(n) + T(0.5)) * std::acos(y)) / std::cos(std::acos(y) / T(2));
    return n % 2 == 0 ? T(n + n + 1) : T(-(n + n + 1));
  }
  if (n == 0) return 1;
  if (n == 1) return y + y - T(1);
  return chebyshev_recurrence(y + y, y + y - T(1), n);
}

template <typename T>
T shifted_chebyshev_w(T x, int64_t n) {
  if (n < 0) return 0;
  if (x == T(1)) return T(n + n + 1);
  if (x == T(0)) return n % 2 == 0 ? T(1) : T(-1);
  const T y = x + x - T(1);
  if (n > 4 && std::fabs(y) < T(1)) {
    if (std::cos(std::acos(y) / T(2)) != T(1)) return std::sin((T(n) + T(0.5)) * std::acos(y)) / std::sin(std::acos(y) / T(2));
    return n % 2 == 0 ? T(1) : T(-1);
  }
  if (n == 0) return 1;
  if (n == 1) return y + y + T(1);
  return chebyshev_recurrence(y + y, y + y + T(1), n);
}

// Physicists' Hermite: H_{k+1} = 2x H_k - 2k H_{k-1}.
template <typename T>
T hermite_h(T x, int64_t n) {
  if (n < 0) return 0;
  if (n == 0) return 1;
  if (n == 1) return x + x;
  if (n > kMaxRecurrenceSteps) return order_out_of_range<T>();
  T p = 1, q = x + x, r = 0;
  for (int64_t k = 2; k < n + n; k += 2) {
    r = (x + x) * q - T(k) * p;
    p = q;
    q = r;
    if (std::isnan(r)) break;
  }
  return r;
}

// Probabilists' Hermite: He_{k+1} = x He_k - k He_{k-1}.
template <typename T>
T hermite_he(T x, int64_t n) {
  if (n < 0) return 0;
  if (n == 0) return 1;
  if (n == 1) return x;
  if (n > kMaxRecurrenceSteps) return order_out_of_range<T>();
  T p = 1, q = x, r = 0;
  for (int64_t k = 1; k < n; ++k) {
    r = x * q - T(k) * p;
    p = q;
    q = r;
    if (std::isnan(r)) break;
  }
  return r;
}

template <typename T>
T laguerre_l(T x, int64_t n) {
  if (n < 0) return 0;
  if (std::fabs(x) == T(0)) return 1;
  if (n == 0) return 1;
  if (n == 1) return T(1) - x;
  if (n > kMaxRecurrenceSteps) return order_out_of_range<T>();
  T p = 1, q = T(1) - x, r = 0;
  for (int64_t k = 1; k < n; ++k) {
    r = ((T(k + k) + (T(1) - x)) * q - T(k) * p) / T(k + 1);
    p = q;
    q = r;
    if (std::isnan(r)) break;
  }
  return r;
}

template <typename T>
T legendre_p(T x, int64_t n) {
  if (n < 0) return 0;
  if (std::fabs(x) == T(1)) return (x > 0 || n % 2 == 0) ? T(1) : T(-1);
  if (n == 0) return 1;
  if (n == 1) return x;
  if (n > kMaxRecurrenceSteps) return order_out_of_range<T>();
  T p = 1, q = x, r = 0;
  for (int64_t k = 1; k < n; ++k) {
    r = (T(k + k + 1) * x * q - T(k) * p) / T(k + 1);
    p = q;
    q = r;
    if (std::isnan(r)) break;
  }
  return r;
}

// (x, n, out); x and n Tensor or Scalar; integers promote to float32.
#define EMBER_POLYNOMIAL(fn_name, POLY)                                                  \
  Error fn_name(KernelContext& ctx, EValue** args, size_t n) {                           \
    return binary_entry(ctx, args, n, 3, Promote::Float, [](auto tag) {                  \
      using C = decltype(tag);                                                           \
      return [](C x, C order) -> C {                                                     \
        if constexpr (std::is_integral<C>::value) {                                      \
          return x;                                                                      \
        } else {                                                                         \
          return POLY<C>(x, as_order(order));                                            \
        }                                                                                \
      };                                                                                 \
    });                                                                                  \
  }

EMBER_POLYNOMIAL(chebyshev_t_kernel, chebyshev_t)
EMBER_POLYNOMIAL(chebyshev_u_kernel, chebyshev_u)
EMBER_POLYNOMIAL(chebyshev_v_kernel, chebyshev_v)
EMBER_POLYNOMIAL(chebyshev_w_kernel, chebyshev_w)
EMBER_POLYNOMIAL(shifted_chebyshev_t_kernel, shifted_chebyshev_t)
EMBER_POLYNOMIAL(shifted_chebyshev_u_kernel, shifted_chebyshev_u)
EMBER_POLYNOMIAL(shifted_chebyshev_v_kernel, shifted_chebyshev_v)
EMBER_POLYNOMIAL(shifted_chebyshev_w_kernel, shifted_chebyshev_w)
EMBER_POLYNOMIAL(hermite_h_kernel, hermite_h)
EMBER_POLYNOMIAL(hermite_he_kernel, hermite_he)
EMBER_POLYNOMIAL(laguerre_l_kernel, laguerre_l)
EMBER_POLYNOMIAL(legendre_p_kernel, legendre_p)
#undef EMBER_POLYNOMIAL

}  // namespace

// Each polynomial under its three overloads (Tensor/Scalar operands share the kernel).
EMBER_REGISTER_KERNEL("aten::special_chebyshev_polynomial_t.default", chebyshev_t_kernel);
EMBER_REGISTER_KERNEL("aten::special_chebyshev_polynomial_t.n_scalar", chebyshev_t_kernel);
EMBER_REGISTER_KERNEL("aten::special_chebyshev_polynomial_t.x_scalar", chebyshev_t_kernel);
EMBER_REGISTER_KERNEL("aten::special_chebyshev_polynomial_u.default", chebyshev_u_kernel);
EMBER_REGISTER_KERNEL("aten::special_chebyshev_polynomial_u.n_scalar", chebyshev_u_kernel);
EMBER_REGISTER_KERNEL("aten::special_chebyshev_polynomial_u.x_scalar", chebyshev_u_kernel);
EMBER_REGISTER_KERNEL("aten::special_chebyshev_polynomial_v.default", chebyshev_v_kernel);
EMBER_REGISTER_KERNEL("aten::special_chebyshev_polynomial_v.n_scalar", chebyshev_v_kernel);
EMBER_REGISTER_KERNEL("aten::special_chebyshev_polynomial_v.x_scalar", chebyshev_v_kernel);
EMBER_REGISTER_KERNEL("aten::special_chebyshev_polynomial_w.default", chebyshev_w_kernel);
EMBER_REGISTER_KERNEL("aten::special_chebyshev_polynomial_w.n_scalar", chebyshev_w_kernel);
EMBER_REGISTER_KERNEL("aten::special_chebyshev_polynomial_w.x_scalar", chebyshev_w_kernel);
EMBER_REGISTER_KERNEL("aten::special_shifted_chebyshev_polynomial_t.default", shifted_chebyshev_t_kernel);
EMBER_REGISTER_KERNEL("aten::special_shifted_chebyshev_polynomial_t.n_scalar", shifted_chebyshev_t_kernel);
EMBER_REGISTER_KERNEL("aten::special_shifted_chebyshev_polynomial_t.x_scalar", shifted_chebyshev_t_kernel);
EMBER_REGISTER_KERNEL("aten::special_shifted_chebyshev_polynomial_u.default", shifted_chebyshev_u_kernel);
EMBER_REGISTER_KERNEL("aten::special_shifted_chebyshev_polynomial_u.n_scalar", shifted_chebyshev_u_kernel);
EMBER_REGISTER_KERNEL("aten::special_shifted_chebyshev_polynomial_u.x_scalar", shifted_chebyshev_u_kernel);
EMBER_REGISTER_KERNEL("aten::special_shifted_chebyshev_polynomial_v.default", shifted_chebyshev_v_kernel);
EMBER_REGISTER_KERNEL("aten::special_shifted_chebyshev_polynomial_v.n_scalar", shifted_chebyshev_v_kernel);
EMBER_REGISTER_KERNEL("aten::special_shifted_chebyshev_polynomial_v.x_scalar", shifted_chebyshev_v_kernel);
EMBER_REGISTER_KERNEL("aten::special_shifted_chebyshev_polynomial_w.default", shifted_chebyshev_w_kernel);
EMBER_REGISTER_KERNEL("aten::special_shifted_chebyshev_polynomial_w.n_scalar", shifted_chebyshev_w_kernel);
EMBER_REGISTER_KERNEL("aten::special_shifted_chebyshev_polynomial_w.x_scalar", shifted_chebyshev_w_kernel);
EMBER_REGISTER_KERNEL("aten::special_hermite_polynomial_h.default", hermite_h_kernel);
EMBER_REGISTER_KERNEL("aten::special_hermite_polynomial_h.n_scalar", hermite_h_kernel);
EMBER_REGISTER_KERNEL("aten::special_hermite_polynomial_h.x_scalar", hermite_h_kernel);
EMBER_REGISTER_KERNEL("aten::special_hermite_polynomial_he.default", hermite_he_kernel);
EMBER_REGISTER_KERNEL("aten::special_hermite_polynomial_he.n_scalar", hermite_he_kernel);
EMBER_REGISTER_KERNEL("aten::special_hermite_polynomial_he.x_scalar", hermite_he_kernel);
EMBER_REGISTER_KERNEL("aten::special_laguerre_polynomial_l.default", laguerre_l_kernel);
EMBER_REGISTER_KERNEL("aten::special_laguerre_polynomial_l.n_scalar", laguerre_l_kernel);
EMBER_REGISTER_KERNEL("aten::special_laguerre_polynomial_l.x_scalar", laguerre_l_kernel);
EMBER_REGISTER_KERNEL("aten::special_legendre_polynomial_p.default", legendre_p_kernel);
EMBER_REGISTER_KERNEL("aten::special_legendre_polynomial_p.n_scalar", legendre_p_kernel);
EMBER_REGISTER_KERNEL("aten::special_legendre_polynomial_p.x_scalar", legendre_p_kernel);

}  // namespace portable
}  // namespace ember
