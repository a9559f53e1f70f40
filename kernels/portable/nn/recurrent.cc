// The recurrent-layer driver (see recurrent.h): layers, directions, sequence layouts
// (padded, batch_first, unbatched, packed) and GEMMs for every recurrent op; the cells live
// in lstm.cc, gru.cc and rnn.cc.
#include "kernels/portable/nn/recurrent.h"

#include <cstring>

#include "kernels/portable/linalg/gemm.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"

namespace ember {
namespace portable {
namespace {

// Rows of a sequence: (t, b) -> row of a [rows, features] matrix, and the rows active at t.
struct SeqLayout {
  int64_t T = 0, B = 0;
  bool batch_first = false;
  const int64_t* batch_sizes = nullptr;  // packed: rows per step (non-increasing)
  const int64_t* offsets = nullptr;      // packed: first row of each step
  int64_t active(int64_t t) const { return batch_sizes != nullptr ? batch_sizes[t] : B; }
  int64_t row(int64_t t, int64_t b) const {
    if (offsets != nullptr) return offsets[t] + b;
    return batch_first ? b * T + t : t * B + b;
  }
  // Rows between batch entries b and b + 1 of one step.
  int64_t batch_stride() const { return offsets == nullptr && batch_first ? T : 1; }
};

// a * b (and the running product) without int64 overflow; false on overflow or negatives.
bool checked_mul(int64_t a, int64_t b, int64_t* out) {
  if (a < 0 || b < 0) return false;
  return !__builtin_mul_overflow(a, b, out);
}
bool checked_add(int64_t a, int64_t b, int64_t* out) {
  if (a < 0 || b < 0) return false;
  return !__builtin_add_overflow(a, b, out);
}

bool same_sizes(const Tensor* t, const int64_t* sizes, int rank) {
  if (t->rank != rank) return false;
  for (int i = 0; i < rank; ++i) {
    if (t->sizes[i] != sizes[i]) return false;
  }
  return true;
}

struct Params {
  Span<Tensor* const> list;
  int64_t per = 0;  // tensors per (layer, direction)
  bool has_biases = false, projection = false;
  const float* w_ih(int64_t ld) const { return list[ld * per]->data_as<float>(); }
  const float* w_hh(int64_t ld) const { return list[ld * per + 1]->data_as<float>(); }
  const float* b_ih(int64_t ld) const { return has_biases ? list[ld * per + 2]->data_as<float>() : nullptr; }
  const float* b_hh(int64_t ld) const { return has_biases ? list[ld * per + 3]->data_as<float>() : nullptr; }
  const float* w_hr(int64_t ld) const { return projection ? list[ld * per + per - 1]->data_as<float>() : nullptr; }
};

}  // namespace

Error run_recurrent_op(KernelContext& ctx, EValue** args, size_t n, const RecurrentCell& cell,
                       RecurrentOverload overload) {
  KernelArgs a(ctx, args, n);
  const bool packed = overload == RecurrentOverload::kData;
  const size_t outputs = cell.has_cell_state ? 3 : 2;
  if (!a.expect(9 + outputs)) return a.error();
  // Schema positions: .data has batch_sizes at 1 and no batch_first; the rest shift by one.
  const size_t p = packed ? 1 : 0;
  Tensor* input = a.tensor(0);
  Tensor* batch_sizes = packed ? a.tensor(1) : nullptr;
  Tensor* h0 = nullptr;
  Tensor* c0 = nullptr;
  if (cell.has_cell_state) {
    Span<Tensor* const> hx = a.tensor_list(1 + p);
    if (!a.ok()) return a.error();
    if (hx.size() != 2 || hx[0] == nullptr || hx[1] == nullptr) {
      return ctx.fail(Error::InvalidArgument, "hx must be [h0, c0]");
    }
    h0 = hx[0];
    c0 = hx[1];
  } else {
    h0 = a.tensor(1 + p);
  }
  Span<Tensor* const> params = a.tensor_list(2 + p);
  const bool has_biases = a.bool_value(3 + p);
  const int64_t layers = a.int_value(4 + p);
  const double dropout = a.scalar(5 + p);
  const bool train = a.bool_value(6 + p);
  const bool bidirectional = a.bool_value(7 + p);
  const bool batch_first = packed ? false : a.bool_value(8);
  Tensor* output = a.tensor(9);
  Tensor* h_n = a.tensor(10);
  Tensor* c_n = cell.has_cell_state ? a.tensor(11) : nullptr;
  if (!a.ok()) return a.error();
  if (!require_float(a, input) || !require_float(a, output) || !require_float(a, h0) || !require_float(a, h_n)) {
    return a.error();
  }
  if (cell.has_cell_state && (!require_float(a, c0) || !require_float(a, c_n))) return a.error();
  if (layers < 1) return ctx.fail(Error::InvalidArgument, "num_layers must be >= 1");
  if (!(dropout >= 0.0 && dropout <= 1.0)) return ctx.fail(Error::InvalidArgument, "dropout must be in [0, 1]");
  if (train && dropout > 0.0 && layers > 1) {
    return ctx.fail(Error::NotSupported, "dropout between layers in training mode is not supported (export in eval mode)");
  }
  const int64_t dirs = bidirectional ? 2 : 1;

  // Sequence layout.
  SeqLayout s;
  bool unbatched = false;
  if (packed) {
    if (input->rank != 2) return ctx.fail(Error::InvalidArgument, "packed data must be 2-D [sum(batch_sizes), input_size]");
    if (batch_sizes->dtype != ScalarType::Int64 || batch_sizes->rank != 1 || !batch_sizes->is_contiguous()) {
      return ctx.fail(Error::InvalidArgument, "batch_sizes must be a 1-D int64 tensor");
    }
    s.T = batch_sizes->sizes[0];
    if (s.T < 1) return ctx.fail(Error::InvalidArgument, "batch_sizes must not be empty");
    const int64_t* bs = batch_sizes->data_as<int64_t>();
    int64_t total = 0;
    for (int64_t t = 0; t < s.T; ++t) {
      if (bs[t] < 1 || (t > 0 && bs[t] > bs[t - 1])) {
        return ctx.fail(Error::InvalidArgument, "batch_sizes must be >= 1 and non-increasing (sorted sequences)");
      }
      if (!checked_add(total, bs[t], &total)) return ctx.fail(Error::InvalidArgument, "batch_sizes sum overflows");
    }
    if (total != input->sizes[0]) {
      return ctx.fail(Error::InvalidArgument, "packed data rows differ from the sum of batch_sizes");
    }
    s.B = bs[0];
    s.batch_sizes = bs;
  } else {
    unbatched = input->rank == 2;
    if (input->rank != 3 && !unbatched) return ctx.fail(Error::InvalidArgument, "input must be 2-D (unbatched) or 3-D");
    s.batch_first = batch_first && !unbatched;
    s.T = unbatched ? input->sizes[0] : (s.batch_first ? input->sizes[1] : input->sizes[0]);
    s.B = unbatched ? 1 : (s.batch_first ? input->sizes[0] : input->sizes[1]);
  }
  const int64_t I = input->sizes[input->rank - 1];
  const int64_t rows = packed ? input->sizes[0] : s.T * s.B;  // checked: input numel is bounded

  // Parameters.
  Params w;
  w.list = params;
  w.has_biases = has_biases;
  const int64_t base = has_biases ? 4 : 2;
  const int64_t count = static_cast<int64_t>(params.size());
  if (layers > count) {  // also keeps layers * dirs * per below from overflowing
    return ctx.fail(Error::InvalidArgument, "num_layers exceeds the number of parameter tensors");
  }
  if (count == layers * dirs * base) {
    w.per = base;
  } else if (cell.allows_projection && count == layers * dirs * (base + 1)) {
    w.per = base + 1;
    w.projection = true;
  } else {
    return ctx.fail(Error::InvalidArgument,
                    cell.allows_projection
                        ? "params must hold w_ih, w_hh[, b_ih, b_hh][, w_hr] per layer and direction"
                        : "params must hold w_ih, w_hh[, b_ih, b_hh] per layer and direction");
  }
  for (Tensor* t : params) {
    if (t == nullptr) return ctx.fail(Error::InvalidArgument, "params must not hold None");
    if (!require_float(a, t)) return a.error();
  }
  const Tensor* w_hh0 = params[1];
  if (w_hh0->rank != 2 || w_hh0->sizes[0] < 1 || w_hh0->sizes[0] % cell.gates != 0) {
    return ctx.fail(Error::InvalidArgument, "w_hh must be 2-D [gates*hidden_size, state_size]");
  }
  const int64_t H = w_hh0->sizes[0] / cell.gates;
  const int64_t GH = w_hh0->sizes[0];
  const int64_t R = w_hh0->sizes[1];
  if (!w.projection && R != H) return ctx.fail(Error::InvalidArgument, "w_hh must be [gates*hidden_size, hidden_size]");
  if (w.projection && (R < 1 || R >= H)) {
    return ctx.fail(Error::InvalidArgument, "proj_size must be >= 1 and smaller than hidden_size");
  }
  for (int64_t l = 0; l < layers; ++l) {
    const int64_t in_features = l == 0 ? I : dirs * R;
    for (int64_t d = 0; d < dirs; ++d) {
      Tensor* const* q = params.data() + (l * dirs + d) * w.per;
      const int64_t w_ih_sizes[2] = {GH, in_features}, w_hh_sizes[2] = {GH, R}, b_sizes[1] = {GH},
                    w_hr_sizes[2] = {R, H};
      if (!same_sizes(q[0], w_ih_sizes, 2)) {
        return ctx.fail(Error::InvalidArgument, "w_ih must be [gates*hidden_size, input features of the layer]");
      }
      if (!same_sizes(q[1], w_hh_sizes, 2)) return ctx.fail(Error::InvalidArgument, "every w_hh must have the same shape");
      if (has_biases && (!same_sizes(q[2], b_sizes, 1) || !same_sizes(q[3], b_sizes, 1))) {
        return ctx.fail(Error::InvalidArgument, "b_ih and b_hh must be [gates*hidden_size]");
      }
      if (w.projection && !same_sizes(q[w.per - 1], w_hr_sizes, 2)) {
        return ctx.fail(Error::InvalidArgument, "w_hr must be [proj_size, hidden_size]");
      }
    }
  }

  // Initial states: [layers*dirs, B, R] (unbatched: [layers*dirs, R]); c0 with H.
  {
    const int64_t h_sizes[3] = {layers * dirs, s.B, R}, h_sizes_unbatched[2] = {layers * dirs, R};
    const bool ok = unbatched ? same_sizes(h0, h_sizes_unbatched, 2) : same_sizes(h0, h_sizes, 3);
    if (!ok) return ctx.fail(Error::InvalidArgument, "h0 must be [num_layers*num_directions, batch, state_size]");
    if (cell.has_cell_state) {
      const int64_t c_sizes[3] = {layers * dirs, s.B, H}, c_sizes_unbatched[2] = {layers * dirs, H};
      const bool c_ok = unbatched ? same_sizes(c0, c_sizes_unbatched, 2) : same_sizes(c0, c_sizes, 3);
      if (!c_ok) return ctx.fail(Error::InvalidArgument, "c0 must be [num_layers*num_directions, batch, hidden_size]");
    }
  }
  int64_t out_sizes[3];
  out_sizes[0] = input->sizes[0];
  out_sizes[1] = input->rank == 3 ? input->sizes[1] : dirs * R;
  out_sizes[2] = dirs * R;
  if (!resize_out(a, output, out_sizes, input->rank)) return a.error();
  if (!resize_out(a, h_n, h0->sizes, h0->rank)) return a.error();
  if (cell.has_cell_state && !resize_out(a, c_n, c0->sizes, c0->rank)) return a.error();
  if (s.B == 0) return Error::Ok;  // empty batch: empty outputs

  // Scratch: gates, GRU hidden gates, h, c, unprojected h, intermediate layer outputs.
  const int64_t seq_buffers = layers - 1 < 2 ? layers - 1 : 2;
  int64_t gates_n = 0, hg_n = 0, h_n_floats = 0, c_n_floats = 0, hfull_n = 0, seq_n = 0, total = 0;
  bool sized = checked_mul(rows, GH, &gates_n) && checked_mul(s.B, cell.separate_hidden ? GH : 0, &hg_n) &&
               checked_mul(s.B, R, &h_n_floats) && checked_mul(s.B, cell.has_cell_state ? H : 0, &c_n_floats) &&
               checked_mul(s.B, w.projection ? H : 0, &hfull_n) && checked_mul(rows, dirs * R, &seq_n) &&
               checked_mul(seq_n, seq_buffers, &total) && checked_add(total, gates_n, &total) &&
               checked_add(total, hg_n, &total) && checked_add(total, h_n_floats, &total) &&
               checked_add(total, c_n_floats, &total) && checked_add(total, hfull_n, &total) &&
               total < (int64_t{1} << 60) / static_cast<int64_t>(sizeof(float));
  if (!sized) return ctx.fail(Error::InvalidArgument, "recurrent layer sizes overflow");
  float* scratch = total > 0 ? static_cast<float*>(ctx.allocate_temp(sizeof(float) * static_cast<size_t>(total))) : nullptr;
  int64_t* offsets = packed ? static_cast<int64_t*>(ctx.allocate_temp(sizeof(int64_t) * static_cast<size_t>(s.T))) : nullptr;
  if ((scratch == nullptr && total > 0) || (packed && offsets == nullptr)) {
    return ctx.fail(Error::OutOfMemory,
                    "needs rows*G*H + B*(G*H + R + 2*H) + min(layers-1, 2)*rows*dirs*R floats of temp memory");
  }
  if (packed) {
    offsets[0] = 0;
    for (int64_t t = 1; t < s.T; ++t) offsets[t] = offsets[t - 1] + s.batch_sizes[t - 1];
    s.offsets = offsets;
  }
  float* gates = scratch;
  float* hg = gates + gates_n;
  float* h = hg + hg_n;
  float* c = h + h_n_floats;
  float* hfull = c + c_n_floats;
  float* seq[2] = {hfull + hfull_n, hfull + hfull_n + seq_n};
  int64_t max_k = I > dirs * R ? I : dirs * R;
  if (H > max_k) max_k = H;
  GemmWorkspace ws = reserve_gemm_workspace(ctx, rows, GH, max_k);

  const float* layer_in = input->data_as<float>();
  int64_t layer_in_features = I;
  for (int64_t l = 0; l < layers; ++l) {
    float* layer_out = l == layers - 1 ? output->data_as<float>() : seq[l % 2];
    for (int64_t d = 0; d < dirs; ++d) {
      const int64_t ld = l * dirs + d;
      const float* b_ih = w.b_ih(ld);
      const float* b_hh = w.b_hh(ld);
      // gates[row] = b_ih (+ b_hh) + x[row] @ w_ih^T for every row.
      if (has_biases) {
        for (int64_t r = 0; r < rows; ++r) {
          float* g = gates + r * GH;
          for (int64_t j = 0; j < GH; ++j) g[j] = cell.separate_hidden ? b_ih[j] : b_ih[j] + b_hh[j];
        }
      }
      if (rows > 0) {
        GemmProblem proj;
        proj.m = rows;
        proj.n = GH;
        proj.k = layer_in_features;
        proj.a = GemmMatrix{layer_in, layer_in_features, 1};
        proj.b = GemmMatrix{w.w_ih(ld), 1, layer_in_features};
        proj.c = gates;
        proj.ldc = GH;
        proj.beta = has_biases ? 1.0f : 0.0f;
        gemm(&ctx, ws, proj);
      }
      // Initial state (every row; a packed reverse pass picks rows up as they become active).
      const int64_t state = ld * s.B;
      std::memcpy(h, h0->data_as<float>() + state * R, sizeof(float) * static_cast<size_t>(s.B * R));
      if (cell.has_cell_state) {
        std::memcpy(c, c0->data_as<float>() + state * H, sizeof(float) * static_cast<size_t>(s.B * H));
      }
      for (int64_t step = 0; step < s.T; ++step) {
        const int64_t t = d == 0 ? step : s.T - 1 - step;
        const int64_t nb = s.active(t);
        if (nb == 0) continue;
        // Hidden projection of the active rows: into hg (GRU: + b_hh) or added to the gates.
        GemmProblem rec;
        rec.m = nb;
        rec.n = GH;
        rec.k = R;
        rec.a = GemmMatrix{h, R, 1};
        rec.b = GemmMatrix{w.w_hh(ld), 1, R};
        if (cell.separate_hidden) {
          if (has_biases) {
            for (int64_t b = 0; b < nb; ++b) std::memcpy(hg + b * GH, b_hh, sizeof(float) * static_cast<size_t>(GH));
          }
          rec.c = hg;
          rec.ldc = GH;
          rec.beta = has_biases ? 1.0f : 0.0f;
        } else {
          rec.c = gates + s.row(t, 0) * GH;
          rec.ldc = s.batch_stride() * GH;
          rec.beta = 1.0f;
        }
        gemm(&ctx, ws, rec);
        for (int64_t b = 0; b < nb; ++b) {
          float* hb = h + b * R;
          cell.step(gates + s.row(t, b) * GH, cell.separate_hidden ? hg + b * GH : nullptr, hb,
                    cell.has_cell_state ? c + b * H : nullptr, w.projection ? hfull + b * H : hb, H);
        }
        if (w.projection) {  // h = h_full @ w_hr^T
          GemmProblem pr;
          pr.m = nb;
          pr.n = R;
          pr.k = H;
          pr.a = GemmMatrix{hfull, H, 1};
          pr.b = GemmMatrix{w.w_hr(ld), 1, H};
          pr.c = h;
          pr.ldc = R;
          gemm(&ctx, ws, pr);
        }
        for (int64_t b = 0; b < nb; ++b) {
          std::memcpy(layer_out + s.row(t, b) * dirs * R + d * R, h + b * R, sizeof(float) * static_cast<size_t>(R));
        }
      }
      std::memcpy(h_n->data_as<float>() + state * R, h, sizeof(float) * static_cast<size_t>(s.B * R));
      if (cell.has_cell_state) {
        std::memcpy(c_n->data_as<float>() + state * H, c, sizeof(float) * static_cast<size_t>(s.B * H));
      }
    }
    layer_in = layer_out;
    layer_in_features = dirs * R;
  }
  return Error::Ok;
}

}  // namespace portable
}  // namespace ember
