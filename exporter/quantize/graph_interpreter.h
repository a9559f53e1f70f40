// Runs an exporter Graph on concrete inputs with the linked kernels, node by node, at export
// time: what Ember's quantizer calibrates with (it sees every intermediate value by id, so
// statistics attach to the very graph it then rewrites). Static shapes only; host memory is
// allocated freely (an export-time tool, not the runtime).
#pragma once

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "exporter/ir/graph.h"
#include "exporter/util/npy.h"
#include "runtime/core/tensor.h"

namespace ember {
namespace exporter {

class GraphInterpreter {
 public:
  // Called with each tensor value a node writes (value id, its contents), in execution order.
  using Observer = std::function<void(int value_id, const Tensor& value)>;

  // `g` must outlive the interpreter and stay unchanged while it runs.
  explicit GraphInterpreter(Graph& g) : g_(g) {}

  // Runs the graph on `inputs` (one per g.inputs, dtype and shape as the graph's). Errors name
  // the node that failed; a graph with dynamic shapes or symbolic ints is refused.
  absl::Status run(const std::vector<NpyArray>& inputs, const Observer& observe);

  // The contents of a tensor value after run() (empty when it was never written).
  const std::vector<uint8_t>& bytes(int value_id) const { return storage_[value_id]; }

 private:
  Graph& g_;
  std::vector<std::vector<uint8_t>> storage_;  // per value id
};

// Relative L2 distance of two float32 tensors given as bytes (GraphInterpreter::bytes):
// ||got - want|| / ||want|| over the common length (the plain norm when want is zero).
double relative_l2_of_floats(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want);

}  // namespace exporter
}  // namespace ember
