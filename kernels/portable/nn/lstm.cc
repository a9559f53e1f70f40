// aten::lstm.input(input, hx[h0, c0], params[], has_biases, num_layers, dropout, train,
//     bidirectional, batch_first) -> (output, h_n, c_n), float32, inference.
//
// input [T, B, I] ([B, T, I] when batch_first, or unbatched [T, I]); h0/c0 [layers*dirs, B, H]
// ([layers*dirs, H] unbatched). params per layer and direction (layer 0 forward, layer 0
// reverse, layer 1 forward, ...): w_ih [4H, in], w_hh [4H, H], then b_ih [4H], b_hh [4H] when
// has_biases. Gate order i, f, g, o: c' = f*c + i*g, h' = o*tanh(c'). output [T, B, dirs*H]
// (same batch_first layout as the input); h_n/c_n [layers*dirs, B, H]. Projections
// (proj_size) are not supported.
//
// Per layer and direction: one GEMM computes the input projections of all time steps
// (plus both biases); each step then adds h_{t-1} W_hh^T (a small GEMM) and applies the gates.
// Scratch: T*B*4H (gates) + 2*B*H (state) + up to 2*T*B*dirs*H (intermediate layer outputs).
#include <cmath>

#include "kernels/portable/linalg/gemm.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

struct LstmShape {
  int64_t T, B, I, H, layers, dirs;
  bool batch_first;
  // Row of time step t, batch b in a [T, B, X] or [B, T, X] sequence.
  int64_t row(int64_t t, int64_t b) const { return batch_first ? b * T + t : t * B + b; }
};

Error lstm(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(12)) return a.error();
  Tensor* input = a.tensor(0);
  Span<Tensor* const> hx = a.tensor_list(1);
  Span<Tensor* const> params = a.tensor_list(2);
  const bool has_biases = a.bool_value(3);
  const int64_t layers = a.int_value(4);
  const bool train = a.bool_value(6);
  const bool bidirectional = a.bool_value(7);
  const bool batch_first = a.bool_value(8);
  Tensor* output = a.tensor(9);
  Tensor* h_n = a.tensor(10);
  Tensor* c_n = a.tensor(11);
  if (!a.ok()) return a.error();
  (void)train;  // dropout between layers only applies in training; inference ignores it
  if (!require_float(a, input) || !require_float(a, output) || !require_float(a, h_n) || !require_float(a, c_n)) {
    return a.error();
  }
  if (hx.size() != 2 || hx[0] == nullptr || hx[1] == nullptr) {
    return ctx.fail(Error::InvalidArgument, "hx must be [h0, c0]");
  }
  if (!require_float(a, hx[0]) || !require_float(a, hx[1])) return a.error();
  const int64_t dirs = bidirectional ? 2 : 1;
  const int64_t per = has_biases ? 4 : 2;
  if (layers < 1 || static_cast<int64_t>(params.size()) != layers * dirs * per) {
    return ctx.fail(Error::NotSupported, "unexpected parameter count (projections are not supported)");
  }
  const bool unbatched = input->rank == 2;
  if (input->rank != 3 && !unbatched) return ctx.fail(Error::InvalidArgument, "input must be 2-D or 3-D");
  LstmShape s;
  s.batch_first = batch_first && !unbatched;
  s.T = unbatched ? input->sizes[0] : (s.batch_first ? input->sizes[1] : input->sizes[0]);
  s.B = unbatched ? 1 : (s.batch_first ? input->sizes[0] : input->sizes[1]);
  s.I = input->sizes[input->rank - 1];
  s.layers = layers;
  s.dirs = dirs;
  const Tensor* w_hh0 = params[1];
  if (w_hh0 == nullptr || w_hh0->rank != 2) return ctx.fail(Error::InvalidArgument, "w_hh must be 2-D");
  s.H = w_hh0->sizes[1];
  const int64_t G = 4 * s.H;
  // Validate parameters and states.
  for (int64_t l = 0; l < layers; ++l) {
    const int64_t in_features = l == 0 ? s.I : dirs * s.H;
    for (int64_t d = 0; d < dirs; ++d) {
      Tensor* const* p = params.data() + (l * dirs + d) * per;
      for (int64_t i = 0; i < per; ++i) {
        if (p[i] == nullptr || !require_float(a, p[i])) return a.error();
      }
      if (p[0]->rank != 2 || p[0]->sizes[0] != G || p[0]->sizes[1] != in_features || p[1]->rank != 2 ||
          p[1]->sizes[0] != G || p[1]->sizes[1] != s.H ||
          (has_biases && (p[2]->numel() != G || p[3]->numel() != G))) {
        return ctx.fail(Error::InvalidArgument, "LSTM parameter shapes do not match");
      }
    }
  }
  const int64_t state_numel = layers * dirs * s.B * s.H;
  if (hx[0]->numel() != state_numel || hx[1]->numel() != state_numel) {
    return ctx.fail(Error::InvalidArgument, "h0/c0 shape does not match [layers*dirs, B, H]");
  }
  int64_t out_sizes[3];
  if (unbatched) {
    out_sizes[0] = s.T;
    out_sizes[1] = dirs * s.H;
  } else {
    out_sizes[0] = s.batch_first ? s.B : s.T;
    out_sizes[1] = s.batch_first ? s.T : s.B;
    out_sizes[2] = dirs * s.H;
  }
  if (!resize_out(a, output, out_sizes, input->rank)) return a.error();
  if (!resize_out(a, h_n, hx[0]->sizes, hx[0]->rank) || !resize_out(a, c_n, hx[1]->sizes, hx[1]->rank)) {
    return a.error();
  }
  // Scratch.
  const int64_t seq_numel = s.T * s.B * dirs * s.H;
  const int64_t seq_buffers = layers - 1 < 2 ? layers - 1 : 2;
  const size_t floats = static_cast<size_t>(s.T * s.B * G + 2 * s.B * s.H + seq_buffers * seq_numel);
  float* scratch = static_cast<float*>(ctx.allocate_temp(sizeof(float) * floats));
  if (scratch == nullptr && floats > 0) {
    return ctx.fail(Error::OutOfMemory, "needs (T*B*4H + 2*B*H + min(layers-1, 2)*T*B*dirs*H) floats of temp memory");
  }
  float* gates = scratch;
  float* h = gates + s.T * s.B * G;
  float* c = h + s.B * s.H;
  float* seq[2] = {c + s.B * s.H, c + s.B * s.H + seq_numel};
  GemmWorkspace ws = reserve_gemm_workspace(ctx, s.T * s.B, G, s.I > dirs * s.H ? s.I : dirs * s.H);

  const float* layer_in = input->data_as<float>();
  int64_t layer_in_features = s.I;
  for (int64_t l = 0; l < layers; ++l) {
    float* layer_out = l == layers - 1 ? output->data_as<float>() : seq[l % 2];
    for (int64_t d = 0; d < dirs; ++d) {
      Tensor* const* p = params.data() + (l * dirs + d) * per;
      const float* w_ih = p[0]->data_as<float>();
      const float* w_hh = p[1]->data_as<float>();
      // gates[row] = b_ih + b_hh + x[row] @ w_ih^T for every (t, b) row.
      float beta = 0.0f;
      if (has_biases) {
        const float* b_ih = p[2]->data_as<float>();
        const float* b_hh = p[3]->data_as<float>();
        for (int64_t j = 0; j < G; ++j) gates[j] = b_ih[j] + b_hh[j];
        for (int64_t r = 1; r < s.T * s.B; ++r) {
          for (int64_t j = 0; j < G; ++j) gates[r * G + j] = gates[j];
        }
        beta = 1.0f;
      }
      GemmProblem proj;
      proj.m = s.T * s.B;
      proj.n = G;
      proj.k = layer_in_features;
      proj.a = GemmMatrix{layer_in, layer_in_features, 1};
      proj.b = GemmMatrix{w_ih, 1, layer_in_features};
      proj.c = gates;
      proj.ldc = G;
      proj.beta = beta;
      gemm(&ctx, ws, proj);
      // Initial state.
      const int64_t state = (l * dirs + d) * s.B * s.H;
      for (int64_t i = 0; i < s.B * s.H; ++i) {
        h[i] = hx[0]->data_as<float>()[state + i];
        c[i] = hx[1]->data_as<float>()[state + i];
      }
      for (int64_t step = 0; step < s.T; ++step) {
        const int64_t t = d == 0 ? step : s.T - 1 - step;
        // gates[t, b] += h[b] @ w_hh^T (rows of one step are ldc apart).
        GemmProblem rec;
        rec.m = s.B;
        rec.n = G;
        rec.k = s.H;
        rec.a = GemmMatrix{h, s.H, 1};
        rec.b = GemmMatrix{w_hh, 1, s.H};
        rec.c = gates + s.row(t, 0) * G;
        rec.ldc = (s.B > 1 ? s.row(t, 1) - s.row(t, 0) : 1) * G;
        rec.beta = 1.0f;
        gemm(&ctx, ws, rec);
        for (int64_t b = 0; b < s.B; ++b) {
          const float* g = gates + s.row(t, b) * G;
          float* hb = h + b * s.H;
          float* cb = c + b * s.H;
          float* ob = layer_out + s.row(t, b) * dirs * s.H + d * s.H;
          for (int64_t j = 0; j < s.H; ++j) {
            const float ig = sigmoid(g[j]);
            const float fg = sigmoid(g[s.H + j]);
            const float gg = std::tanh(g[2 * s.H + j]);
            const float og = sigmoid(g[3 * s.H + j]);
            cb[j] = fg * cb[j] + ig * gg;
            hb[j] = og * std::tanh(cb[j]);
            ob[j] = hb[j];
          }
        }
      }
      for (int64_t i = 0; i < s.B * s.H; ++i) {
        h_n->data_as<float>()[state + i] = h[i];
        c_n->data_as<float>()[state + i] = c[i];
      }
    }
    layer_in = layer_out;
    layer_in_features = dirs * s.H;
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::lstm.input", lstm);

}  // namespace portable
}  // namespace ember
