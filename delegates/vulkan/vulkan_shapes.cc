#include "delegates/vulkan/vulkan_shapes.h"

#include <algorithm>

namespace ember {
namespace vulkan {
namespace {

std::string str(const char* a, const Sizes& s) { return std::string(a) + sizes_str(s); }

int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode) {
  int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (num < 0 ? -1 : num / stride) + 1;  // num < 0: empty
  if (ceil_mode && out > 0 && (out - 1) * stride >= in + pad) --out;
  return out;
}

}  // namespace

int64_t numel(const Sizes& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

std::string sizes_str(const Sizes& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

bool normalize_dim(int64_t dim, int64_t rank, int64_t* out) {
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank) return false;
  *out = dim;
  return true;
}

std::string read_pair(const int32_t* v, size_t n, const char* what, bool allow_empty,
                      int64_t dflt, int64_t* a, int64_t* b) {
  if (n == 0 && allow_empty) { *a = *b = dflt; return ""; }
  if (n == 1) { *a = *b = v[0]; return ""; }
  if (n == 2) { *a = v[0]; *b = v[1]; return ""; }
  return std::string(what) + " needs 1 or 2 entries, got " + std::to_string(n);
}

std::string infer_conv2d(const Sizes& x, const Sizes& w, int64_t bias_numel, const Window2d& win,
                         int64_t groups, Sizes* out) {
  if (x.size() != 4 || w.size() != 4) return "conv2d needs 4-D input and weight, got " + sizes_str(x) + " and " + sizes_str(w);
  if (groups < 1 || x[1] % groups != 0 || w[0] % groups != 0) return "conv2d groups " + std::to_string(groups) + " do not divide the channels";
  if (w[1] * groups != x[1]) return str("conv2d weight ", w) + " does not fit input " + sizes_str(x) + " with groups " + std::to_string(groups);
  if (bias_numel >= 0 && bias_numel != w[0]) return "conv2d bias has " + std::to_string(bias_numel) + " elements, expected " + std::to_string(w[0]);
  if (win.sh < 1 || win.sw < 1 || win.dh < 1 || win.dw < 1 || win.ph < 0 || win.pw < 0) return "conv2d stride/dilation must be >= 1 and padding >= 0";
  int64_t oh = pool_out(x[2], w[2], win.ph, win.sh, win.dh, false);
  int64_t ow = pool_out(x[3], w[3], win.pw, win.sw, win.dw, false);
  if (oh < 1 || ow < 1) return str("conv2d kernel larger than the padded input ", x);
  *out = {x[0], w[0], oh, ow};
  return "";
}

std::string infer_linear(const Sizes& x, const Sizes& w, int64_t bias_numel, Sizes* out) {
  if (x.empty() || w.size() != 2 || x.back() != w[1]) return "linear: input " + sizes_str(x) + " does not fit weight " + sizes_str(w);
  if (bias_numel >= 0 && bias_numel != w[0]) return "linear bias has " + std::to_string(bias_numel) + " elements, expected " + std::to_string(w[0]);
  *out = x;
  out->back() = w[0];
  return "";
}

std::string infer_linear_weight_only(const Sizes& x, const Sizes& w, const Sizes& scales, int64_t bias_numel,
                                     int64_t bits, int64_t group, Sizes* out) {
  if (bits != 8 && bits != 4) return "weight-only linear: bits must be 8 or 4, got " + std::to_string(bits);
  if (x.empty() || w.size() != 2) return "weight-only linear: input " + sizes_str(x) + ", weight " + sizes_str(w);
  const int64_t k = x.back(), n = w[0], per_word = bits == 8 ? 4 : 8;
  if (w[1] * (bits == 8 ? 1 : 2) != k) return "weight-only linear: input " + sizes_str(x) + " does not fit weight " + sizes_str(w);
  if (k % per_word != 0) return "weight-only linear: K = " + std::to_string(k) + " is not a multiple of " + std::to_string(per_word);
  if (group < per_word || group % per_word != 0 || k % group != 0)
    return "weight-only linear: group size " + std::to_string(group) + " must divide K = " + std::to_string(k) +
           " and be a multiple of " + std::to_string(per_word);
  if (scales != Sizes{n, k / group}) return "weight-only linear: scales " + sizes_str(scales) + ", expected [" + std::to_string(n) + ", " + std::to_string(k / group) + "]";
  if (bias_numel >= 0 && bias_numel != n) return "weight-only linear: bias has " + std::to_string(bias_numel) + " elements, expected " + std::to_string(n);
  *out = x;
  out->back() = n;
  return "";
}

std::string infer_broadcast(const Sizes& a, const Sizes& b, Sizes* out) {
  size_t r = std::max(a.size(), b.size());
  Sizes o(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) return "shapes " + sizes_str(a) + " and " + sizes_str(b) + " do not broadcast";
    o[i] = da == 1 ? db : da;
  }
  *out = o;
  return "";
}

std::string infer_matmul(const Sizes& a, const Sizes& b, Sizes* out) {
  if (a.size() < 2 || b.size() < 2) return "matmul needs operands of rank >= 2, got " + sizes_str(a) + " and " + sizes_str(b);
  if (a.back() != b[b.size() - 2]) return "matmul: " + sizes_str(a) + " @ " + sizes_str(b) + " inner sizes differ";
  Sizes ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2), bo;
  std::string e = infer_broadcast(ba, bb, &bo);
  if (!e.empty()) return "matmul batch dims: " + e;
  bo.push_back(a[a.size() - 2]);
  bo.push_back(b.back());
  *out = bo;
  return "";
}

std::string infer_pool2d(const Sizes& x, const Window2d& win, bool ceil_mode, Sizes* out) {
  if (x.size() != 4) return str("pool2d needs a 4-D (N, C, H, W) input, got ", x);
  if (win.kh < 1 || win.kw < 1 || win.sh < 1 || win.sw < 1 || win.dh < 1 || win.dw < 1 || win.ph < 0 || win.pw < 0)
    return "pool2d kernel/stride/dilation must be >= 1 and padding >= 0";
  if (win.ph * 2 > win.kh || win.pw * 2 > win.kw) return "pool2d padding must be at most half the kernel";
  int64_t oh = pool_out(x[2], win.kh, win.ph, win.sh, win.dh, ceil_mode);
  int64_t ow = pool_out(x[3], win.kw, win.pw, win.sw, win.dw, ceil_mode);
  if (oh < 1 || ow < 1) return str("pool2d window larger than the padded input ", x);
  *out = {x[0], x[1], oh, ow};
  return "";
}

std::string infer_adaptive_pool2d(const Sizes& x, int64_t oh, int64_t ow, Sizes* out) {
  if (x.size() != 4) return str("adaptive pool2d needs a 4-D input, got ", x);
  if (oh < 1 || ow < 1) return "adaptive pool2d output size must be positive";
  *out = {x[0], x[1], oh, ow};
  return "";
}

std::string infer_layer_norm(const Sizes& x, int64_t nd, int64_t weight_numel, int64_t bias_numel,
                             Sizes* out) {
  if (nd < 1 || nd > static_cast<int64_t>(x.size())) return "layer_norm normalized_ndim " + std::to_string(nd) + " does not fit " + sizes_str(x);
  int64_t cols = 1;
  for (size_t i = x.size() - nd; i < x.size(); ++i) cols *= x[i];
  if ((weight_numel >= 0 && weight_numel != cols) || (bias_numel >= 0 && bias_numel != cols))
    return "layer_norm weight/bias size differs from the normalised shape";
  *out = x;
  return "";
}

std::string infer_mean(const Sizes& x, std::vector<int64_t>* dims, bool keepdim, Sizes* out) {
  int64_t r = static_cast<int64_t>(x.size());
  std::vector<int64_t> d;
  if (dims->empty()) {
    for (int64_t i = 0; i < r; ++i) d.push_back(i);
  } else {
    for (int64_t v : *dims) {
      int64_t n;
      if (!normalize_dim(v, r, &n)) return "mean dim " + std::to_string(v) + " out of range for " + sizes_str(x);
      d.push_back(n);
    }
  }
  std::sort(d.begin(), d.end());
  for (size_t i = 1; i < d.size(); ++i)
    if (d[i] != d[i - 1] + 1) return "mean over non-adjacent dims is not supported";
  Sizes o;
  for (int64_t i = 0; i < r; ++i) {
    bool reduced = std::find(d.begin(), d.end(), i) != d.end();
    if (!reduced) o.push_back(x[i]);
    else if (keepdim) o.push_back(1);
  }
  *dims = d;
  *out = o;
  return "";
}

std::string infer_permute(const Sizes& x, const std::vector<int64_t>& perm, Sizes* out) {
  if (perm.size() != x.size()) return "permute needs " + std::to_string(x.size()) + " dims";
  std::vector<bool> seen(x.size(), false);
  Sizes o;
  for (int64_t p : perm) {
    int64_t n;
    if (!normalize_dim(p, x.size(), &n) || seen[n]) return "permute order is not a permutation";
    seen[n] = true;
    o.push_back(x[n]);
  }
  *out = o;
  return "";
}

std::string infer_expand(const Sizes& x, const Sizes& target, Sizes* out) {
  if (target.size() < x.size()) return "expand to fewer dims than the input has";
  if (target.size() > static_cast<size_t>(kMaxDims)) return "expand: rank too high";
  const size_t lead = target.size() - x.size();
  Sizes o(target.size());
  for (size_t i = 0; i < target.size(); ++i) {
    const int64_t want = target[i];
    if (i < lead) {
      if (want < 0) return "expand: -1 in a new leading dim";
      o[i] = want;
      continue;
    }
    const int64_t have = x[i - lead];
    if (want == -1 || want == have) {
      o[i] = have;
    } else if (have == 1 && want >= 0) {
      o[i] = want;
    } else {
      return "expand: size " + std::to_string(have) + " cannot become " + std::to_string(want);
    }
  }
  *out = o;
  return "";
}

std::string infer_view(const Sizes& x, const Sizes& target, Sizes* out) {
  Sizes o = target;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < o.size(); ++i) {
    if (o[i] == -1) {
      if (infer >= 0) return "view: more than one -1";
      infer = static_cast<int>(i);
    } else if (o[i] < 0) {
      return "view: negative size";
    } else {
      known *= o[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel(x) % known != 0) return "view: cannot infer the -1 size";
    o[infer] = numel(x) / known;
  }
  if (numel(o) != numel(x)) return "view " + sizes_str(x) + " -> " + sizes_str(target) + " changes the element count";
  *out = o;
  return "";
}

std::string infer_cat(const std::vector<Sizes>& xs, int64_t dim, Sizes* out) {
  if (xs.empty()) return "cat needs at least one input";
  int64_t d;
  if (!normalize_dim(dim, xs[0].size(), &d)) return "cat dim out of range";
  Sizes o = xs[0];
  o[d] = 0;
  for (const Sizes& s : xs) {
    if (s.size() != o.size()) return "cat inputs differ in rank";
    for (size_t i = 0; i < s.size(); ++i)
      if (static_cast<int64_t>(i) != d && s[i] != o[i]) return "cat inputs differ outside dim " + std::to_string(d);
    o[d] += s[d];
  }
  *out = o;
  return "";
}

std::string infer_slice(const Sizes& x, int64_t dim, int64_t* start, int64_t* end, int64_t step,
                        Sizes* out) {
  int64_t d;
  if (!normalize_dim(dim, x.size(), &d)) return "slice dim out of range";
  if (step < 1) return "slice step must be >= 1";
  int64_t n = x[d];
  int64_t s = *start, e = *end;
  if (s < 0) s += n;
  if (e < 0) e += n;
  s = std::min(std::max<int64_t>(s, 0), n);
  e = std::min(std::max<int64_t>(e, 0), n);
  if (e < s) e = s;
  *start = s;
  *end = e;
  *out = x;
  (*out)[d] = (e - s + step - 1) / step;
  return "";
}

std::string infer_embedding(const Sizes& weight, const Sizes& indices, Sizes* out) {
  if (weight.size() != 2) return str("embedding weight must be 2-D, got ", weight);
  *out = indices;
  out->push_back(weight[1]);
  return "";
}

std::string infer_embedding_weight_only(const Sizes& weight, const Sizes& scales, const Sizes& indices, int64_t bits,
                                        int64_t group, Sizes* out) {
  if (weight.size() != 2) return "weight-only embedding: weight " + sizes_str(weight) + " is not 2-D";
  const int64_t d = weight[1] * (bits == 4 ? 2 : 1);
  Sizes row{1, d};  // the rows as a 1 x D input, checked like a linear layer's K
  Sizes ignored;
  const std::string e = infer_linear_weight_only(row, weight, scales, -1, bits, group, &ignored);
  if (!e.empty()) return "weight-only embedding: " + e.substr(e.find(':') + 2);
  *out = indices;
  out->push_back(d);
  return "";
}

std::string infer_rope(const Sizes& x, const Sizes& cos, const Sizes& sin, Sizes* out) {
  if (x.size() < 2 || x.back() % 2 != 0) return "rope input must be [..., T, D] with D even, got " + sizes_str(x);
  const int64_t t = x[x.size() - 2];
  bool ok = cos.size() >= 2 && cos.size() <= x.size() && cos == sin && cos.back() == x.back() &&
            (cos[cos.size() - 2] == t || cos[cos.size() - 2] == 1);
  for (size_t i = 0; ok && i + 2 < cos.size(); ++i) ok = cos[i] == 1;
  if (!ok) return "rope cos/sin " + sizes_str(cos) + " / " + sizes_str(sin) + " do not fit input " + sizes_str(x);
  *out = x;
  return "";
}

std::string infer_attention(const Sizes& q, const Sizes& k, const Sizes& v, const Sizes& kc, const Sizes& vc,
                            const Sizes& pos, Sizes* out) {
  if (q.size() != 4 || k.size() != 4 || kc.size() != 4) return "attention needs 4-D query, key/value and caches";
  const Sizes kv = {q[0], k[1], q[2], q[3]}, cache = {q[0], k[1], kc[2], q[3]};
  if (k != kv || v != kv) return "attention key/value " + sizes_str(k) + " do not fit query " + sizes_str(q);
  if (kc != cache || vc != cache) return "attention caches " + sizes_str(kc) + " do not fit key " + sizes_str(k);
  if (k[1] < 1 || q[1] % k[1] != 0) return "attention query heads are not a multiple of key/value heads";
  if (pos != Sizes{q[2]} || q[2] > kc[2]) return "attention positions " + sizes_str(pos) + " do not fit query " + sizes_str(q);
  *out = q;
  return "";
}

std::string infer_sdpa(const Sizes& q, const Sizes& k, const Sizes& v, const Sizes& mask, Sizes* out) {
  if (q.size() != 4 || k.size() != 4 || v.size() != 4) return "attention needs 4-D query, key and value";
  if (k[0] != q[0] || k[1] != q[1] || k[3] != q[3] || v[0] != q[0] || v[1] != q[1] || v[2] != k[2])
    return "attention key " + sizes_str(k) + " and value " + sizes_str(v) + " do not fit query " + sizes_str(q);
  if (k[2] < 1 || q[3] < 1) return "attention over no keys or empty rows";
  const Sizes scores = {q[0], q[1], q[2], k[2]};
  if (!mask.empty()) {
    Sizes b;
    const std::string e = infer_broadcast(mask, scores, &b);
    if (!e.empty() || b != scores) return "attention mask " + sizes_str(mask) + " does not broadcast to " + sizes_str(scores);
  }
  *out = {q[0], q[1], q[2], v[3]};
  return "";
}

}  // namespace vulkan
}  // namespace ember
