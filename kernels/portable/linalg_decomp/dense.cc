// Golub-Kahan SVD for the decomposition kernels (see dense.h).
#include "kernels/portable/linalg_decomp/dense.h"

namespace ember {
namespace portable {
namespace dense {
namespace {

// x' = c x + s y, y' = c y - s x on rows i and j of an n x cols row-major matrix.
void rot_rows(double* a, int64_t cols, int64_t i, int64_t j, double c, double s) {
  double* x = a + i * cols;
  double* y = a + j * cols;
  for (int64_t k = 0; k < cols; ++k) {
    double t = c * x[k] + s * y[k];
    y[k] = c * y[k] - s * x[k];
    x[k] = t;
  }
}
// The same on columns i and j of a rows x ld row-major matrix.
void rot_cols(double* a, int64_t rows, int64_t ld, int64_t i, int64_t j, double c, double s) {
  for (int64_t k = 0; k < rows; ++k) {
    double* x = a + k * ld + i;
    double* y = a + k * ld + j;
    double t = c * *x + s * *y;
    *y = c * *y - s * *x;
    *x = t;
  }
}

}  // namespace

bool bidiag_svd(int64_t n, double* d_, double* e_, double* vt, int64_t ncvt, double* u, int64_t nru,
                double* work) {
  (void)work;
  if (n <= 0) return true;
  // 1-based views, as in the usual statement of the algorithm.
  double* d = d_ - 1;
  double* e = e_ - 1;
  const double eps = 1.1102230246251565e-16;
  const double unfl = 2.2250738585072014e-308;
  const int64_t maxitr = 6;
  double tolmul = std::pow(eps, -0.125);
  if (tolmul > 100.0) tolmul = 100.0;
  if (tolmul < 10.0) tolmul = 10.0;
  const double tol = tolmul * eps;
  // Vector updates: rows of vt (1-based i -> row i-1) and columns of u.
  auto rot_v = [&](int64_t i, int64_t j, double c, double s) {
    if (ncvt > 0) rot_rows(vt, ncvt, i - 1, j - 1, c, s);
  };
  auto rot_u = [&](int64_t i, int64_t j, double c, double s) {
    if (nru > 0) rot_cols(u, nru, n, i - 1, j - 1, c, s);
  };
  if (n > 1) {
    double smax = 0;
    for (int64_t i = 1; i <= n; ++i) smax = std::fmax(smax, std::fabs(d[i]));
    for (int64_t i = 1; i < n; ++i) smax = std::fmax(smax, std::fabs(e[i]));
    double sminoa = std::fabs(d[1]);
    if (sminoa != 0.0) {
      double mu = sminoa;
      for (int64_t i = 2; i <= n; ++i) {
        mu = std::fabs(d[i]) * (mu / (mu + std::fabs(e[i - 1])));
        sminoa = std::fmin(sminoa, mu);
        if (sminoa == 0.0) break;
      }
    }
    sminoa = sminoa / std::sqrt(static_cast<double>(n));
    const double thresh = std::fmax(tol * sminoa, static_cast<double>(maxitr) * (n * (n * unfl)));
    const int64_t maxit = maxitr * n * n;
    int64_t iter = 0, oldll = -1, oldm = -1, m = n, idir = 0;
    while (m > 1) {
      if (iter > maxit) return false;
      // Find the bottom unreduced block d[ll..m].
      double smax_b = std::fabs(d[m]);
      int64_t ll = 0;
      bool split = false;
      for (int64_t lll = 1; lll <= m - 1; ++lll) {
        ll = m - lll;
        double abss = std::fabs(d[ll]), abse = std::fabs(e[ll]);
        if (abse <= thresh) { split = true; break; }
        smax_b = std::fmax(smax_b, std::fmax(abss, abse));
      }
      if (split) {
        e[ll] = 0.0;
        if (ll == m - 1) { m -= 1; continue; }
      } else {
        ll = 0;
      }
      ll += 1;
      if (ll == m - 1) {  // 2 x 2 block
        double sigmn, sigmx, sinr, cosr, sinl, cosl;
        sv2x2(d[m - 1], e[m - 1], d[m], &sigmn, &sigmx, &sinr, &cosr, &sinl, &cosl);
        d[m - 1] = sigmx;
        e[m - 1] = 0.0;
        d[m] = sigmn;
        rot_v(m - 1, m, cosr, sinr);
        rot_u(m - 1, m, cosl, sinl);
        m -= 2;
        continue;
      }
      if (ll > oldm || m < oldll) idir = std::fabs(d[ll]) >= std::fabs(d[m]) ? 1 : 2;
      // Convergence tests.
      double sminl = 0;
      bool restart = false;
      if (idir == 1) {
        if (std::fabs(e[m - 1]) <= tol * std::fabs(d[m])) { e[m - 1] = 0.0; continue; }
        double mu = std::fabs(d[ll]);
        sminl = mu;
        for (int64_t lll = ll; lll <= m - 1; ++lll) {
          if (std::fabs(e[lll]) <= tol * mu) { e[lll] = 0.0; restart = true; break; }
          mu = std::fabs(d[lll + 1]) * (mu / (mu + std::fabs(e[lll])));
          sminl = std::fmin(sminl, mu);
        }
      } else {
        if (std::fabs(e[ll]) <= tol * std::fabs(d[ll])) { e[ll] = 0.0; continue; }
        double mu = std::fabs(d[m]);
        sminl = mu;
        for (int64_t lll = m - 1; lll >= ll; --lll) {
          if (std::fabs(e[lll]) <= tol * mu) { e[lll] = 0.0; restart = true; break; }
          mu = std::fabs(d[lll]) * (mu / (mu + std::fabs(e[lll])));
          sminl = std::fmin(sminl, mu);
        }
      }
      if (restart) continue;
      oldll = ll;
      oldm = m;
      // Shift (zero when it would spoil relative accuracy).
      double shift = 0, r = 0;
      if (static_cast<double>(n) * tol * (sminl / smax_b) <= std::fmax(eps, 0.01 * tol)) {
        shift = 0.0;
      } else {
        double sll;
        if (idir == 1) {
          sll = std::fabs(d[ll]);
          sv2x2_values(d[m - 1], e[m - 1], d[m], &shift, &r);
        } else {
          sll = std::fabs(d[m]);
          sv2x2_values(d[ll], e[ll], d[ll + 1], &shift, &r);
        }
        if (sll > 0.0 && (shift / sll) * (shift / sll) < eps) shift = 0.0;
      }
      iter += m - ll;
      if (shift == 0.0) {
        if (idir == 1) {
          double cs = 1, sn = 0, oldcs = 1, oldsn = 0;
          for (int64_t i = ll; i <= m - 1; ++i) {
            rotg(d[i] * cs, e[i], &cs, &sn, &r);
            if (i > ll) e[i - 1] = oldsn * r;
            rotg(oldcs * r, d[i + 1] * sn, &oldcs, &oldsn, &d[i]);
            rot_v(i, i + 1, cs, sn);
            rot_u(i, i + 1, oldcs, oldsn);
          }
          double h = d[m] * cs;
          d[m] = h * oldcs;
          e[m - 1] = h * oldsn;
          if (std::fabs(e[m - 1]) <= thresh) e[m - 1] = 0.0;
        } else {
          double cs = 1, sn = 0, oldcs = 1, oldsn = 0;
          for (int64_t i = m; i >= ll + 1; --i) {
            rotg(d[i] * cs, e[i - 1], &cs, &sn, &r);
            if (i < m) e[i] = oldsn * r;
            rotg(oldcs * r, d[i - 1] * sn, &oldcs, &oldsn, &d[i]);
            rot_v(i - 1, i, oldcs, -oldsn);
            rot_u(i - 1, i, cs, -sn);
          }
          double h = d[ll] * cs;
          d[ll] = h * oldcs;
          e[ll] = h * oldsn;
          if (std::fabs(e[ll]) <= thresh) e[ll] = 0.0;
        }
      } else {
        if (idir == 1) {
          double f = (std::fabs(d[ll]) - shift) * (copysign_d(1.0, d[ll]) + shift / d[ll]);
          double g = e[ll];
          for (int64_t i = ll; i <= m - 1; ++i) {
            double cosr, sinr, cosl, sinl;
            rotg(f, g, &cosr, &sinr, &r);
            if (i > ll) e[i - 1] = r;
            f = cosr * d[i] + sinr * e[i];
            e[i] = cosr * e[i] - sinr * d[i];
            g = sinr * d[i + 1];
            d[i + 1] = cosr * d[i + 1];
            rotg(f, g, &cosl, &sinl, &r);
            d[i] = r;
            f = cosl * e[i] + sinl * d[i + 1];
            d[i + 1] = cosl * d[i + 1] - sinl * e[i];
            if (i < m - 1) {
              g = sinl * e[i + 1];
              e[i + 1] = cosl * e[i + 1];
            }
            rot_v(i, i + 1, cosr, sinr);
            rot_u(i, i + 1, cosl, sinl);
          }
          e[m - 1] = f;
          if (std::fabs(e[m - 1]) <= thresh) e[m - 1] = 0.0;
        } else {
          double f = (std::fabs(d[m]) - shift) * (copysign_d(1.0, d[m]) + shift / d[m]);
          double g = e[m - 1];
          for (int64_t i = m; i >= ll + 1; --i) {
            double cosr, sinr, cosl, sinl;
            rotg(f, g, &cosr, &sinr, &r);
            if (i < m) e[i] = r;
            f = cosr * d[i] + sinr * e[i - 1];
            e[i - 1] = cosr * e[i - 1] - sinr * d[i];
            g = sinr * d[i - 1];
            d[i - 1] = cosr * d[i - 1];
            rotg(f, g, &cosl, &sinl, &r);
            d[i] = r;
            f = cosl * e[i - 1] + sinl * d[i - 1];
            d[i - 1] = cosl * d[i - 1] - sinl * e[i - 1];
            if (i > ll + 1) {
              g = sinl * e[i - 2];
              e[i - 2] = cosl * e[i - 2];
            }
            rot_v(i - 1, i, cosl, -sinl);
            rot_u(i - 1, i, cosr, -sinr);
          }
          e[ll] = f;
          if (std::fabs(e[ll]) <= thresh) e[ll] = 0.0;
        }
      }
    }
  }
  // Make the singular values nonnegative, then sort them into decreasing order.
  for (int64_t i = 1; i <= n; ++i) {
    if (d[i] < 0.0) {
      d[i] = -d[i];
      if (ncvt > 0) {
        for (int64_t k = 0; k < ncvt; ++k) vt[(i - 1) * ncvt + k] = -vt[(i - 1) * ncvt + k];
      }
    }
  }
  for (int64_t i = 1; i <= n - 1; ++i) {
    int64_t isub = 1;
    double smin = d[1];
    for (int64_t j = 2; j <= n + 1 - i; ++j) {
      if (d[j] <= smin) { isub = j; smin = d[j]; }
    }
    int64_t last = n + 1 - i;
    if (isub != last) {
      d[isub] = d[last];
      d[last] = smin;
      if (ncvt > 0) {
        for (int64_t k = 0; k < ncvt; ++k) {
          double t = vt[(isub - 1) * ncvt + k];
          vt[(isub - 1) * ncvt + k] = vt[(last - 1) * ncvt + k];
          vt[(last - 1) * ncvt + k] = t;
        }
      }
      if (nru > 0) {
        for (int64_t k = 0; k < nru; ++k) {
          double t = u[k * n + isub - 1];
          u[k * n + isub - 1] = u[k * n + last - 1];
          u[k * n + last - 1] = t;
        }
      }
    }
  }
  return true;
}

int64_t svd_work_size(int64_t m, int64_t n) {
  // d, e, tauq, taup, bidiagonal U and VT (n x n each), R copy (n x n), rotation work.
  return 4 * n + 3 * n * n + 4 * n + 8;
}

namespace {

// Path for m >= n without a preliminary QR: bidiagonalise a (m x n, destroyed), then
// u (m x ucols) = Q diag(U_B, I), vt = VT_B P^T.
bool svd_bidiag_path(double* a, int64_t m, int64_t n, int64_t ucols, double* s, double* u, double* vt,
                     double* work) {
  double* e = work;
  double* tauq = e + n;
  double* taup = tauq + n;
  double* ub = taup + n;
  double* rot = ub + n * n;
  for (int64_t i = 0; i < n; ++i) {
    double* aii = a + i * n + i;
    tauq[i] = householder(aii, aii + n, m - i - 1, n);
    s[i] = *aii;
    if (i + 1 < n) {
      apply_reflector(a, n, i, tauq[i], true, a + i + 1, m, n - i - 1, n);
      double* aij = a + i * n + i + 1;
      taup[i] = householder(aij, aij + 1, n - i - 2, 1);
      e[i] = *aij;
      // Apply G_i from the right to rows i+1..m-1, columns i+1..n-1 (v = (1, a[i][i+2..])).
      if (taup[i] != 0.0) {
        for (int64_t r = i + 1; r < m; ++r) {
          double* row = a + r * n;
          double dot = row[i + 1];
          for (int64_t j = i + 2; j < n; ++j) dot += row[j] * a[i * n + j];
          dot *= taup[i];
          row[i + 1] -= dot;
          for (int64_t j = i + 2; j < n; ++j) row[j] -= dot * a[i * n + j];
        }
      }
    } else {
      taup[i] = 0.0;
    }
  }
  // Bidiagonal SVD from identities.
  for (int64_t i = 0; i < n * n; ++i) ub[i] = 0.0, vt[i] = 0.0;
  for (int64_t i = 0; i < n; ++i) ub[i * n + i] = 1.0, vt[i * n + i] = 1.0;
  if (n == 1) {
    ub[0] = s[0] < 0 ? -1.0 : 1.0;
    s[0] = std::fabs(s[0]);
  } else if (!bidiag_svd(n, s, e, vt, n, ub, n, rot)) {
    return false;
  }
  // u = Q diag(U_B, I).
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ucols; ++j) {
      u[i * ucols + j] = (i < n && j < n) ? ub[i * n + j] : (i == j ? 1.0 : 0.0);
    }
  }
  ormqr(a, n, tauq, n, true, false, u, m, ucols);
  // vt = VT_B P^T = VT_B G_{n-2} ... G_0.
  for (int64_t t = n - 2; t >= 0; --t) {
    if (taup[t] == 0.0) continue;
    for (int64_t r = 0; r < n; ++r) {
      double* row = vt + r * n;
      double dot = row[t + 1];
      for (int64_t j = t + 2; j < n; ++j) dot += row[j] * a[t * n + j];
      dot *= taup[t];
      row[t + 1] -= dot;
      for (int64_t j = t + 2; j < n; ++j) row[j] -= dot * a[t * n + j];
    }
  }
  return true;
}

}  // namespace

bool svd_tall(double* a, int64_t m, int64_t n, bool full, double* s, double* u, double* vt, double* work) {
  const int64_t ucols = full ? m : n;
  const int64_t mnthr = static_cast<int64_t>(static_cast<double>(n) * 11.0 / 6.0);
  if (m > n && m >= mnthr && n > 0) {
    // Much taller than wide: QR first, SVD of R, then U = Q_qr diag(U_R, I).
    double* tau = work;
    double* r = tau + n;
    double* ur = r + n * n;
    double* rest = ur + n * n;
    geqrf(a, m, n, tau);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) r[i * n + j] = j >= i ? a[i * n + j] : 0.0;
    if (!svd_bidiag_path(r, n, n, n, s, ur, vt, rest)) return false;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < ucols; ++j)
        u[i * ucols + j] = (i < n && j < n) ? ur[i * n + j] : (i == j ? 1.0 : 0.0);
    ormqr(a, n, tau, n, true, false, u, m, ucols);
    return true;
  }
  return svd_bidiag_path(a, m, n, ucols, s, u, vt, work);
}

}  // namespace dense
}  // namespace portable
}  // namespace ember
