// aten::gru.input(input, hx, params[], has_biases, num_layers, dropout, train, bidirectional,
//     batch_first) -> (output, h_n) and
// aten::gru.data(data, batch_sizes, hx, params[], has_biases, num_layers, dropout, train,
//     bidirectional) -> (output, h_n) (packed sequence), float32, inference.
//
// Gate order r, z, n (PyTorch's): r = sigmoid(x W_ir + b_ir + h W_hr + b_hr),
// z = sigmoid(x W_iz + b_iz + h W_hz + b_hz), n = tanh(x W_in + b_in + r * (h W_hn + b_hn)),
// h' = (1 - z) * n + z * h. The hidden projection stays apart from the input one (r scales
// only its n block). Layers, directions, layouts and GEMMs: the shared driver in recurrent.h.
#include <cmath>

#include "kernels/portable/nn/recurrent.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

void gru_step(const float* gi, const float* gh, const float* h_prev, float* /*c*/, float* h_new, int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    const float r = sigmoid(gi[j] + gh[j]);
    const float z = sigmoid(gi[H + j] + gh[H + j]);
    const float nn = std::tanh(gi[2 * H + j] + r * gh[2 * H + j]);
    const float prev = h_prev[j];  // h_new may alias h_prev
    h_new[j] = (1.0f - z) * nn + z * prev;
  }
}

constexpr RecurrentCell kGruCell = {3, /*has_cell_state=*/false, /*separate_hidden=*/true,
                                    /*allows_projection=*/false, gru_step};

Error gru_input(KernelContext& ctx, EValue** args, size_t n) {
  return run_recurrent_op(ctx, args, n, kGruCell, RecurrentOverload::kInput);
}
Error gru_data(KernelContext& ctx, EValue** args, size_t n) {
  return run_recurrent_op(ctx, args, n, kGruCell, RecurrentOverload::kData);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::gru.input", gru_input);
EMBER_REGISTER_KERNEL("aten::gru.data", gru_data);

}  // namespace portable
}  // namespace ember
