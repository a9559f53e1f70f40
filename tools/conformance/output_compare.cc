#include "tools/conformance/output_compare.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "extension/module/tensor_ptr.h"

namespace ember {
namespace conformance {
namespace {

std::string index_text(const Tensor& t, int64_t flat) {
  std::vector<int64_t> idx(t.rank, 0);
  for (int d = t.rank - 1; d >= 0; --d) {
    if (t.sizes[d] > 0) {
      idx[d] = flat % t.sizes[d];
      flat /= t.sizes[d];
    }
  }
  std::string s = "[";
  for (size_t i = 0; i < idx.size(); ++i) s += (i ? ", " : "") + std::to_string(idx[i]);
  return s + "]";
}

// Element offsets in memory of each logical (row-major) index, honouring dim_order.
class Layout {
 public:
  explicit Layout(const Tensor& t) : t_(t) {
    if (t.dim_order == nullptr) return;
    bool identity = true;
    for (int i = 0; i < t.rank; ++i) identity = identity && t.dim_order[i] == i;
    if (identity) return;
    strides_.assign(t.rank, 0);
    int64_t s = 1;
    for (int i = t.rank - 1; i >= 0; --i) {
      strides_[t.dim_order[i]] = s;
      s *= t.sizes[t.dim_order[i]];
    }
  }
  int64_t offset(int64_t flat) const {
    if (strides_.empty()) return flat;
    int64_t off = 0;
    for (int d = t_.rank - 1; d >= 0; --d) {
      off += (flat % t_.sizes[d]) * strides_[d];
      flat /= t_.sizes[d];
    }
    return off;
  }

 private:
  const Tensor& t_;
  std::vector<int64_t> strides_;
};

int64_t integer_at(const Tensor& t, int64_t i) {
  const void* d = t.data;
  switch (t.dtype) {
    case ScalarType::Int8: return static_cast<const int8_t*>(d)[i];
    case ScalarType::Int16: return static_cast<const int16_t*>(d)[i];
    case ScalarType::Int32: return static_cast<const int32_t*>(d)[i];
    case ScalarType::Int64: return static_cast<const int64_t*>(d)[i];
    case ScalarType::UInt8: return static_cast<const uint8_t*>(d)[i];
    case ScalarType::Bool: return static_cast<const uint8_t*>(d)[i] != 0;
    default: return static_cast<int64_t>(element_as_double(t, i));
  }
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

}  // namespace

std::string shape_text(const Tensor& t) {
  std::string s = "[";
  for (int i = 0; i < t.rank; ++i) s += (i ? ", " : "") + std::to_string(t.sizes[i]);
  return s + "]";
}

std::string compare_output(const Tensor& got, const Tensor& want, bool values, const Tolerance& tol) {
  bool same_shape = got.rank == want.rank;
  for (int i = 0; same_shape && i < got.rank; ++i) same_shape = got.sizes[i] == want.sizes[i];
  if (!same_shape) return "shape " + shape_text(got) + " expected " + shape_text(want);
  if (got.dtype != want.dtype) {
    return std::string("dtype ") + scalar_type_name(got.dtype) + " expected " + scalar_type_name(want.dtype);
  }
  if (!values) return "";
  int64_t n = want.numel();
  if (n == 0) return "";
  if (got.data == nullptr) return "output has no data";
  Layout layout(got);
  int64_t bad = 0, first_bad = -1;
  if (!is_floating(want.dtype)) {
    for (int64_t i = 0; i < n; ++i) {
      if (integer_at(got, layout.offset(i)) != integer_at(want, i)) {
        if (first_bad < 0) first_bad = i;
        ++bad;
      }
    }
    if (bad == 0) return "";
    return std::to_string(bad) + " of " + std::to_string(n) + " elements differ; first at " +
           index_text(want, first_bad) + ": got " + std::to_string(integer_at(got, layout.offset(first_bad))) +
           " expected " + std::to_string(integer_at(want, first_bad));
  }
  double max_abs = 0, max_rel = 0;
  int64_t worst = -1;
  std::string special;  // first NaN/inf disagreement
  for (int64_t i = 0; i < n; ++i) {
    double g = element_as_double(got, layout.offset(i));
    double w = element_as_double(want, i);
    bool ok;
    if (std::isnan(w) || std::isnan(g)) {
      ok = std::isnan(w) && std::isnan(g);
    } else if (std::isinf(w) || std::isinf(g)) {
      ok = g == w;
    } else {
      double err = std::fabs(g - w);
      ok = err <= tol.atol + tol.rtol * std::fabs(w);
      if (!ok && (worst < 0 || err > max_abs)) {
        max_abs = err;
        max_rel = err / std::max(std::fabs(w), 1e-30);
        worst = i;
      }
    }
    if (!ok) {
      ++bad;
      if (special.empty() && (std::isnan(w) || std::isnan(g) || std::isinf(w) || std::isinf(g))) {
        special = "at " + index_text(want, i) + ": got " + number(g) + " expected " + number(w);
      }
    }
  }
  if (bad == 0) return "";
  std::string msg = std::to_string(bad) + " of " + std::to_string(n) + " elements differ";
  if (worst >= 0) {
    msg += "; max abs err " + number(max_abs) + " (rel " + number(max_rel) + ") at " + index_text(want, worst) +
           ": got " + number(element_as_double(got, layout.offset(worst))) + " expected " +
           number(element_as_double(want, worst));
  }
  if (!special.empty()) msg += "; nan/inf mismatch " + special;
  return msg;
}

}  // namespace conformance
}  // namespace ember
