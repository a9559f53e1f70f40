// Ember's fused decoder operators (float32), what exporter/passes/fuse_llm_attention.cc makes of
// the Llama pattern. Schemas (exporter/ops/op_schema_table.cc):
//
//   ember_llm::sdpa_with_kv_cache(Tensor query, Tensor key, Tensor value, Tensor(a!) key_cache,
//       Tensor(b!) value_cache, Tensor input_pos, float? scale=None) -> (Tensor, Tensor(a!), Tensor(b!))
//     query [B, H, T, D], key/value [B, Hkv, T, D] (H a multiple of Hkv: query head h reads
//     key/value head h / (H / Hkv), as repeat_interleave does), caches [B, Hkv, S, D],
//     input_pos [T] int64/int32 in [0, S). Writes key/value rows t into the caches at
//     input_pos[t] (in place: the cache outputs are the cache arguments, mutable state), then
//     each query row t attends to cached positions 0 .. input_pos[t] only: the result of
//     scaled_dot_product_attention with the mask causal[input_pos] over the whole cache, at a
//     cost proportional to the valid prefix. scale defaults to 1/sqrt(D).
//   ember_llm::rms_norm(Tensor input, Tensor weight, float eps) -> Tensor
//     input [..., N], weight [N]: input * rsqrt(mean(input^2, -1) + eps) * weight.
//   ember_llm::rope(Tensor input, Tensor cos, Tensor sin) -> Tensor
//     input [..., T, D] (D even), cos/sin [..., Tc, D] with Tc in {T, 1} and every other dim 1:
//     input * cos + cat(-input[..., D/2:], input[..., :D/2]) * sin (rotate_half form).
//   ember_llm::silu_mul(Tensor gate, Tensor up) -> Tensor   (same shapes): silu(gate) * up.
//
// Row math comes from the table llm_math() picked for this CPU (llm_simd.h). Scratch for the
// attention scores comes from the temp allocator; work is spread over the context's pool.
#include <cmath>
#include <cstring>
#include <initializer_list>

#include "kernels/optimized/llm_simd.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace optimized {
namespace {

using portable::KernelArgs;
using portable::ceil_div;

bool same_sizes(const Tensor& t, const int64_t* sizes, int rank) {
  if (t.rank != rank) return false;
  for (int d = 0; d < rank; ++d) {
    if (t.sizes[d] != sizes[d]) return false;
  }
  return true;
}

bool overlaps(const Tensor& a, const Tensor& b) {
  const uint8_t* pa = static_cast<const uint8_t*>(a.data);
  const uint8_t* pb = static_cast<const uint8_t*>(b.data);
  return a.nbytes() != 0 && b.nbytes() != 0 && pa < pb + b.nbytes() && pb < pa + a.nbytes();
}

// Query rows per attention block: the block's query rows share each key/value row they read.
constexpr int64_t kBlockRows = 8;
static_assert(kBlockRows <= kMaxAttentionRows, "AttentionBlock rows are bounded");

struct AttentionJob {
  const LlmMath* math;
  const float *q, *k_cache, *v_cache;
  float* out;
  const int64_t* pos;
  int64_t B, H, Hkv, T, S, D, n_rep, block_rows, blocks_per_head, items, workers;
  float scale;
  float* scratch;  // workers x block_rows x n_rep x S floats
};

void run_attention_worker(void* context, size_t worker) {
  const AttentionJob& j = *static_cast<const AttentionJob*>(context);
  const int64_t per = ceil_div(j.items, j.workers);
  const int64_t begin = static_cast<int64_t>(worker) * per;
  const int64_t end = begin + per < j.items ? begin + per : j.items;
  for (int64_t item = begin; item < end; ++item) {
    const int64_t tb = item % j.blocks_per_head;
    const int64_t g = (item / j.blocks_per_head) % j.Hkv;
    const int64_t b = item / (j.blocks_per_head * j.Hkv);
    AttentionBlock blk;
    blk.q = j.q + b * j.H * j.T * j.D;
    blk.k_cache = j.k_cache + (b * j.Hkv + g) * j.S * j.D;
    blk.v_cache = j.v_cache + (b * j.Hkv + g) * j.S * j.D;
    blk.out = j.out + b * j.H * j.T * j.D;
    blk.pos = j.pos;
    blk.T = j.T;
    blk.D = j.D;
    blk.head0 = g * j.n_rep;
    blk.n_rep = j.n_rep;
    blk.t0 = tb * j.block_rows;
    blk.tn = j.T - blk.t0 < j.block_rows ? j.T - blk.t0 : j.block_rows;
    blk.scale = j.scale;
    blk.scores = j.scratch + static_cast<int64_t>(worker) * j.block_rows * j.n_rep * j.S;
    j.math->attend(blk);
  }
}

Error sdpa_with_kv_cache(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(10)) return a.error();
  Tensor* q = a.tensor(0);
  Tensor* k = a.tensor(1);
  Tensor* v = a.tensor(2);
  Tensor* k_cache = a.tensor(3);
  Tensor* v_cache = a.tensor(4);
  Tensor* input_pos = a.tensor(5);
  const bool has_scale = !a.is_none(6);
  const double scale_arg = has_scale ? a.scalar(6) : 0.0;
  Tensor* out = a.out(7);
  Tensor* k_cache_out = a.out(8);
  Tensor* v_cache_out = a.out(9);
  for (Tensor* t : {q, k, v, k_cache, v_cache, out}) {
    if (!portable::require_float(a, t)) return a.error();
  }
  if (!a.ok()) return a.error();
  if (k_cache_out->data != k_cache->data || v_cache_out->data != v_cache->data) {
    return ctx.fail(Error::InvalidArgument, "the cache outputs must be the cache arguments (updated in place)");
  }
  if (q->rank != 4 || k->rank != 4 || k_cache->rank != 4) {
    return ctx.fail(Error::InvalidArgument, "query, key/value and caches must be [B, heads, T or S, D]");
  }
  const int64_t B = q->sizes[0], H = q->sizes[1], T = q->sizes[2], D = q->sizes[3];
  const int64_t Hkv = k->sizes[1], S = k_cache->sizes[2];
  const int64_t kv_sizes[4] = {B, Hkv, T, D};
  const int64_t cache_sizes[4] = {B, Hkv, S, D};
  if (!same_sizes(*k, kv_sizes, 4) || !same_sizes(*v, kv_sizes, 4)) {
    return ctx.fail(Error::InvalidArgument, "key and value must be [B, Hkv, T, D] like the query's B, T, D");
  }
  if (!same_sizes(*k_cache, cache_sizes, 4) || !same_sizes(*v_cache, cache_sizes, 4)) {
    return ctx.fail(Error::InvalidArgument, "key_cache and value_cache must be [B, Hkv, S, D]");
  }
  if (Hkv <= 0 || H % Hkv != 0) {
    return ctx.fail(Error::InvalidArgument, "query heads must be a positive multiple of key/value heads");
  }
  if (k_cache->data == v_cache->data && k_cache->nbytes() != 0) {
    return ctx.fail(Error::InvalidArgument, "key_cache and value_cache must be different tensors");
  }
  if (input_pos->rank != 1 || input_pos->sizes[0] != T ||
      (input_pos->dtype != ScalarType::Int64 && input_pos->dtype != ScalarType::Int32)) {
    return ctx.fail(Error::InvalidArgument, "input_pos must be int64 or int32 [T]");
  }
  const int64_t out_sizes[4] = {B, H, T, D};
  if (!portable::resize_out(a, out, out_sizes, 4)) return a.error();
  for (const Tensor* t : {q, k, v, k_cache, v_cache}) {
    if (overlaps(*out, *t)) return ctx.fail(Error::InvalidArgument, "the output overlaps an input");
  }
  if (T == 0 || B == 0 || H == 0) return Error::Ok;

  // Positions as int64 in scratch (int32 widened); every one must address the cache.
  int64_t* pos = static_cast<int64_t*>(ctx.allocate_temp(sizeof(int64_t) * static_cast<size_t>(T)));
  if (pos == nullptr) return ctx.fail(Error::OutOfMemory, "needs T * 8 bytes of temp memory");
  for (int64_t t = 0; t < T; ++t) {
    pos[t] = input_pos->dtype == ScalarType::Int64 ? input_pos->data_as<int64_t>()[t]
                                                   : input_pos->data_as<int32_t>()[t];
    if (pos[t] < 0 || pos[t] >= S) {
      return ctx.fail(Error::OutOfBounds, "input_pos outside the cache [0, max sequence length)");
    }
  }
  if (D == 0) return Error::Ok;

  // Cache update first: a prefill chunk attends to its own earlier rows. Repeated positions:
  // the last row wins, as with index_copy_.
  const size_t row_bytes = sizeof(float) * static_cast<size_t>(D);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t g = 0; g < Hkv; ++g) {
      const int64_t src = (b * Hkv + g) * T * D, dst = (b * Hkv + g) * S * D;
      for (int64_t t = 0; t < T; ++t) {
        std::memcpy(k_cache->data_as<float>() + dst + pos[t] * D, k->data_as<float>() + src + t * D, row_bytes);
        std::memcpy(v_cache->data_as<float>() + dst + pos[t] * D, v->data_as<float>() + src + t * D, row_bytes);
      }
    }
  }

  AttentionJob job;
  job.math = &llm_math();
  job.q = q->data_as<float>();
  job.k_cache = k_cache->data_as<float>();
  job.v_cache = v_cache->data_as<float>();
  job.out = out->data_as<float>();
  job.pos = pos;
  job.B = B;
  job.H = H;
  job.Hkv = Hkv;
  job.T = T;
  job.S = S;
  job.D = D;
  job.n_rep = H / Hkv;
  job.scale = static_cast<float>(has_scale ? scale_arg : 1.0 / std::sqrt(static_cast<double>(D)));
  // Scores scratch per worker; with too little temp memory fall back to one row per block.
  for (int64_t rows : {T < kBlockRows ? T : kBlockRows, int64_t{1}}) {
    job.block_rows = rows;
    job.blocks_per_head = ceil_div(T, rows);
    job.items = B * Hkv * job.blocks_per_head;
    const int64_t threads = static_cast<int64_t>(ctx.num_threads());
    job.workers = threads < job.items ? threads : job.items;
    if (job.workers < 1) job.workers = 1;
    const size_t floats = static_cast<size_t>(job.workers * rows * job.n_rep * S);
    job.scratch = static_cast<float*>(ctx.allocate_temp(sizeof(float) * floats));
    if (job.scratch != nullptr) break;
  }
  if (job.scratch == nullptr) {
    return ctx.fail(Error::OutOfMemory, "needs threads * (H / Hkv) * S * 4 bytes of temp memory for scores");
  }
  ctx.parallel_for(static_cast<size_t>(job.workers), run_attention_worker, &job);
  return Error::Ok;
}

Error rms_norm(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  Tensor* x = a.tensor(0);
  Tensor* w = a.tensor(1);
  const double eps = a.scalar(2);
  Tensor* out = a.out(3);
  if (!portable::require_float(a, x) || !portable::require_float(a, w) || !portable::require_float(a, out)) {
    return a.error();
  }
  if (x->rank < 1) return ctx.fail(Error::InvalidArgument, "input must have rank >= 1");
  const int64_t cols = x->sizes[x->rank - 1];
  if (w->rank != 1 || w->sizes[0] != cols) return ctx.fail(Error::InvalidArgument, "weight must be [N], N = input's last dim");
  if (!(eps >= 0.0) || !std::isfinite(eps)) return ctx.fail(Error::InvalidArgument, "eps must be finite and >= 0");
  if (!portable::resize_like(a, out, *x)) return a.error();
  if (overlaps(*out, *w)) return ctx.fail(Error::InvalidArgument, "the output overlaps the weight");
  if (cols == 0) return Error::Ok;
  const int64_t rows = x->numel() / cols;
  const LlmMath& m = llm_math();
  const float* xp = x->data_as<float>();
  const float* wp = w->data_as<float>();
  float* op = out->data_as<float>();
  const float e = static_cast<float>(eps);
  portable::parallel_for_range(ctx, rows, ceil_div(portable::kElementwiseGrain, cols), [&](int64_t r0, int64_t r1) {
    m.rms_norm(xp + r0 * cols, wp, e, op + r0 * cols, r1 - r0, cols);
  });
  return Error::Ok;
}

Error rope(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  Tensor* x = a.tensor(0);
  Tensor* cos = a.tensor(1);
  Tensor* sin = a.tensor(2);
  Tensor* out = a.out(3);
  for (Tensor* t : {x, cos, sin, out}) {
    if (!portable::require_float(a, t)) return a.error();
  }
  if (x->rank < 2) return ctx.fail(Error::InvalidArgument, "input must be [..., T, D]");
  const int64_t T = x->sizes[x->rank - 2], D = x->sizes[x->rank - 1];
  if (D % 2 != 0) return ctx.fail(Error::InvalidArgument, "the rotated dim D must be even");
  if (cos->rank < 2 || cos->rank > x->rank || cos->rank != sin->rank) {
    return ctx.fail(Error::InvalidArgument, "cos and sin must be [..., T or 1, D] of rank <= the input's");
  }
  const int64_t tc = cos->sizes[cos->rank - 2];
  bool ok = cos->sizes[cos->rank - 1] == D && (tc == T || tc == 1);
  for (int d = 0; d < cos->rank; ++d) {
    ok = ok && sin->sizes[d] == cos->sizes[d] && (d >= cos->rank - 2 || cos->sizes[d] == 1);
  }
  if (!ok) return ctx.fail(Error::InvalidArgument, "cos and sin must be [..., T or 1, D] with leading dims 1");
  if (!portable::resize_like(a, out, *x)) return a.error();
  if (overlaps(*out, *cos) || overlaps(*out, *sin)) {
    return ctx.fail(Error::InvalidArgument, "the output overlaps cos/sin");
  }
  if (x->numel() == 0) return Error::Ok;
  // Parallel over groups of T rows, so that each group starts at cos/sin row 0.
  const int64_t groups = x->numel() / (T * D);
  const LlmMath& m = llm_math();
  const float* xp = x->data_as<float>();
  float* op = out->data_as<float>();
  const float* cp = cos->data_as<float>();
  const float* sp = sin->data_as<float>();
  portable::parallel_for_range(ctx, groups, ceil_div(portable::kElementwiseGrain, T * D), [&](int64_t g0, int64_t g1) {
    m.rope(xp + g0 * T * D, cp, sp, tc, op + g0 * T * D, (g1 - g0) * T, D / 2);
  });
  return Error::Ok;
}

Error silu_mul(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  Tensor* gate = a.tensor(0);
  Tensor* up = a.tensor(1);
  Tensor* out = a.out(2);
  if (!portable::require_float(a, gate) || !portable::require_float(a, up) || !portable::require_float(a, out)) {
    return a.error();
  }
  if (!same_sizes(*up, gate->sizes, gate->rank)) {
    return ctx.fail(Error::InvalidArgument, "gate and up must have the same shape");
  }
  if (!portable::resize_like(a, out, *gate)) return a.error();
  const LlmMath& m = llm_math();
  const float* gp = gate->data_as<float>();
  const float* up_p = up->data_as<float>();
  float* op = out->data_as<float>();
  portable::parallel_for_range(ctx, gate->numel(), portable::kElementwiseGrain, [&](int64_t i0, int64_t i1) {
    m.silu_mul(gp + i0, up_p + i0, op + i0, i1 - i0);
  });
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("ember_llm::sdpa_with_kv_cache.default", sdpa_with_kv_cache);
EMBER_REGISTER_KERNEL("ember_llm::rms_norm.default", rms_norm);
EMBER_REGISTER_KERNEL("ember_llm::rope.default", rope);
EMBER_REGISTER_KERNEL("ember_llm::silu_mul.default", silu_mul);

}  // namespace optimized
}  // namespace ember
