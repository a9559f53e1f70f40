// Rewrites the Llama decoder patterns into Ember's fused operators (kernels/optimized/
// llm_kernels.cc has their semantics). Each rewrite fires only on an exact match: the ops,
// their constant arguments, dtypes (float32), static sizes and dims, and no reader of an
// intermediate outside the pattern. Anything else is left as it is.
//
//  attention  index_copy(cache, 2, pos, k) / index_put(cache, [None, None, pos], k) for the
//             key and the value cache (mutable state, no other reader or writer),
//             [repeat_interleave(cache, H / Hkv, 1)], scaled_dot_product_attention(q, K, V,
//             causal[pos]) with `causal` a constant lower-triangular [S, S] mask (bool, or float
//             0 / -inf), no dropout, not is_causal   ->  sdpa_with_kv_cache(q, k, v, kc, vc, pos, scale)
//  RMSNorm    mul(mul(x, rsqrt(add(mean(pow(x, 2), [-1], keepdim), eps))), w[N])  ->  rms_norm(x, w, eps)
//  RoPE       add(mul(x, cos), mul(cat([neg(x[..., D/2:]), x[..., :D/2]], -1), sin))  ->  rope(x, cos, sin)
//  SwiGLU     mul(silu(a), b), same shapes  ->  silu_mul(a, b)
// Products and sums are matched in either operand order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "exporter/ops/op_schemas.h"
#include "exporter/passes/passes.h"

namespace ember {
namespace exporter {
namespace {

bool int_arg(const Arg& a, int64_t* v) {
  if (a.kind != Arg::Kind::Int) return false;
  *v = a.i;
  return true;
}

bool number_arg(const Arg& a, double* v) {
  if (a.kind == Arg::Kind::Int) *v = static_cast<double>(a.i);
  else if (a.kind == Arg::Kind::Double) *v = a.d;
  else return false;
  return true;
}

class Fuser {
 public:
  Fuser(Graph& g, const std::function<bool(const std::string&)>& has_kernel) : g_(g), has_kernel_(has_kernel) {
    refresh();
  }

  int run(bool others_need_attention) {
    int attention = 0, others = 0;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (!g_.nodes[i].erased && fuse_attention(static_cast<int>(i))) {
        ++attention;
        refresh();
      }
    }
    if (others_need_attention && attention == 0) return 0;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (g_.nodes[i].erased) continue;
      const int n = static_cast<int>(i);
      if (fuse_rms_norm(n) || fuse_rope(n) || fuse_silu_mul(n)) {
        ++others;
        refresh();
      }
    }
    return attention + others;
  }

 private:
  // Readers (live node indices; -1 for a graph output or write-back) and writers of each value.
  void refresh() {
    readers_.assign(g_.values.size(), {});
    writers_.assign(g_.values.size(), {});
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (n.erased) continue;
      for (const Arg& a : n.args) {
        for (int r : a.value_refs()) readers_[r].push_back(static_cast<int>(i));
      }
      for (int r : n.output_values()) writers_[r].push_back(static_cast<int>(i));
    }
    for (const GraphOutput& o : g_.outputs) {
      if (o.value >= 0) readers_[o.value].push_back(-1);
    }
    for (const WriteBack& w : g_.write_backs) {
      if (w.from != w.to) readers_[w.from].push_back(-1);
    }
  }

  const Value* tensor(const Arg& a) const {
    return a.kind == Arg::Kind::Tensor && a.ref >= 0 ? &g_.values[a.ref] : nullptr;
  }
  const Value* float_tensor(const Arg& a) const {
    const Value* v = tensor(a);
    return v != nullptr && v->dtype == ScalarType::Float32 ? v : nullptr;
  }
  // The single tensor output of node n, or -1.
  int out_of(int n) const {
    const Node& node = g_.nodes[n];
    if (node.outputs.size() != 1 || node.outputs[0].kind != Arg::Kind::Tensor) return -1;
    return node.outputs[0].ref;
  }
  // The live node producing tensor argument `a` when it is `kernel` ("aten::mul.Tensor") and
  // its output is read by `reader` only; else -1.
  int private_producer(const Arg& a, const char* kernel, int reader) const {
    if (a.kind != Arg::Kind::Tensor) return -1;
    const int p = g_.values[a.ref].producer;
    if (p < 0 || g_.nodes[p].erased || g_.nodes[p].kernel_name() != kernel || out_of(p) != a.ref) return -1;
    const std::vector<int>& r = readers_[a.ref];
    for (int x : r) {
      if (x != reader) return -1;
    }
    return r.empty() ? -1 : p;
  }
  bool is_node(int n, const char* kernel) const {
    return n >= 0 && !g_.nodes[n].erased && g_.nodes[n].kernel_name() == kernel && out_of(n) >= 0;
  }
  // Wraps dim into [0, rank); -1 when out of range.
  static int64_t dim_of(int64_t dim, size_t rank) {
    const int64_t r = static_cast<int64_t>(rank);
    if (dim < -r || dim >= r) return -1;
    return dim < 0 ? dim + r : dim;
  }
  static bool same_shape(const Value& a, const Value& b) {
    if (a.sizes != b.sizes) return false;
    for (size_t d = 0; d < a.sizes.size(); ++d) {
      if (dyn(a, d) != dyn(b, d)) return false;
    }
    return true;
  }
  // Whether dim d of v is dynamic (a value without flags is static).
  static bool dyn(const Value& v, size_t d) { return d < v.dynamic_dims.size() && v.dynamic_dims[d]; }

  // Replaces node `at` with `op`(args), writing `outputs`; erases `gone`. The fused node reads
  // its inputs where `at` is, later than the pattern node that first read each one: refused
  // when a node outside the pattern writes such an input (in place) in between.
  bool replace(int at, const char* op, std::vector<Arg> args, std::vector<Arg> outputs, std::vector<int> gone) {
    for (const Arg& a : args) {
      for (int v : a.value_refs()) {
        int first_read = at;
        for (int x : gone) {
          for (const Arg& read : g_.nodes[x].args) {
            for (int r : read.value_refs()) {
              if (r == v && x < first_read) first_read = x;
            }
          }
        }
        for (int w : writers_[v]) {
          if (w > first_read && w < at && std::find(gone.begin(), gone.end(), w) == gone.end()) return false;
        }
      }
    }
    Node n;
    n.op = op;
    n.overload = "default";
    n.schema = find_op_schema(n.op, n.overload);
    if (n.schema == nullptr || !has_kernel_(n.kernel_name()) || n.schema->args.size() != args.size()) return false;
    for (const SchemaArg& a : n.schema->args) n.arg_names.push_back(a.name);
    n.args = std::move(args);
    n.outputs = std::move(outputs);
    n.source = g_.nodes[at].source;
    n.name = g_.nodes[at].name;
    g_.nodes[at] = std::move(n);
    for (int x : gone) g_.nodes[x].erased = true;
    return true;
  }

  // mul(silu(a), b) with a, b and the product of one shape.
  bool fuse_silu_mul(int n) {
    if (!is_node(n, "aten::mul.Tensor")) return false;
    const Node& mul = g_.nodes[n];
    for (int side = 0; side < 2; ++side) {
      const int s = private_producer(mul.args[side], "aten::silu.default", n);
      if (s < 0) continue;
      const Arg a = g_.nodes[s].args[0], b = mul.args[1 - side];
      const Value *va = float_tensor(a), *vb = float_tensor(b), *vo = &g_.values[out_of(n)];
      if (va == nullptr || vb == nullptr || vo->dtype != ScalarType::Float32 || !same_shape(*va, *vb) ||
          !same_shape(*va, *vo)) {
        continue;
      }
      return replace(n, "ember_llm::silu_mul", {a, b}, mul.outputs, {s});
    }
    return false;
  }

  // mul(mul(x, rsqrt(add(mean(pow(x, 2), [-1], True), eps))), w) in either operand order.
  bool fuse_rms_norm(int n) {
    if (!is_node(n, "aten::mul.Tensor")) return false;
    const Node& outer = g_.nodes[n];
    for (int side = 0; side < 2; ++side) {
      const int inner = private_producer(outer.args[side], "aten::mul.Tensor", n);
      const Value* w = float_tensor(outer.args[1 - side]);
      if (inner < 0 || w == nullptr) continue;
      for (int xs = 0; xs < 2; ++xs) {
        const Arg x = g_.nodes[inner].args[xs];
        const int rs = private_producer(g_.nodes[inner].args[1 - xs], "aten::rsqrt.default", inner);
        const Value* vx = float_tensor(x);
        if (rs < 0 || vx == nullptr || vx->sizes.empty()) continue;
        const int add = private_producer(g_.nodes[rs].args[0], "aten::add.Tensor", rs);
        if (add < 0) continue;
        double eps = 0, alpha = 0;
        if (!number_arg(g_.nodes[add].args[1], &eps) || !number_arg(g_.nodes[add].args[2], &alpha) || alpha != 1.0 ||
            !(eps >= 0.0) || !std::isfinite(eps)) {
          continue;
        }
        const int mean = private_producer(g_.nodes[add].args[0], "aten::mean.dim", add);
        if (mean < 0) continue;
        const Node& m = g_.nodes[mean];
        // mean.dim(self, dim, keepdim, dtype): the last dim only, kept, no dtype change.
        if (m.args.size() != 4 || m.args[1].kind != Arg::Kind::Ints || m.args[1].ints.size() != 1 ||
            dim_of(m.args[1].ints[0], vx->sizes.size()) != static_cast<int64_t>(vx->sizes.size()) - 1 ||
            m.args[2].kind != Arg::Kind::Bool || !m.args[2].b || m.args[3].kind != Arg::Kind::None) {
          continue;
        }
        const int pw = private_producer(m.args[0], "aten::pow.Tensor_Scalar", mean);
        double exponent = 0;
        if (pw < 0 || g_.nodes[pw].args[0].kind != Arg::Kind::Tensor || g_.nodes[pw].args[0].ref != x.ref ||
            !number_arg(g_.nodes[pw].args[1], &exponent) || exponent != 2.0) {
          continue;
        }
        const int64_t cols = vx->sizes.back();
        if (dyn(*vx, vx->sizes.size() - 1) || w->sizes != std::vector<int64_t>{cols} || w->is_dynamic() ||
            !same_shape(*vx, g_.values[out_of(n)])) {
          continue;
        }
        return replace(n, "ember_llm::rms_norm", {x, outer.args[1 - side], Arg::real(eps)}, outer.outputs,
                       {inner, rs, add, mean, pw});
      }
    }
    return false;
  }

  // slice.Tensor(x, last dim, start, end, 1) taking [lo, hi) of x's last dim D; false otherwise.
  bool is_half_slice(int s, int x, int64_t lo, int64_t hi) const {
    const Node& n = g_.nodes[s];
    const Value& v = g_.values[x];
    if (n.args.size() != 5 || n.args[0].kind != Arg::Kind::Tensor || n.args[0].ref != x) return false;
    int64_t dim = 0, start = 0, end = 0, step = 0;
    if (!int_arg(n.args[1], &dim) || dim_of(dim, v.sizes.size()) != static_cast<int64_t>(v.sizes.size()) - 1) {
      return false;
    }
    if (n.args[2].kind == Arg::Kind::None) start = 0;
    else if (!int_arg(n.args[2], &start)) return false;
    if (n.args[3].kind == Arg::Kind::None) end = std::numeric_limits<int64_t>::max();
    else if (!int_arg(n.args[3], &end)) return false;
    if (!int_arg(n.args[4], &step) || step != 1) return false;
    const int64_t d = v.sizes.back();
    if (end > d) end = d;
    return start == lo && end == hi;
  }

  // add(mul(x, cos), mul(cat([neg(x[..., h:]), x[..., :h]], -1), sin)) in any operand order.
  bool fuse_rope(int n) {
    if (!is_node(n, "aten::add.Tensor")) return false;
    const Node& add = g_.nodes[n];
    double alpha = 0;
    if (add.args.size() != 3 || !number_arg(add.args[2], &alpha) || alpha != 1.0) return false;
    for (int side = 0; side < 2; ++side) {
      const int m_cos = private_producer(add.args[side], "aten::mul.Tensor", n);
      const int m_sin = private_producer(add.args[1 - side], "aten::mul.Tensor", n);
      if (m_cos < 0 || m_sin < 0) continue;
      for (int ss = 0; ss < 2; ++ss) {
        const int cat = private_producer(g_.nodes[m_sin].args[ss], "aten::cat.default", m_sin);
        const Arg sin = g_.nodes[m_sin].args[1 - ss];
        if (cat < 0) continue;
        const Node& c = g_.nodes[cat];
        if (c.args[0].kind != Arg::Kind::Tensors || c.args[0].refs.size() != 2) continue;
        const int neg = private_producer(Arg::tensor(c.args[0].refs[0]), "aten::neg.default", cat);
        const int lo = private_producer(Arg::tensor(c.args[0].refs[1]), "aten::slice.Tensor", cat);
        if (neg < 0 || lo < 0) continue;
        const int hi = private_producer(g_.nodes[neg].args[0], "aten::slice.Tensor", neg);
        if (hi < 0 || g_.nodes[lo].args[0].kind != Arg::Kind::Tensor) continue;
        const int x = g_.nodes[lo].args[0].ref;
        const Value& vx = g_.values[x];
        if (vx.dtype != ScalarType::Float32 || vx.sizes.size() < 2 || dyn(vx, vx.sizes.size() - 1)) continue;
        const int64_t D = vx.sizes.back(), rank = static_cast<int64_t>(vx.sizes.size());
        int64_t cat_dim = 0;
        if (D % 2 != 0 || !is_half_slice(lo, x, 0, D / 2) || !is_half_slice(hi, x, D / 2, D) ||
            !int_arg(c.args[1], &cat_dim) || dim_of(cat_dim, vx.sizes.size()) != rank - 1) {
          continue;
        }
        // mul(x, cos): the other operand of the cos product must be x itself.
        const Node& mc = g_.nodes[m_cos];
        int cs = -1;
        for (int k = 0; k < 2; ++k) {
          if (mc.args[k].kind == Arg::Kind::Tensor && mc.args[k].ref == x) cs = 1 - k;
        }
        if (cs < 0) continue;
        const Arg cos = mc.args[cs];
        if (!rope_table_fits(cos, vx) || !rope_table_fits(sin, vx) ||
            !same_shape(*tensor(cos), *tensor(sin)) || !same_shape(vx, g_.values[out_of(n)])) {
          continue;
        }
        return replace(n, "ember_llm::rope", {Arg::tensor(x), cos, sin}, add.outputs, {m_cos, m_sin, cat, neg, lo, hi});
      }
    }
    return false;
  }

  // cos/sin shaped [..., T or 1, D] with leading 1s, rank <= x's (the kernel's broadcast).
  bool rope_table_fits(const Arg& a, const Value& x) const {
    const Value* t = float_tensor(a);
    if (t == nullptr || t->sizes.size() < 2 || t->sizes.size() > x.sizes.size()) return false;
    const size_t r = t->sizes.size(), xr = x.sizes.size();
    if (t->sizes[r - 1] != x.sizes[xr - 1] || dyn(*t, r - 1)) return false;
    const bool rows_match = t->sizes[r - 2] == x.sizes[xr - 2] && dyn(*t, r - 2) == dyn(x, xr - 2);
    const bool one_row = t->sizes[r - 2] == 1 && !dyn(*t, r - 2);
    if (!rows_match && !one_row) return false;
    for (size_t d = 0; d + 2 < r; ++d) {
      if (t->sizes[d] != 1 || dyn(*t, d)) return false;
    }
    return true;
  }

  // What writes a KV cache: its only writer, the cache update at `pos`.
  struct CacheWrite {
    int node = -1;
    int cache = -1;
    Arg source;
    int pos = -1;
  };

  // `cache` (state [B, Hkv, S, D]) written once by index_copy(cache, 2, pos, src) or
  // index_put(cache, [None, None, pos], src, False), and read by that node and `reader` only.
  bool cache_write(int cache, int reader, CacheWrite* w) const {
    const Value& c = g_.values[cache];
    if (c.role != ValueRole::MutableState || c.dtype != ScalarType::Float32 || c.sizes.size() != 4 || c.is_dynamic()) {
      return false;
    }
    if (writers_[cache].size() != 1) return false;
    const int n = writers_[cache][0];
    const Node& node = g_.nodes[n];
    if (node.outputs.size() != 1 || node.outputs[0].kind != Arg::Kind::Tensor || node.outputs[0].ref != cache ||
        node.args.empty() || node.args[0].kind != Arg::Kind::Tensor || node.args[0].ref != cache) {
      return false;
    }
    for (int r : readers_[cache]) {
      if (r != n && r != reader) return false;
    }
    for (const WriteBack& wb : g_.write_backs) {
      if (wb.to == cache && wb.from != cache) return false;  // a second write, after the graph
    }
    int64_t dim = 0;
    if (node.kernel_name() == "aten::index_copy.default" && node.args.size() == 4 && int_arg(node.args[1], &dim) &&
        dim_of(dim, 4) == 2 && node.args[2].kind == Arg::Kind::Tensor) {
      w->pos = node.args[2].ref;
      w->source = node.args[3];
    } else if (node.kernel_name() == "aten::index_put.default" && node.args.size() == 4 &&
               node.args[1].kind == Arg::Kind::OptionalTensors && node.args[1].refs.size() == 3 &&
               node.args[1].refs[0] < 0 && node.args[1].refs[1] < 0 && node.args[1].refs[2] >= 0 &&
               node.args[3].kind == Arg::Kind::Bool && !node.args[3].b) {
      w->pos = node.args[1].refs[2];
      w->source = node.args[2];
    } else {
      return false;
    }
    const Value* src = float_tensor(w->source);
    const Value& p = g_.values[w->pos];
    if (src == nullptr || src->sizes.size() != 4 || src->sizes[0] != c.sizes[0] || src->sizes[1] != c.sizes[1] ||
        src->sizes[3] != c.sizes[3] || src->sizes[2] > c.sizes[2] || dyn(*src, 3) ||
        p.dtype != ScalarType::Int64 || p.sizes.size() != 1 || p.sizes[0] != src->sizes[2] ||
        dyn(p, 0) != dyn(*src, 2)) {
      return false;
    }
    w->node = n;
    w->cache = cache;
    return true;
  }

  // The key or value argument of the attention: a cache read whole (enable_gqa) or through
  // repeat_interleave(cache, H / Hkv, dim 1) read by the attention only.
  bool cache_operand(const Arg& a, int sdpa, int64_t heads, bool gqa, CacheWrite* w, int* repeat) const {
    *repeat = -1;
    if (a.kind != Arg::Kind::Tensor) return false;
    int cache = a.ref, reader = sdpa;
    const int r = private_producer(a, "aten::repeat_interleave.self_int", sdpa);
    if (r >= 0) {
      const Node& ri = g_.nodes[r];
      int64_t repeats = 0, dim = 0;
      if (ri.args.size() < 3 || ri.args[0].kind != Arg::Kind::Tensor || !int_arg(ri.args[1], &repeats) ||
          !int_arg(ri.args[2], &dim) || dim_of(dim, 4) != 1) {
        return false;
      }
      cache = ri.args[0].ref;
      reader = r;
      *repeat = r;
      if (!cache_write(cache, reader, w)) return false;
      return repeats >= 1 && repeats * g_.values[cache].sizes[1] == heads;
    }
    if (!cache_write(cache, reader, w)) return false;
    const int64_t kv = g_.values[cache].sizes[1];
    return kv == heads || (gqa && heads % kv == 0);
  }

  // mask = index(causal, [pos]) with `causal` a constant lower-triangular [S, S] mask.
  bool causal_mask(const Arg& a, int pos, int64_t S) const {
    const Value* m = tensor(a);
    if (m == nullptr || m->producer < 0 || g_.nodes[m->producer].erased) return false;
    const Node& idx = g_.nodes[m->producer];
    if (idx.kernel_name() != "aten::index.Tensor" || idx.args.size() != 2 || idx.args[0].kind != Arg::Kind::Tensor ||
        (idx.args[1].kind != Arg::Kind::OptionalTensors && idx.args[1].kind != Arg::Kind::Tensors) ||
        idx.args[1].refs.size() != 1 || idx.args[1].refs[0] != pos) {
      return false;
    }
    const Value& table = g_.values[idx.args[0].ref];
    if (table.role != ValueRole::Constant || table.constant < 0 || table.sizes != std::vector<int64_t>{S, S}) {
      return false;
    }
    const Constant& c = g_.constants[table.constant];
    const size_t count = static_cast<size_t>(S * S);
    if (table.dtype == ScalarType::Bool && c.data.size() == count) {
      for (int64_t i = 0; i < S; ++i) {
        for (int64_t j = 0; j < S; ++j) {
          if ((c.data[i * S + j] != 0) != (j <= i)) return false;
        }
      }
      return true;
    }
    if (table.dtype == ScalarType::Float32 && c.data.size() == count * sizeof(float)) {
      for (int64_t i = 0; i < S; ++i) {
        for (int64_t j = 0; j < S; ++j) {
          float f;
          std::memcpy(&f, c.data.data() + (i * S + j) * sizeof(float), sizeof(f));
          if (j <= i ? f != 0.0f : !(std::isinf(f) && f < 0)) return false;
        }
      }
      return true;
    }
    return false;
  }

  bool fuse_attention(int n) {
    if (!is_node(n, "aten::scaled_dot_product_attention.default")) return false;
    const Node& s = g_.nodes[n];
    if (s.args.size() != 8) return false;
    double dropout = 1;
    if (!number_arg(s.args[4], &dropout) || dropout != 0.0 || s.args[5].kind != Arg::Kind::Bool || s.args[5].b ||
        s.args[7].kind != Arg::Kind::Bool) {
      return false;
    }
    const bool gqa = s.args[7].b;
    const Arg& scale = s.args[6];
    if (scale.kind != Arg::Kind::None && scale.kind != Arg::Kind::Double) return false;
    const Value* q = float_tensor(s.args[0]);
    if (q == nullptr || q->sizes.size() != 4 || dyn(*q, 3)) return false;
    CacheWrite kw, vw;
    int k_rep = -1, v_rep = -1;
    if (!cache_operand(s.args[1], n, q->sizes[1], gqa, &kw, &k_rep) ||
        !cache_operand(s.args[2], n, q->sizes[1], gqa, &vw, &v_rep)) {
      return false;
    }
    const Value& kc = g_.values[kw.cache];
    const Value& vc = g_.values[vw.cache];
    const Value& out = g_.values[out_of(n)];
    const Value& k_new = *tensor(kw.source);
    if (kw.cache == vw.cache || kw.pos != vw.pos || kc.sizes != vc.sizes || kc.sizes[0] != q->sizes[0] ||
        kc.sizes[3] != q->sizes[3] || !same_shape(k_new, *tensor(vw.source)) || q->sizes[2] != k_new.sizes[2] ||
        dyn(*q, 2) != dyn(k_new, 2) || !same_shape(*q, out)) {
      return false;
    }
    // The cache writes move to the attention's place: nothing between may read the caches
    // (checked: the writers and the attention are their only readers) and the update must
    // come before the attention.
    if (kw.node > n || vw.node > n || (k_rep >= 0 && k_rep > n) || (v_rep >= 0 && v_rep > n)) return false;
    if (!causal_mask(s.args[3], kw.pos, kc.sizes[2])) return false;
    std::vector<int> gone = {kw.node, vw.node};
    if (k_rep >= 0) gone.push_back(k_rep);
    if (v_rep >= 0) gone.push_back(v_rep);
    return replace(n, "ember_llm::sdpa_with_kv_cache",
                   {s.args[0], kw.source, vw.source, Arg::tensor(kw.cache), Arg::tensor(vw.cache), Arg::tensor(kw.pos),
                    scale},
                   {s.outputs[0], Arg::tensor(kw.cache), Arg::tensor(vw.cache)}, gone);
  }

  Graph& g_;
  const std::function<bool(const std::string&)>& has_kernel_;
  std::vector<std::vector<int>> readers_, writers_;
};

}  // namespace

int fuse_llm_attention(Graph& g, const std::function<bool(const std::string&)>& has_kernel,
                       bool others_need_attention) {
  const int fused = Fuser(g, has_kernel).run(others_need_attention);
  if (fused > 0) g.compact();
  return fused;
}

}  // namespace exporter
}  // namespace ember
