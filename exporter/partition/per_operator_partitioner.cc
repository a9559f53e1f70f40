#include "exporter/partition/per_operator_partitioner.h"

namespace ember {
namespace exporter {

std::vector<std::vector<int>> PerOperatorPartitioner::claim(const Graph& g) {
  compiled_.clear();
  skipped_ = 0;
  std::vector<std::vector<int>> singles;
  for (const std::vector<int>& set : backend_->claim(g)) {
    for (int node : set) {
      // Compiled now, so a node the backend cannot take alone stays on the portable kernels
      // instead of failing the export later.
      absl::StatusOr<Partition> p = make_partition(g, {node});
      if (!p.ok()) {
        ++skipped_;
        continue;
      }
      absl::StatusOr<DelegateBlob> blob = backend_->preprocess(g, *p);
      if (!blob.ok()) {
        ++skipped_;
        continue;
      }
      compiled_.emplace(node, std::move(*blob));
      singles.push_back({node});
    }
  }
  return singles;
}

absl::StatusOr<DelegateBlob> PerOperatorPartitioner::preprocess(const Graph& g, const Partition& p) {
  if (p.nodes.size() == 1) {
    auto it = compiled_.find(p.nodes[0]);
    if (it != compiled_.end()) {
      DelegateBlob blob = std::move(it->second);
      compiled_.erase(it);
      return blob;
    }
  }
  return backend_->preprocess(g, p);
}

}  // namespace exporter
}  // namespace ember
