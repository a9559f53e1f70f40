// Delegate partitioning: a Partitioner (one per backend, e.g. XNNPACK, Vulkan) claims sets
// of nodes; each claimed set becomes one delegate call whose blob comes from the backend's
// preprocess. The exporter emits a DelegateCall instruction (inputs then outputs) in place
// of the claimed nodes.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exporter/ir/graph.h"

namespace ember {
namespace exporter {

// A claimed subgraph, in graph order. Its inputs are tensors read by its nodes but produced
// outside it (including constants; symbolic sizes are not inputs); its outputs are values produced inside it and read
// outside it (or graph outputs).
struct Partition {
  std::vector<int> nodes;
  std::vector<int> inputs;
  std::vector<int> outputs;
};

// What preprocess produces. Weights stay in the program's data segments (used in place by
// a memory-mapped program) instead of being copied into the blob: the blob names them by
// slot k = position in `constants` (Graph::constants indices); the emitter stores the
// program segment index of each slot in the compile spec kConstantSegmentsSpec (one
// little-endian uint32 per slot), which the backend reads with
// ember::delegate_constant() (runtime/backend/backend.h). Constant values listed here are
// not passed as delegate-call arguments.
//
// A backend that needs a weight in another layout (e.g. NCHW->NHWC conv filters) adds a NEW
// constant with the transformed bytes (ConstantSlots::add) instead: apply_partitioner
// appends it to Graph::constants and rewrites its slot to the new index. The original
// constant is listed in `replaced` so it is not passed as a call argument either; when no
// other node reads it, it is never emitted (the emitter writes only referenced constants).
struct DelegateBlob {
  std::vector<uint8_t> data;
  std::vector<std::pair<std::string, std::vector<uint8_t>>> compile_specs;
  // Per slot: a Graph::constants index, or -1 - j for new_constants[j] (until applied).
  std::vector<int> constants;
  std::vector<Constant> new_constants;
  std::vector<int> replaced;  // Graph::constants indices the blob covers through new constants
  // Slots the runtime reads at every init (e.g. quantization scales it validates), unlike
  // weights it may never read (packed weights cached elsewhere): the emitter lays these out
  // beside the blobs, away from the weights.
  std::vector<uint32_t> read_at_init;
};

// Compile-spec key of the human-readable summary a partitioner stores in each delegate
// (original op names and counts; shown by `ember inspect`).
constexpr const char* kSummarySpec = "ember.summary";

// "aten::conv2d.default x 3, aten::relu.default x 2" for the nodes of `p` (sorted by name).
std::string summarize_partition(const Graph& g, const Partition& p);

// Helper for preprocess: assigns constant slots.
//   ConstantSlots slots(g);
//   uint32_t w = slots.existing(value.constant);              // used as is, in place
//   uint32_t f = slots.add(value.constant, "w.ohwi", sizes, bytes);  // transformed copy
//   ... blob references slots w, f ...
//   slots.finish(&blob);
class ConstantSlots {
 public:
  explicit ConstantSlots(const Graph& g) : g_(g) {}
  // Slot of graph constant `index` (deduplicated).
  uint32_t existing(int index);
  // Slot of a new constant replacing graph constant `original` (-1: none) for this blob.
  uint32_t add(int original, const std::string& name, ScalarType dtype, std::vector<int64_t> sizes,
               std::vector<uint8_t> data);
  size_t size() const { return slots_.size(); }
  // Marks `slot` as read at every init (DelegateBlob::read_at_init).
  void read_at_init(uint32_t slot) { read_at_init_.push_back(slot); }
  void finish(DelegateBlob* blob) const;

 private:
  const Graph& g_;
  std::vector<int> slots_;
  std::vector<Constant> added_;
  std::vector<int> replaced_;
  std::vector<uint32_t> read_at_init_;
};

class Partitioner {
 public:
  virtual ~Partitioner() = default;
  virtual std::string backend_id() const = 0;
  // Sets of node indices this backend takes. Sets must be disjoint.
  virtual std::vector<std::vector<int>> claim(const Graph& g) = 0;
  // Backends that claim runs of consecutive nodes say here which nodes they could take;
  // apply_partitioner then first moves every node they cannot take as early as its inputs
  // allow (cluster_supported_nodes), so the supported ones form longer runs and the
  // program makes fewer delegate calls. Default: no opinion, the order is kept.
  virtual bool prefers_clustering() const { return false; }
  virtual bool supports(const Graph& g, int node) const { return false; }
  // Backends that run only integer graphs (NPUs) ask `--quantize int8` to give every float
  // activation between layers a grid (QuantizeOptions::all_activations), so that residual adds,
  // pools and concatenations run on them too.
  virtual bool wants_integer_activations() const { return false; }
  // Serialises one partition for the runtime backend. A FailedPrecondition error says the
  // backend cannot lower anything at the moment (e.g. the vendor library it compiles with is
  // missing): apply_partitioner then leaves the whole set to the portable kernels with one
  // report instead of retrying halves of it.
  virtual absl::StatusOr<DelegateBlob> preprocess(const Graph& g, const Partition& p) = 0;
};

// Records of the delegates created while partitioning (kept in the graph's side table).
struct DelegateRecord {
  std::string backend_id;
  DelegateBlob blob;
};

// How apply_partitioner treats a claimed node that the backend's preprocess then fails on.
struct PartitionOptions {
  // false: the node runs on the portable kernels, the rest of its set is lowered around it,
  // and PartitionReport::fallbacks says which node and why. true: the export fails with the
  // backend's error (`ember export --strict-delegation`).
  bool strict = false;
};

// What apply_partitioner changed in what the backend claimed.
struct PartitionReport {
  int regrouping = 1;  // schedulable_groups' step: 1 as claimed, 2 split convex, 3 acyclic levels
  std::vector<std::string> notes;      // regrouping, for --verbose output
  std::vector<std::string> fallbacks;  // one per claimed node left on the portable kernels
};

// Runs `partitioner` over `g`: the claimed sets are re-formed into schedulable delegate calls
// (exporter/partition/schedulable_groups.h: convex, acyclic together; unchanged when they
// already are), each is replaced by one node with op == "delegate::<index>" (index into
// `delegates`), args = Tensors(inputs) and outputs = the partition outputs, and the nodes are
// put back in a dependency order (see Graph::node_dependencies). A set whose preprocess fails
// is lowered in halves, down to the nodes that fail alone, which stay on the portable kernels
// (unless options.strict). Returns the number of partitions created.
absl::StatusOr<int> apply_partitioner(Graph& g, Partitioner& partitioner, std::vector<DelegateRecord>* delegates,
                                      const PartitionOptions& options = PartitionOptions(),
                                      PartitionReport* report = nullptr);

// Reorders g's live nodes (keeping Graph::node_dependencies) so that nodes for which
// `supported` is false run as early as their inputs allow: among ready nodes, unsupported
// ones go first, then the earliest in the current order. Returns whether anything moved.
bool cluster_supported_nodes(Graph& g, const std::function<bool(int)>& supported);

// Builds the Partition (inputs/outputs) of a node set. Fails when the set contains erased
// or invalid nodes. Convexity (no path leaves the set and re-enters it) is apply_partitioner's
// business (it re-forms sets that are not), which also moves nodes that read a partition
// output after the delegate call that now produces it.
absl::StatusOr<Partition> make_partition(const Graph& g, std::vector<int> nodes);

// Name prefix of delegate nodes.
constexpr const char* kDelegateOpPrefix = "delegate::";

}  // namespace exporter
}  // namespace ember
