// The recurrent-layer driver shared by aten::lstm, aten::gru, aten::rnn_tanh and
// aten::rnn_relu (all `.input` and `.data` overloads), float32, inference.
//
// The driver owns everything the four ops have in common: argument parsing and validation,
// the sequence layout (time-major [T, B, X], batch_first [B, T, X], unbatched [T, X], or a
// packed sequence: `data` [N, X] with `batch_sizes` [T], the rows of step t being
// data[offset_t, offset_t + batch_sizes[t])), layers, directions (the reverse direction reads
// and writes the same rows backwards in time) and the GEMMs. A RecurrentCell supplies only
// the per-step math of one batch row.
//
// Parameters per layer and direction (layer 0 forward, layer 0 reverse, layer 1 forward, ...):
// w_ih [G*H, in], w_hh [G*H, R], then b_ih [G*H], b_hh [G*H] when has_biases, then (LSTM with
// proj_size only) w_hr [R, H]. G is the cell's gate count (LSTM 4, GRU 3, RNN 1), H the hidden
// size, R the recurrent state size (proj_size when projecting, else H). `in` is the input size
// for layer 0 and dirs*R above. Outputs: output [.., dirs*R] in the input's layout, h_n
// [layers*dirs, B, R] (c_n [layers*dirs, B, H] for LSTM).
//
// Per layer and direction: one GEMM computes the input projections of every row (plus b_ih,
// and b_hh when the cell does not need the hidden projection apart); each step then adds
// h_{t-1} W_hh^T (a small GEMM over the step's active rows) and applies the cell. Packed
// sequences: a forward step updates only the first batch_sizes[t] rows, so a finished sequence
// keeps its last state (its h_n); the reverse direction starts each sequence at its own last
// step from h0 (torch.export cannot trace the .data overloads today, their meta functions
// guard on batch_sizes' values, but a program may hold them; batch_sizes is validated at run
// time: int64, >= 1, non-increasing, summing to the data rows). Scratch (floats): N*G*H gates + B*G*H (GRU) + B*R + B*H (LSTM) + B*H
// (projection) + min(layers-1, 2)*N*dirs*R, plus T int64 row offsets for packed input.
#pragma once

#include <cstddef>

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace portable {

struct RecurrentCell {
  int gates;                 // G: gate blocks of H rows in w_ih / w_hh
  bool has_cell_state;       // LSTM: hx is [h0, c0] and there is a third output c_n
  bool separate_hidden;      // GRU: the hidden projection (+ b_hh) is passed to step() on its own
  bool allows_projection;    // LSTM: an optional w_hr per layer and direction (proj_size)
  // One time step of one batch row. gi: input projection + b_ih (+ b_hh and the hidden
  // projection unless separate_hidden) [G*H]; gh: hidden projection + b_hh [G*H] when
  // separate_hidden, else null; h_prev: the previous state [H] (no projection); c: the cell
  // state [H] (in/out) or null; h_new: the new hidden state [H], which may alias h_prev.
  void (*step)(const float* gi, const float* gh, const float* h_prev, float* c, float* h_new, int64_t H);
};

enum class RecurrentOverload {
  kInput,  // (input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
  kData,   // (data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)
};

// The whole kernel for one op overload: args in schema order, then the outputs
// (output, h_n[, c_n]).
Error run_recurrent_op(KernelContext& ctx, EValue** args, size_t num_args, const RecurrentCell& cell,
                       RecurrentOverload overload);

}  // namespace portable
}  // namespace ember
