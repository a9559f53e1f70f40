// aten::scaled_dot_product_attention.default(query, key, value, attn_mask?, dropout_p,
//     is_causal, scale?, enable_gqa) -> out, float32.
//
// query [..., Hq, L, E], key [..., Hk, S, E], value [..., Hk, S, Ev] -> out [..., Hq, L, Ev].
// attn_mask: bool (true = attend) or float (added to the scores), broadcastable to
// [..., Hq, L, S]. is_causal masks j > i (top-left aligned, like PyTorch). scale defaults to
// 1/sqrt(E). Grouped-query attention: query head h reads key/value head h / (Hq / Hk).
// Rows whose keys are all masked produce zeros (PyTorch's math backend uses a safe softmax).
// dropout_p must be 0 (inference).
//
// Per (batch, head) and block of up to 64 query rows: scores = scale * Q K^T (GEMM), mask,
// softmax, out = P V (GEMM). Parallel over (batch, head); scratch: threads x 64 x S floats.
#include <cmath>

#include "kernels/portable/linalg/gemm.h"
#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

constexpr int64_t kRowBlock = 64;

struct Attention {
  int rank;                 // rank of query (>= 2)
  int64_t lead_q[kMaxRank];  // query's leading dims (rank - 2 of them)
  int64_t lead_k[kMaxRank];  // key/value leading dims
  int64_t L, S, E, Ev;
  int64_t num_heads;         // product of query leading dims
  float scale;
  bool causal;
  const float* q;
  const float* k;
  const float* v;
  float* out;
  // Mask (optional): data plus element strides over [lead..., L, S].
  const float* mask_f = nullptr;
  const uint8_t* mask_b = nullptr;  // bool bytes, read as 0 / non-zero (any byte a caller passes is defined)
  int64_t mask_strides[kMaxRank];
  float* scratch;  // per chunk: kRowBlock * S floats
};

void attend_head(const Attention& at, int64_t head, float* scores) {
  // Unravel the query's leading index; map to key/value's leading index (broadcast / GQA).
  int64_t idx[kMaxRank];
  int64_t rem = head;
  for (int d = at.rank - 3; d >= 0; --d) {
    idx[d] = rem % at.lead_q[d];
    rem /= at.lead_q[d];
  }
  int64_t kv = 0, mask_off = 0;
  for (int d = 0; d < at.rank - 2; ++d) {
    int64_t ki;
    if (at.lead_k[d] == at.lead_q[d]) {
      ki = idx[d];
    } else if (at.lead_k[d] == 1) {
      ki = 0;
    } else {  // grouped heads
      ki = idx[d] / (at.lead_q[d] / at.lead_k[d]);
    }
    kv = kv * at.lead_k[d] + ki;
    mask_off += idx[d] * at.mask_strides[d];
  }
  const float* q = at.q + head * at.L * at.E;
  const float* k = at.k + kv * at.S * at.E;
  const float* v = at.v + kv * at.S * at.Ev;
  float* out = at.out + head * at.L * at.Ev;
  const int64_t ms_l = at.mask_strides[at.rank - 2], ms_s = at.mask_strides[at.rank - 1];
  for (int64_t l0 = 0; l0 < at.L; l0 += kRowBlock) {
    const int64_t rows = at.L - l0 < kRowBlock ? at.L - l0 : kRowBlock;
    GemmProblem qk;
    qk.m = rows;
    qk.n = at.S;
    qk.k = at.E;
    qk.a = GemmMatrix{q + l0 * at.E, at.E, 1};
    qk.b = GemmMatrix{k, 1, at.E};  // K^T
    qk.c = scores;
    qk.ldc = at.S;
    qk.alpha = at.scale;
    gemm(nullptr, GemmWorkspace(), qk);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t l = l0 + r;
      float* row = scores + r * at.S;
      const int64_t moff = mask_off + l * ms_l;
      if (at.mask_f != nullptr) {
        for (int64_t j = 0; j < at.S; ++j) row[j] += at.mask_f[moff + j * ms_s];
      } else if (at.mask_b != nullptr) {
        for (int64_t j = 0; j < at.S; ++j) {
          if (!at.mask_b[moff + j * ms_s]) row[j] = -INFINITY;
        }
      }
      if (at.causal) {
        for (int64_t j = l + 1; j < at.S; ++j) row[j] = -INFINITY;
      }
      float m = -INFINITY;
      for (int64_t j = 0; j < at.S; ++j) m = row[j] > m ? row[j] : m;
      if (m == -INFINITY) {  // every key masked
        for (int64_t j = 0; j < at.S; ++j) row[j] = 0.0f;
        continue;
      }
      float sum = 0.0f;
      for (int64_t j = 0; j < at.S; ++j) {
        row[j] = std::exp(row[j] - m);
        sum += row[j];
      }
      const float inv = 1.0f / sum;
      for (int64_t j = 0; j < at.S; ++j) row[j] *= inv;
    }
    GemmProblem pv;
    pv.m = rows;
    pv.n = at.Ev;
    pv.k = at.S;
    pv.a = GemmMatrix{scores, at.S, 1};
    pv.b = GemmMatrix{v, at.Ev, 1};
    pv.c = out + l0 * at.Ev;
    pv.ldc = at.Ev;
    gemm(nullptr, GemmWorkspace(), pv);
  }
}

Error sdpa(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(9)) return a.error();
  Tensor* q = a.tensor(0);
  Tensor* k = a.tensor(1);
  Tensor* v = a.tensor(2);
  Tensor* mask = a.optional_tensor(3);
  const double dropout = a.scalar(4);
  const bool causal = a.bool_value(5);
  const bool has_scale = !a.is_none(6);
  const double scale = has_scale ? a.scalar(6) : 0.0;
  const bool gqa = a.bool_value(7);
  Tensor* out = a.tensor(8);
  if (!require_float(a, q) || !require_float(a, k) || !require_float(a, v) || !require_float(a, out)) {
    return a.error();
  }
  if (dropout != 0.0) return ctx.fail(Error::NotSupported, "dropout_p must be 0 at inference");
  const int rank = q->rank;
  if (rank < 2 || k->rank != rank || v->rank != rank) {
    return ctx.fail(Error::InvalidArgument, "query, key and value must have the same rank >= 2");
  }
  Attention at;
  at.rank = rank;
  at.L = q->sizes[rank - 2];
  at.E = q->sizes[rank - 1];
  at.S = k->sizes[rank - 2];
  at.Ev = v->sizes[rank - 1];
  if (k->sizes[rank - 1] != at.E || v->sizes[rank - 2] != at.S) {
    return ctx.fail(Error::InvalidArgument, "key/value sizes do not match the query");
  }
  at.num_heads = 1;
  for (int d = 0; d < rank - 2; ++d) {
    at.lead_q[d] = q->sizes[d];
    at.lead_k[d] = k->sizes[d];
    if (v->sizes[d] != k->sizes[d]) return ctx.fail(Error::InvalidArgument, "key and value leading dims differ");
    const bool head_dim = d == rank - 3;
    const bool ok = at.lead_k[d] == at.lead_q[d] || at.lead_k[d] == 1 ||
                    (head_dim && gqa && at.lead_k[d] > 0 && at.lead_q[d] % at.lead_k[d] == 0);
    if (!ok) return ctx.fail(Error::InvalidArgument, "key/value heads do not match the query (enable_gqa?)");
    at.num_heads *= at.lead_q[d];
  }
  int64_t out_sizes[kMaxRank];
  for (int d = 0; d < rank; ++d) out_sizes[d] = q->sizes[d];
  out_sizes[rank - 1] = at.Ev;
  if (!resize_out(a, out, out_sizes, rank)) return a.error();
  for (int d = 0; d < rank; ++d) at.mask_strides[d] = 0;
  if (mask != nullptr) {
    if (!mask->is_contiguous()) return ctx.fail(Error::NotSupported, "non-contiguous mask");
    int64_t score_shape[kMaxRank];
    for (int d = 0; d < rank; ++d) score_shape[d] = q->sizes[d];
    score_shape[rank - 1] = at.S;
    if (!broadcast_strides(*mask, score_shape, rank, at.mask_strides)) {
      return ctx.fail(Error::InvalidArgument, "attn_mask does not broadcast to [..., L, S]");
    }
    if (mask->dtype == ScalarType::Bool) {
      at.mask_b = mask->data_as<uint8_t>();
    } else if (mask->dtype == ScalarType::Float32) {
      at.mask_f = mask->data_as<float>();
    } else {
      return ctx.fail(Error::InvalidArgument, "attn_mask must be bool or float32");
    }
  }
  at.scale = static_cast<float>(has_scale ? scale : (at.E > 0 ? 1.0 / std::sqrt(static_cast<double>(at.E)) : 1.0));
  at.causal = causal;
  at.q = q->data_as<float>();
  at.k = k->data_as<float>();
  at.v = v->data_as<float>();
  at.out = out->data_as<float>();
  if (out->numel() == 0) return Error::Ok;
  if (at.S == 0) {  // no keys: every row fully masked
    for (int64_t i = 0; i < out->numel(); ++i) at.out[i] = 0.0f;
    return Error::Ok;
  }
  const int64_t block_rows = at.L < kRowBlock ? at.L : kRowBlock;
  int64_t chunks = static_cast<int64_t>(ctx.num_threads());
  if (chunks > at.num_heads) chunks = at.num_heads;
  if (chunks < 1) chunks = 1;
  at.scratch = static_cast<float*>(ctx.allocate_temp(sizeof(float) * static_cast<size_t>(chunks * block_rows * at.S)));
  if (at.scratch == nullptr) {
    return ctx.fail(Error::OutOfMemory, "needs threads * min(L, 64) * S * 4 bytes of temp memory for scores");
  }
  struct Job {
    const Attention* at;
    int64_t chunks, block_rows;
  } job{&at, chunks, block_rows};
  auto run_chunk = [](void* context, size_t c) {
    const Job& j = *static_cast<const Job*>(context);
    const int64_t per = ceil_div(j.at->num_heads, j.chunks);
    const int64_t begin = static_cast<int64_t>(c) * per;
    const int64_t end = begin + per < j.at->num_heads ? begin + per : j.at->num_heads;
    float* scores = j.at->scratch + static_cast<int64_t>(c) * j.block_rows * j.at->S;
    for (int64_t h = begin; h < end; ++h) attend_head(*j.at, h, scores);
  };
  ctx.parallel_for(static_cast<size_t>(chunks), run_chunk, &job);
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::scaled_dot_product_attention.default", sdpa);

}  // namespace portable
}  // namespace ember
