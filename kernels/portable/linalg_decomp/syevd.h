// The symmetric eigensolver path of LAPACK's ?syevd for the sizes Ember meets (n <= 25, where
// ?stedc is ?steqr): ?sytd2 (lower) reduces to tridiagonal form, ?steqr (implicit QL/QR with
// Wilkinson shifts, from the identity) diagonalises it, ?ormtr applies the reduction, then
// eigenvalues are sorted ascending. Written after the reference algorithm with the plane
// rotation convention of LAPACK 3.2's ?lartg, which is what PyTorch's CPU (MKL) results
// show: eigenvectors then carry the same signs as PyTorch's, not just the same span.
// Templated on the computing type so float32 inputs take float32's branch decisions (the
// deflation and convergence tests depend on the type's epsilon), as ssyevd does.
// Row-major; no allocation (the caller passes work).
#pragma once

#include <cmath>
#include <cstdint>

namespace ember {
namespace portable {
namespace dense {
namespace syevd_detail {

template <typename T>
struct Limits;
template <>
struct Limits<double> {
  static constexpr double eps = 1.1102230246251565e-16, safmin = 2.2250738585072014e-308;
};
template <>
struct Limits<float> {
  static constexpr float eps = 5.9604645e-08f, safmin = 1.17549435e-38f;
};

template <typename T>
inline T sign_of(T a, T b) { return std::signbit(b) ? -std::fabs(a) : std::fabs(a); }

// ?lartg as LAPACK 3.2 defines it: c = f / r, s = g / r, r = sqrt(f^2 + g^2), negated
// together when |f| > |g| and f < 0.
template <typename T>
inline void lartg(T f, T g, T* c, T* s, T* r) {
  if (g == T(0)) { *c = 1; *s = 0; *r = f; return; }
  if (f == T(0)) { *c = 0; *s = 1; *r = g; return; }
  const T rr = std::sqrt(f * f + g * g);
  *c = f / rr;
  *s = g / rr;
  *r = rr;
  if (std::fabs(f) > std::fabs(g) && *c < T(0)) { *c = -*c; *s = -*s; *r = -*r; }
}

// ?larfg on alpha and x[0..k) (stride incx): returns tau; alpha becomes beta.
template <typename T>
inline T larfg(T* alpha, T* x, int64_t k, int64_t incx) {
  if (k <= 0) return 0;
  T xnorm = 0;
  for (int64_t i = 0; i < k; ++i) xnorm = std::hypot(xnorm, x[i * incx]);
  if (xnorm == T(0)) return 0;
  const T beta = -sign_of(std::hypot(*alpha, xnorm), *alpha);
  const T tau = (beta - *alpha) / beta;
  const T scale = T(1) / (*alpha - beta);
  for (int64_t i = 0; i < k; ++i) x[i * incx] *= scale;
  *alpha = beta;
  return tau;
}

// ?laev2: eigen-decomposition of [[a, b], [b, c]]: rt1 (larger |.|), rt2, (cs1, sn1) rt1's vector.
template <typename T>
inline void laev2(T a, T b, T c, T* rt1, T* rt2, T* cs1, T* sn1) {
  const T sm = a + c, df = a - c, adf = std::fabs(df), tb = b + b, ab = std::fabs(tb);
  const T acmx = std::fabs(a) > std::fabs(c) ? a : c, acmn = std::fabs(a) > std::fabs(c) ? c : a;
  T rt;
  if (adf > ab) rt = adf * std::sqrt(T(1) + (ab / adf) * (ab / adf));
  else if (adf < ab) rt = ab * std::sqrt(T(1) + (adf / ab) * (adf / ab));
  else rt = ab * std::sqrt(T(2));
  int sgn1, sgn2;
  if (sm < T(0)) {
    *rt1 = T(0.5) * (sm - rt);
    sgn1 = -1;
    *rt2 = (acmx / *rt1) * acmn - (b / *rt1) * b;
  } else if (sm > T(0)) {
    *rt1 = T(0.5) * (sm + rt);
    sgn1 = 1;
    *rt2 = (acmx / *rt1) * acmn - (b / *rt1) * b;
  } else {
    *rt1 = T(0.5) * rt;
    *rt2 = T(-0.5) * rt;
    sgn1 = 1;
  }
  T cs;
  if (df >= T(0)) { cs = df + rt; sgn2 = 1; } else { cs = df - rt; sgn2 = -1; }
  if (std::fabs(cs) > ab) {
    const T ct = -tb / cs;
    *sn1 = T(1) / std::sqrt(T(1) + ct * ct);
    *cs1 = ct * *sn1;
  } else if (ab == T(0)) {
    *cs1 = 1;
    *sn1 = 0;
  } else {
    const T tn = -cs / tb;
    *cs1 = T(1) / std::sqrt(T(1) + tn * tn);
    *sn1 = tn * *cs1;
  }
  if (sgn1 == sgn2) {
    const T tn = *cs1;
    *cs1 = -*sn1;
    *sn1 = tn;
  }
}

// ?lasr('R', 'V', forward ? 'F' : 'B') on columns j0 .. j0 + mm - 1 of the n x n z.
template <typename T>
inline void lasr_right(bool forward, int64_t n, int64_t mm, const T* c, const T* s, T* z, int64_t j0) {
  for (int64_t t = 0; t + 1 < mm; ++t) {
    const int64_t j = forward ? t : mm - 2 - t;
    const T ct = c[j], st = s[j];
    if (ct == T(1) && st == T(0)) continue;
    for (int64_t i = 0; i < n; ++i) {
      const T temp = z[i * n + j0 + j + 1];
      z[i * n + j0 + j + 1] = ct * temp - st * z[i * n + j0 + j];
      z[i * n + j0 + j] = st * temp + ct * z[i * n + j0 + j];
    }
  }
}

// ?steqr, compz = 'I' (z starts as the identity): d[n], e[n-1] destroyed; work: 2n.
template <typename T>
bool steqr(int64_t n, T* d0, T* e0, T* z, T* work0) {
  T* d = d0 - 1;  // 1-based, as the algorithm is stated
  T* e = e0 - 1;
  T* work = work0 - 1;
  const T eps = Limits<T>::eps, eps2 = eps * eps, safmin = Limits<T>::safmin, safmax = T(1) / safmin;
  const T ssfmax = std::sqrt(safmax) / T(3), ssfmin = std::sqrt(safmin) / eps2;
  const int64_t nmaxit = n * 30;
  int64_t jtot = 0, l1 = 1;
  while (l1 <= n) {
    if (l1 > 1) e[l1 - 1] = 0;
    int64_t m = l1;
    for (; m <= n - 1; ++m) {
      const T tst = std::fabs(e[m]);
      if (tst == T(0)) break;
      if (tst <= (std::sqrt(std::fabs(d[m])) * std::sqrt(std::fabs(d[m + 1]))) * eps) {
        e[m] = 0;
        break;
      }
    }
    if (m > n - 1) m = n;
    int64_t l = l1, lsv = l, lend = m, lendsv = lend;
    l1 = m + 1;
    if (lend == l) continue;
    T anorm = 0;
    for (int64_t i = l; i <= lend; ++i) anorm = std::fmax(anorm, std::fabs(d[i]));
    for (int64_t i = l; i < lend; ++i) anorm = std::fmax(anorm, std::fabs(e[i]));
    if (anorm == T(0)) continue;
    T scale = 1;
    if (anorm > ssfmax) scale = ssfmax / anorm;
    if (anorm < ssfmin) scale = ssfmin / anorm;
    if (scale != T(1)) {
      for (int64_t i = l; i <= lend; ++i) d[i] *= scale;
      for (int64_t i = l; i < lend; ++i) e[i] *= scale;
    }
    if (std::fabs(d[lend]) < std::fabs(d[l])) {
      lend = lsv;
      l = lendsv;
    }
    if (lend > l) {  // QL iteration: look for small subdiagonal elements from the top
      while (true) {
        m = l;
        for (; m <= lend - 1; ++m) {
          const T tst = std::fabs(e[m]) * std::fabs(e[m]);
          if (tst <= (eps2 * std::fabs(d[m])) * std::fabs(d[m + 1]) + safmin) break;
        }
        if (m > lend - 1) m = lend;
        if (m < lend) e[m] = 0;
        T p = d[l];
        if (m == l) {  // an eigenvalue
          d[l] = p;
          if (++l <= lend) continue;
          break;
        }
        if (m == l + 1) {  // a 2 x 2 block
          T rt1, rt2, c, s;
          laev2(d[l], e[l], d[l + 1], &rt1, &rt2, &c, &s);
          work[l] = c;
          work[n - 1 + l] = s;
          lasr_right(false, n, 2, &work[l], &work[n - 1 + l], z, l - 1);
          d[l] = rt1;
          d[l + 1] = rt2;
          e[l] = 0;
          l += 2;
          if (l <= lend) continue;
          break;
        }
        if (jtot == nmaxit) break;
        ++jtot;
        T g = (d[l + 1] - p) / (T(2) * e[l]);
        T r = std::hypot(g, T(1));
        g = d[m] - p + (e[l] / (g + sign_of(r, g)));
        T s = 1, c = 1;
        p = 0;
        for (int64_t i = m - 1; i >= l; --i) {
          const T f = s * e[i], b = c * e[i];
          lartg(g, f, &c, &s, &r);
          if (i != m - 1) e[i + 1] = r;
          g = d[i + 1] - p;
          r = (d[i] - g) * s + T(2) * c * b;
          p = s * r;
          d[i + 1] = g + p;
          g = c * r - b;
          work[i] = c;
          work[n - 1 + i] = -s;
        }
        lasr_right(false, n, m - l + 1, &work[l], &work[n - 1 + l], z, l - 1);
        d[l] -= p;
        e[l] = g;
      }
    } else {  // QR iteration: from the bottom
      while (true) {
        m = l;
        for (; m >= lend + 1; --m) {
          const T tst = std::fabs(e[m - 1]) * std::fabs(e[m - 1]);
          if (tst <= (eps2 * std::fabs(d[m])) * std::fabs(d[m - 1]) + safmin) break;
        }
        if (m < lend + 1) m = lend;
        if (m > lend) e[m - 1] = 0;
        T p = d[l];
        if (m == l) {
          d[l] = p;
          if (--l >= lend) continue;
          break;
        }
        if (m == l - 1) {
          T rt1, rt2, c, s;
          laev2(d[l - 1], e[l - 1], d[l], &rt1, &rt2, &c, &s);
          work[m] = c;
          work[n - 1 + m] = s;
          lasr_right(true, n, 2, &work[m], &work[n - 1 + m], z, l - 2);
          d[l - 1] = rt1;
          d[l] = rt2;
          e[l - 1] = 0;
          l -= 2;
          if (l >= lend) continue;
          break;
        }
        if (jtot == nmaxit) break;
        ++jtot;
        T g = (d[l - 1] - p) / (T(2) * e[l - 1]);
        T r = std::hypot(g, T(1));
        g = d[m] - p + (e[l - 1] / (g + sign_of(r, g)));
        T s = 1, c = 1;
        p = 0;
        for (int64_t i = m; i <= l - 1; ++i) {
          const T f = s * e[i], b = c * e[i];
          lartg(g, f, &c, &s, &r);
          if (i != m) e[i - 1] = r;
          g = d[i] - p;
          r = (d[i + 1] - g) * s + T(2) * c * b;
          p = s * r;
          d[i] = g + p;
          g = c * r - b;
          work[i] = c;
          work[n - 1 + i] = s;
        }
        lasr_right(true, n, l - m + 1, &work[m], &work[n - 1 + m], z, m - 1);
        d[l] -= p;
        e[l - 1] = g;
      }
    }
    if (scale != T(1)) {
      for (int64_t i = lsv; i <= lendsv; ++i) d[i] /= scale;
      for (int64_t i = lsv; i < lendsv; ++i) e[i] /= scale;
    }
    if (jtot >= nmaxit) return false;
  }
  // Ascending order by selection sort (columns of z move along), as ?steqr.
  for (int64_t ii = 2; ii <= n; ++ii) {
    const int64_t i = ii - 1;
    int64_t k = i;
    T p = d[i];
    for (int64_t j = ii; j <= n; ++j) {
      if (d[j] < p) { k = j; p = d[j]; }
    }
    if (k != i) {
      d[k] = d[i];
      d[i] = p;
      for (int64_t row = 0; row < n; ++row) {
        const T t = z[row * n + i - 1];
        z[row * n + i - 1] = z[row * n + k - 1];
        z[row * n + k - 1] = t;
      }
    }
  }
  return true;
}

}  // namespace syevd_detail

// Work (in T) syevd() needs for an n x n matrix.
inline int64_t syevd_work(int64_t n) { return 5 * n + 4; }

// Eigenvalues w[n] (ascending) and eigenvectors as v's columns (n x n, row-major; required,
// also when only the values are wanted) of the symmetric matrix whose `lower` (else upper)
// triangle is in a (row-major n x n; destroyed), reduced as ?sytd2 reduces that triangle.
// work: syevd_work(n). False when the QL/QR iteration did not converge (non-finite input).
template <typename T>
bool syevd(T* a, int64_t n, bool lower, T* w, T* v, T* work) {
  using namespace syevd_detail;
  if (n <= 0) return true;
  auto A = [a, n](int64_t i, int64_t j) -> T& { return a[i * n + j]; };
  T* e = work;            // n - 1
  T* tau = e + n;         // n - 1
  T* x = tau + n;         // n
  T* rot = x + n;         // 2n
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(A(i, i))) return false;
  if (lower) {
    // ?sytd2 'L': H(i) annihilates A(i+2:, i); A22 -= v x^T + x v^T on its lower triangle.
    for (int64_t i = 0; i + 1 < n; ++i) {
      const T taui = larfg(&A(i + 1, i), i + 2 < n ? &A(i + 2, i) : &A(i + 1, i), n - i - 2, n);
      e[i] = A(i + 1, i);
      if (taui != T(0)) {
        A(i + 1, i) = 1;
        const int64_t m = n - i - 1;
        for (int64_t r = 0; r < m; ++r) {  // x = tau * A22 v
          T acc = 0;
          for (int64_t c = 0; c < m; ++c) {
            const int64_t rr = i + 1 + r, cc = i + 1 + c;
            acc += (rr >= cc ? A(rr, cc) : A(cc, rr)) * A(i + 1 + c, i);
          }
          x[r] = taui * acc;
        }
        T dot = 0;
        for (int64_t r = 0; r < m; ++r) dot += x[r] * A(i + 1 + r, i);
        const T alpha = T(-0.5) * taui * dot;
        for (int64_t r = 0; r < m; ++r) x[r] += alpha * A(i + 1 + r, i);
        for (int64_t c = 0; c < m; ++c)
          for (int64_t r = c; r < m; ++r) A(i + 1 + r, i + 1 + c) -= A(i + 1 + r, i) * x[c] + x[r] * A(i + 1 + c, i);
        A(i + 1, i) = e[i];
      }
      w[i] = A(i, i);
      tau[i] = taui;
    }
    w[n - 1] = A(n - 1, n - 1);
  } else {
    // ?sytd2 'U': for i = n-2 .. 0, H(i) annihilates A(0:i-1, i+1) (v(i) = 1, v above it in
    // column i+1); A11 = A(0:i, 0:i) -= v x^T + x v^T on its upper triangle.
    for (int64_t i = n - 2; i >= 0; --i) {
      const T taui = larfg(&A(i, i + 1), &A(0, i + 1), i, n);
      e[i] = A(i, i + 1);
      if (taui != T(0)) {
        A(i, i + 1) = 1;
        const int64_t m = i + 1;
        for (int64_t r = 0; r < m; ++r) {  // x = tau * A11 v
          T acc = 0;
          for (int64_t c = 0; c < m; ++c) acc += (r <= c ? A(r, c) : A(c, r)) * A(c, i + 1);
          x[r] = taui * acc;
        }
        T dot = 0;
        for (int64_t r = 0; r < m; ++r) dot += x[r] * A(r, i + 1);
        const T alpha = T(-0.5) * taui * dot;
        for (int64_t r = 0; r < m; ++r) x[r] += alpha * A(r, i + 1);
        for (int64_t c = 0; c < m; ++c)
          for (int64_t r = 0; r <= c; ++r) A(r, c) -= A(r, i + 1) * x[c] + x[r] * A(c, i + 1);
        A(i, i + 1) = e[i];
      }
      w[i + 1] = A(i + 1, i + 1);
      tau[i] = taui;
    }
    w[0] = A(0, 0);
  }
  T* z = v;
  for (int64_t i = 0; i < n * n; ++i) z[i] = (i % (n + 1) == 0) ? T(1) : T(0);
  if (n > 1 && !steqr(n, w, e, z, rot)) return false;
  if (lower) {
    // ?ormtr 'L': z := Q z, Q = H(0) ... H(n-2) on rows 1 .. n-1 (the last reflector first).
    for (int64_t t = n - 2; t >= 0; --t) {
      if (tau[t] == T(0)) continue;
      for (int64_t col = 0; col < n; ++col) {
        T acc = z[(t + 1) * n + col];
        for (int64_t r = t + 2; r < n; ++r) acc += A(r, t) * z[r * n + col];
        acc *= tau[t];
        z[(t + 1) * n + col] -= acc;
        for (int64_t r = t + 2; r < n; ++r) z[r * n + col] -= acc * A(r, t);
      }
    }
  } else {
    // ?ormtr 'U': z := Q z, Q = H(n-2) ... H(0) on rows 0 .. n-2 (H(0) first); H(t) has
    // v(t) = 1 and v(0:t-1) in column t+1.
    for (int64_t t = 0; t + 1 < n; ++t) {
      if (tau[t] == T(0)) continue;
      for (int64_t col = 0; col < n; ++col) {
        T acc = z[t * n + col];
        for (int64_t r = 0; r < t; ++r) acc += A(r, t + 1) * z[r * n + col];
        acc *= tau[t];
        z[t * n + col] -= acc;
        for (int64_t r = 0; r < t; ++r) z[r * n + col] -= acc * A(r, t + 1);
      }
    }
  }
  return true;
}

}  // namespace dense
}  // namespace portable
}  // namespace ember
