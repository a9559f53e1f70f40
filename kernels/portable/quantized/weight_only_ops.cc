// Weight-only quantized operators: float activations, int8 or int4 weights dequantized inside
// the kernel (what exporter/passes/lower_weight_only.cc makes of the quantizer's
// dequantize -> linear / embedding pairs), so a decoded token reads 1 or 0.5 byte per weight
// instead of 4 and no float copy of a weight is ever made.
//
//   ember_quantized::linear_weight_only(input [..., K] f32, weight, weight_scales [N, K/group] f32,
//                                       group_size, bits, bias [N] f32 or None) -> [..., N]
//   ember_quantized::embedding_weight_only(weight, weight_scales [N, K/group] f32, group_size,
//                                          bits, indices int32/int64 [...]) -> [..., K]
//   w[n][k] = q[n][k] * weight_scales[n][k / group_size]   (symmetric: zero point 0)
//
// Weight layouts: bits 8: int8 [N, K]; bits 4: uint8 [N, K / 2], two values per byte, element
// 2j in the low nibble and 2j + 1 in the high one, each stored as value + 8 (so [-8, 7]).
// group_size divides K (and is even for bits 4). Everything is validated before use.
//
// Arithmetic: a chunk of a weight row is dequantized to float32 (q * scale, exactly what
// dequantize computes) and dotted with the input (AVX2 + FMA where the CPU has it, chosen at
// run time; plain C++ elsewhere). Not bit-identical to dequantize-then-linear (the float sums
// associate differently), within float rounding of it. Exception, for speed where decoding is
// bound by arithmetic: on AVX2 CPUs, inputs of up to 4 rows with groups of a multiple of 32
// (per-channel int8 weights of K % 32 == 0 included) are quantized dynamically to int8 per
// block of 32 values (scale max|x| / 127, round half to even) and multiplied in integers
// (what llama.cpp's Q8_0 activations do); that adds about 0.3% relative error per dot.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ember {
namespace portable {
namespace {

constexpr int64_t kChunk = 512;  // values converted at a time (a stack buffer)

// Dequantizes `len` values starting at element `first` of a row: out[i] = q * scale of its
// group (`scales` is the row's, one per `group` values).
void unpack_scalar(const uint8_t* row, int bits, int64_t first, int64_t len, const float* scales, int64_t group,
                   float* out) {
  int64_t i = 0;
  while (i < len) {
    const int64_t pos = first + i;
    const float scale = scales[pos / group];
    const int64_t run = std::min(len - i, group - pos % group);  // values left in this group
    if (bits == 8) {
      const int8_t* q = reinterpret_cast<const int8_t*>(row) + pos;
      for (int64_t j = 0; j < run; ++j) out[i + j] = static_cast<float>(q[j]) * scale;
    } else {
      for (int64_t j = 0; j < run; ++j) {
        const uint8_t byte = row[(pos + j) >> 1];
        const int nibble = ((pos + j) & 1) ? (byte >> 4) : (byte & 15);
        out[i + j] = static_cast<float>(nibble - 8) * scale;
      }
    }
    i += run;
  }
}

float dot_scalar(const float* a, const float* b, int64_t len) {
  float acc[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= len; i += 4) {
    for (int j = 0; j < 4; ++j) acc[j] += a[i + j] * b[i + j];
  }
  for (; i < len; ++i) acc[0] += a[i] * b[i];
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

#if defined(__x86_64__)
// Values i..i+7 of a row as floats (unscaled); i is a multiple of 8.
__attribute__((target("avx2,fma"))) inline __m256 load8_avx2(const uint8_t* row, int bits, int64_t i) {
  if (bits == 8) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + i))));
  }
  uint32_t packed;
  std::memcpy(&packed, row + i / 2, 4);
  const __m128i bytes = _mm_cvtsi32_si128(static_cast<int>(packed));
  const __m128i lo = _mm_and_si128(bytes, _mm_set1_epi8(15));
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(15));
  const __m128i vals = _mm_sub_epi8(_mm_unpacklo_epi8(lo, hi), _mm_set1_epi8(8));
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(vals));
}

// Blocks of 16 values share one scale when the group is a multiple of 16 (and `first` is
// block-aligned, as the callers' chunks are); other groups take the scalar path.
__attribute__((target("avx2,fma"))) void unpack_avx2(const uint8_t* row, int bits, int64_t first, int64_t len,
                                                      const float* scales, int64_t group, float* out) {
  int64_t i = 0;
  // The scale of value first + i, tracked without a division per block.
  int64_t gi = first / group, group_end = (gi + 1) * group;
  auto scale_at = [&](int64_t pos) {
    while (pos >= group_end) ++gi, group_end += group;
    return scales[gi];
  };
  if (group % 16 == 0 && first % 16 == 0) {
    if (bits == 8) {
      const int8_t* q = reinterpret_cast<const int8_t*>(row) + first;
      for (; i + 16 <= len; i += 16) {
        const __m256 s = _mm256_set1_ps(scale_at(first + i));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + i));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b))));
        _mm256_storeu_ps(out + i + 8, _mm256_mul_ps(s, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(b, 8)))));
      }
    } else {
      const uint8_t* p = row + (first >> 1);
      const __m128i low_mask = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
      for (; i + 16 <= len; i += 16) {
        const __m256 s = _mm256_set1_ps(scale_at(first + i));
        const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + i / 2));  // 8 bytes
        const __m128i lo = _mm_and_si128(bytes, low_mask);
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), low_mask);
        const __m128i vals = _mm_sub_epi8(_mm_unpacklo_epi8(lo, hi), eight);  // 16 values in order
        _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(vals))));
        _mm256_storeu_ps(out + i + 8, _mm256_mul_ps(s, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(vals, 8)))));
      }
    }
  }
  if (group % 8 == 0 && first % 8 == 0) {
    for (; i + 8 <= len; i += 8) {
      _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_set1_ps(scale_at(first + i)), load8_avx2(row, bits, first + i)));
    }
  }
  if (i < len) unpack_scalar(row, bits, first + i, len - i, scales, group, out + i);
}

__attribute__((target("avx2,fma"))) float dot_avx2(const float* a, const float* b, int64_t len) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= len; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= len; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  const __m256 s = _mm256_add_ps(acc0, acc1);
  __m128 r = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  float total = _mm_cvtss_f32(r);
  for (; i < len; ++i) total += a[i] * b[i];
  return total;
}

// One output of a decode-sized product without a float copy of the row: per group, the
// int8 or int4 values are widened and multiplied into 8-wide sums with x, and each group's
// sums are scaled once. Needs group % 8 == 0 (16-value steps when group % 16 == 0).
__attribute__((target("avx2,fma"))) float row_dot_avx2(const uint8_t* row, int bits, const float* scales,
                                                       int64_t group, int64_t k, const float* x) {
  __m256 total = _mm256_setzero_ps();
  const __m128i low_mask = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
  for (int64_t g0 = 0, gi = 0; g0 < k; g0 += group, ++gi) {  // gi: no division per group
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    if (group % 16 != 0) {
      for (int64_t i = g0; i < g0 + group; i += 8) acc0 = _mm256_fmadd_ps(load8_avx2(row, bits, i), _mm256_loadu_ps(x + i), acc0);
      total = _mm256_fmadd_ps(acc0, _mm256_set1_ps(scales[gi]), total);
      continue;
    }
    for (int64_t i = g0; i < g0 + group; i += 16) {
      __m128i vals;
      if (bits == 8) {
        vals = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i));
      } else {
        const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + i / 2));
        const __m128i lo = _mm_and_si128(bytes, low_mask);
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), low_mask);
        vals = _mm_sub_epi8(_mm_unpacklo_epi8(lo, hi), eight);
      }
      acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(vals)), _mm256_loadu_ps(x + i), acc0);
      acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(vals, 8))),
                             _mm256_loadu_ps(x + i + 8), acc1);
    }
    total = _mm256_fmadd_ps(_mm256_add_ps(acc0, acc1), _mm256_set1_ps(scales[gi]), total);
  }
  __m128 r = _mm_add_ps(_mm256_castps256_ps128(total), _mm256_extractf128_ps(total, 1));
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
}

// Decoding with int8 activations (the dynamic path): x is quantized per block of 32 values
// (quantize_blocks), then each 32-value block of the weight row is multiplied with it in
// integers (maddubs: unsigned x signed bytes; int4 nibbles are value + 8, corrected once per
// group with quantize_blocks' group offset) and scaled once per block and per group. Needs
// group % 32 == 0.
__attribute__((target("avx2,fma"))) float row_dot_int8x_avx2(const uint8_t* row, int bits, const float* scales,
                                                             int64_t group, int64_t k, const int8_t* xq,
                                                             const float* xs, const float* group_offsets) {
  __m256 total = _mm256_setzero_ps();
  float correction = 0.f;
  const __m128i low_mask = _mm_set1_epi8(15);
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t g0 = 0, gi = 0; g0 < k; g0 += group, ++gi) {  // gi: no division per group
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b0 = g0; b0 < g0 + group; b0 += 32) {
      const int64_t blk = b0 / 32;
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + b0));
      __m256i prod;
      if (bits == 4) {
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + b0 / 2));
        const __m128i lo = _mm_and_si128(bytes, low_mask);
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), low_mask);
        const __m256i nibbles = _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi));
        prod = _mm256_maddubs_epi16(nibbles, xv);  // (value + 8) * x, pairs summed
      } else {
        const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + b0));
        prod = _mm256_maddubs_epi16(_mm256_abs_epi8(wv), _mm256_sign_epi8(xv, wv));
      }
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(prod, ones)), _mm256_set1_ps(xs[blk]), acc);
    }
    const float ws = scales[gi];
    total = _mm256_fmadd_ps(acc, _mm256_set1_ps(ws), total);
    if (bits == 4) correction += group_offsets[gi] * ws;  // the + 8 of every nibble
  }
  __m128 r = _mm_add_ps(_mm256_castps256_ps128(total), _mm256_extractf128_ps(total, 1));
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r) + correction;
}

bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
#endif

// Dynamic int8 quantization of an input row in blocks of 32 values: scale = max|x| / 127
// (0 for an all-zero block), q = round_half_even(x / scale) in [-127, 127]; and per weight
// group of `group` values, -8 * sum(q * scale) (what the int4 nibbles' + 8 adds to a dot).
void quantize_blocks(const float* x, int64_t k, int64_t group, int8_t* q, float* scales, float* group_offsets) {
  for (int64_t g = 0; g < k / group; ++g) group_offsets[g] = 0.f;
  for (int64_t b0 = 0; b0 < k; b0 += 32) {
    float max_abs = 0.f;
    for (int64_t i = b0; i < b0 + 32; ++i) max_abs = std::max(max_abs, std::fabs(x[i]));
    const float scale = max_abs / 127.f;
    int32_t sum = 0;  // of q, for the group offset
    for (int64_t i = b0; i < b0 + 32; ++i) {
      const float v = scale > 0.f ? std::nearbyint(x[i] / scale) : 0.f;
      q[i] = static_cast<int8_t>(std::isfinite(v) ? std::min(127.f, std::max(-127.f, v)) : 0.f);
      sum += q[i];
    }
    scales[b0 / 32] = scale;
    group_offsets[b0 / group] -= 8.f * static_cast<float>(sum) * scale;
  }
}

struct Kernels {
  void (*unpack)(const uint8_t*, int, int64_t, int64_t, const float*, int64_t, float*);
  float (*dot)(const float*, const float*, int64_t);
  // Fused dequantize-and-dot of one row for groups of a multiple of 8 (null: not available).
  float (*row_dot)(const uint8_t*, int, const float*, int64_t, int64_t, const float*);
  // Integer dot of one row with block-quantized int8 activations, groups of a multiple of 32.
  float (*row_dot_int8x)(const uint8_t*, int, const float*, int64_t, int64_t, const int8_t*, const float*,
                         const float*);
};

Kernels pick_kernels() {
#if defined(__x86_64__)
  if (cpu_has_avx2_fma()) return {unpack_avx2, dot_avx2, row_dot_avx2, row_dot_int8x_avx2};
#endif
  return {unpack_scalar, dot_scalar, nullptr, nullptr};
}

// Up to this many input rows (decoding, small batches) a weight row is dotted straight from
// its quantized bytes; beyond, converting it once and reusing the floats is cheaper.
constexpr int64_t kFusedRows = 4;

// The weight arguments shared by both operators; false (with a message) when inconsistent.
struct PackedWeight {
  const uint8_t* data = nullptr;
  const float* scales = nullptr;
  int64_t rows = 0, cols = 0, group = 0, row_bytes = 0;
  int bits = 8;
};

bool read_weight(KernelArgs& a, const Tensor* w, const Tensor* scales, int64_t group, int64_t bits,
                 PackedWeight* pw) {
  if (!a.ok()) return false;
  if (bits != 8 && bits != 4) return a.fail("bits must be 8 or 4");
  if (w->rank != 2 || !w->is_contiguous()) return a.fail("the quantized weight must be a contiguous 2-D tensor");
  if (bits == 8 && w->dtype != ScalarType::Int8) return a.fail("an 8-bit weight must be int8 [N, K]");
  if (bits == 4 && w->dtype != ScalarType::UInt8) return a.fail("a 4-bit weight must be uint8 [N, K / 2] (two values per byte)");
  pw->bits = static_cast<int>(bits);
  pw->rows = w->sizes[0];
  pw->row_bytes = w->sizes[1];
  pw->cols = bits == 8 ? w->sizes[1] : 2 * w->sizes[1];
  pw->group = group;
  if (group < 1 || pw->cols % group != 0 || (bits == 4 && group % 2 != 0)) {
    return a.fail("group_size must divide the weight's row length (and be even for 4-bit weights)");
  }
  if (scales->dtype != ScalarType::Float32 || scales->rank != 2 || scales->sizes[0] != pw->rows ||
      scales->sizes[1] != pw->cols / group || !scales->is_contiguous()) {
    return a.fail("weight_scales must be float32 [N, K / group_size]");
  }
  pw->data = w->data_as<uint8_t>();
  pw->scales = scales->data_as<float>();
  return true;
}

// linear_weight_only(input, weight, weight_scales, group_size, bits, bias, out)
Error linear_weight_only(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  const Tensor* in = a.tensor(0);
  const Tensor* w = a.tensor(1);
  const Tensor* scales = a.tensor(2);
  const int64_t group = a.int_value(3), bits = a.int_value(4);
  const Tensor* bias = a.optional_tensor(5);
  Tensor* out = a.out(6);
  PackedWeight pw;
  if (!read_weight(a, w, scales, group, bits, &pw)) return a.error();
  if (in->dtype != ScalarType::Float32 || in->rank < 1 || in->sizes[in->rank - 1] != pw.cols || !in->is_contiguous()) {
    return ctx.fail(Error::InvalidArgument, "linear_weight_only needs a contiguous float32 input [..., K] matching the weight");
  }
  if (bias != nullptr && (bias->dtype != ScalarType::Float32 || bias->numel() != pw.rows)) {
    return ctx.fail(Error::InvalidArgument, "linear_weight_only's bias must be float32 [N]");
  }
  Shape s(*in);
  s.d[s.rank - 1] = pw.rows;
  if (!resize_to(a, out, s) || !require_contiguous(a, out)) return a.error();
  const int64_t k = pw.cols, rows = k > 0 ? in->numel() / k : 0, cols = pw.rows;
  const float* x = in->data_as<float>();
  const float* b = bias ? bias->data_as<float>() : nullptr;
  float* y = out->data_as<float>();
  const Kernels kern = pick_kernels();
  // Decode-sized inputs with groups of 32: activations quantized to int8 once, integer dots.
  int8_t* xq = nullptr;
  float* xs = nullptr;
  float* offsets = nullptr;
  const int64_t groups = k / pw.group;
  if (kern.row_dot_int8x != nullptr && rows <= kFusedRows && pw.group % 32 == 0) {
    xq = static_cast<int8_t*>(ctx.allocate_temp(static_cast<size_t>(rows * k)));
    xs = static_cast<float*>(ctx.allocate_temp(static_cast<size_t>(rows * k / 32) * sizeof(float)));
    offsets = static_cast<float*>(ctx.allocate_temp(static_cast<size_t>(rows * groups) * sizeof(float)));
    if (xq != nullptr && xs != nullptr && offsets != nullptr) {
      for (int64_t r = 0; r < rows; ++r) {
        quantize_blocks(x + r * k, k, pw.group, xq + r * k, xs + r * k / 32, offsets + r * groups);
      }
    } else {
      xq = nullptr;  // no scratch: the float path
    }
  }
  // Output features are split over threads; each thread dequantizes a chunk of a weight row
  // once (scales applied) and dots it with every input row.
  parallel_for_range(ctx, cols, 16, [&](int64_t begin, int64_t end) {
    float chunk[kChunk];
    for (int64_t o = begin; o < end; ++o) {
      const uint8_t* wrow = pw.data + o * pw.row_bytes;
      const float* srow = pw.scales + o * (k / pw.group);
      if (xq != nullptr) {
        for (int64_t r = 0; r < rows; ++r) {
          y[r * cols + o] = (b ? b[o] : 0.f) + kern.row_dot_int8x(wrow, pw.bits, srow, pw.group, k, xq + r * k,
                                                                  xs + r * k / 32, offsets + r * groups);
        }
        continue;
      }
      if (kern.row_dot != nullptr && rows <= kFusedRows && pw.group % 8 == 0) {
        for (int64_t r = 0; r < rows; ++r) {
          y[r * cols + o] = (b ? b[o] : 0.f) + kern.row_dot(wrow, pw.bits, srow, pw.group, k, x + r * k);
        }
        continue;
      }
      for (int64_t r = 0; r < rows; ++r) y[r * cols + o] = b ? b[o] : 0.f;
      for (int64_t c0 = 0; c0 < k; c0 += kChunk) {
        const int64_t len = std::min<int64_t>(kChunk, k - c0);
        kern.unpack(wrow, pw.bits, c0, len, srow, pw.group, chunk);
        for (int64_t r = 0; r < rows; ++r) y[r * cols + o] += kern.dot(x + r * k + c0, chunk, len);
      }
    }
  });
  return Error::Ok;
}

// embedding_weight_only(weight, weight_scales, group_size, bits, indices, out)
Error embedding_weight_only(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* w = a.tensor(0);
  const Tensor* scales = a.tensor(1);
  const int64_t group = a.int_value(2), bits = a.int_value(3);
  const Tensor* idx = a.tensor(4);
  Tensor* out = a.out(5);
  PackedWeight pw;
  if (!read_weight(a, w, scales, group, bits, &pw)) return a.error();
  if ((idx->dtype != ScalarType::Int64 && idx->dtype != ScalarType::Int32) || !idx->is_contiguous() ||
      idx->rank >= static_cast<int>(kMaxRank)) {
    return ctx.fail(Error::InvalidArgument, "embedding_weight_only needs contiguous int32/int64 indices");
  }
  Shape s(*idx);
  s.push(pw.cols);
  if (!resize_to(a, out, s) || !require_contiguous(a, out)) return a.error();
  float* y = out->data_as<float>();
  const int64_t count = idx->numel(), k = pw.cols;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t row = idx->dtype == ScalarType::Int64 ? idx->data_as<int64_t>()[i] : idx->data_as<int32_t>()[i];
    if (row < 0 || row >= pw.rows) return ctx.fail(Error::OutOfBounds, "embedding index out of range of the weight's rows");
    const uint8_t* wrow = pw.data + row * pw.row_bytes;
    const float* srow = pw.scales + row * (k / pw.group);
    float* dst = y + i * k;
    unpack_scalar(wrow, pw.bits, 0, k, srow, pw.group, dst);
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("ember_quantized::linear_weight_only.default", linear_weight_only);
EMBER_REGISTER_KERNEL("ember_quantized::embedding_weight_only.default", embedding_weight_only);

}  // namespace portable
}  // namespace ember
