// aten::rnn_tanh / aten::rnn_relu, overloads .input(input, hx, params[], has_biases,
// num_layers, dropout, train, bidirectional, batch_first) -> (output, h_n) and
// .data(data, batch_sizes, hx, params[], has_biases, num_layers, dropout, train,
// bidirectional) -> (output, h_n) (packed sequence), float32, inference.
//
// h' = tanh(x W_ih + b_ih + h W_hh + b_hh) (relu for rnn_relu). Layers, directions, layouts
// and GEMMs: the shared driver in recurrent.h.
#include <cmath>

#include "kernels/portable/nn/recurrent.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

void tanh_step(const float* g, const float* /*gh*/, const float* /*h_prev*/, float* /*c*/, float* h_new, int64_t H) {
  for (int64_t j = 0; j < H; ++j) h_new[j] = std::tanh(g[j]);
}

void relu_step(const float* g, const float* /*gh*/, const float* /*h_prev*/, float* /*c*/, float* h_new, int64_t H) {
  for (int64_t j = 0; j < H; ++j) h_new[j] = g[j] > 0.0f ? g[j] : 0.0f;
}

constexpr RecurrentCell kTanhCell = {1, /*has_cell_state=*/false, /*separate_hidden=*/false,
                                     /*allows_projection=*/false, tanh_step};
constexpr RecurrentCell kReluCell = {1, /*has_cell_state=*/false, /*separate_hidden=*/false,
                                     /*allows_projection=*/false, relu_step};

Error rnn_tanh_input(KernelContext& ctx, EValue** args, size_t n) {
  return run_recurrent_op(ctx, args, n, kTanhCell, RecurrentOverload::kInput);
}
Error rnn_tanh_data(KernelContext& ctx, EValue** args, size_t n) {
  return run_recurrent_op(ctx, args, n, kTanhCell, RecurrentOverload::kData);
}
Error rnn_relu_input(KernelContext& ctx, EValue** args, size_t n) {
  return run_recurrent_op(ctx, args, n, kReluCell, RecurrentOverload::kInput);
}
Error rnn_relu_data(KernelContext& ctx, EValue** args, size_t n) {
  return run_recurrent_op(ctx, args, n, kReluCell, RecurrentOverload::kData);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::rnn_tanh.input", rnn_tanh_input);
EMBER_REGISTER_KERNEL("aten::rnn_tanh.data", rnn_tanh_data);
EMBER_REGISTER_KERNEL("aten::rnn_relu.input", rnn_relu_input);
EMBER_REGISTER_KERNEL("aten::rnn_relu.data", rnn_relu_data);

}  // namespace portable
}  // namespace ember
