// aten::lstm.input(input, hx[h0, c0], params[], has_biases, num_layers, dropout, train,
//     bidirectional, batch_first) -> (output, h_n, c_n) and
// aten::lstm.data(data, batch_sizes, hx[h0, c0], params[], has_biases, num_layers, dropout,
//     train, bidirectional) -> (output, h_n, c_n) (packed sequence), float32, inference.
//
// Gate order i, f, g, o: c' = f*c + i*g, h' = o*tanh(c'); with proj_size (a w_hr [P, H] after
// each layer's biases) the state is h' @ w_hr^T [P]. Layers, directions, layouts and GEMMs:
// the shared driver in recurrent.h.
#include <cmath>

#include "kernels/portable/nn/recurrent.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

void lstm_step(const float* g, const float* /*gh*/, const float* /*h_prev*/, float* c, float* h_new, int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    const float ig = sigmoid(g[j]);
    const float fg = sigmoid(g[H + j]);
    const float gg = std::tanh(g[2 * H + j]);
    const float og = sigmoid(g[3 * H + j]);
    c[j] = fg * c[j] + ig * gg;
    h_new[j] = og * std::tanh(c[j]);
  }
}

constexpr RecurrentCell kLstmCell = {4, /*has_cell_state=*/true, /*separate_hidden=*/false,
                                     /*allows_projection=*/true, lstm_step};

Error lstm_input(KernelContext& ctx, EValue** args, size_t n) {
  return run_recurrent_op(ctx, args, n, kLstmCell, RecurrentOverload::kInput);
}
Error lstm_data(KernelContext& ctx, EValue** args, size_t n) {
  return run_recurrent_op(ctx, args, n, kLstmCell, RecurrentOverload::kData);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::lstm.input", lstm_input);
EMBER_REGISTER_KERNEL("aten::lstm.data", lstm_data);

}  // namespace portable
}  // namespace ember
