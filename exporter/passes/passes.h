// Graph passes. Each returns the number of changes it made (or an error).
#pragma once

#include "absl/status/statusor.h"
#include "exporter/ir/graph.h"

namespace ember {
namespace exporter {

// Canonicalisation for inference:
//  - identity ops removed (dropout variants, alias, detach, contiguous, lift_fresh_copy,
//    clone/to/_to_copy that change nothing, positive, resolve_conj/neg);
//  - no-op assertions removed (_assert_scalar, _assert_tensor_metadata, _assert_async);
//  - in-place ops (`index_copy_`, `add_`, `relu_`, ...) become their functional op writing
//    into `self` (out = self); a mutated constant buffer becomes MutableState.
absl::StatusOr<int> canonicalize(Graph& g);

// Removes nodes whose outputs are unused and that write nothing in place.
int eliminate_dead_code(Graph& g);

// Folds eval-mode batch norm following a (non-transposed) convolution whose weight, bias and
// the BN parameters are constants: the BN disappears, the conv gets new constant weight/bias.
absl::StatusOr<int> fold_conv_batch_norm(Graph& g);


}  // namespace exporter
}  // namespace ember

namespace ember {
namespace exporter {

// Makes outputs and state writes explicit, right before planning:
//  - a graph output that is not an activation produced by a node (an input, a constant, a
//    state tensor) or that repeats an earlier output gets a copy (aten::clone.default);
//  - each write-back (buffer / user-input mutation) whose source is not already the target
//    becomes `aten::copy.default(self=target, src=source, non_blocking=False)` writing into
//    the target.
int finalize_outputs(Graph& g);

}  // namespace exporter
}  // namespace ember
