// PerOperatorPartitioner: wraps a backend's partitioner so that every node it would claim
// becomes a delegate call of its own. Used by `ember debug`: one operator per call makes
// each delegated operator's output a program value the runtime can show, so it can be
// compared with the portable kernels' output for the same .pt2 node. The program is slower
// (no fusion across operators, one call per op) and is meant for debugging only.
//
// A node the backend claims but cannot compile alone (its preprocess fails for the
// one-node partition) is left to the portable kernels; skipped() counts them.
// Not thread-safe; one instance per export.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exporter/partition/partitioner.h"

namespace ember {
namespace exporter {

class PerOperatorPartitioner final : public Partitioner {
 public:
  explicit PerOperatorPartitioner(std::shared_ptr<Partitioner> backend) : backend_(std::move(backend)) {}
  std::string backend_id() const override { return backend_->backend_id(); }
  std::vector<std::vector<int>> claim(const Graph& g) override;
  bool prefers_clustering() const override { return false; }  // order is irrelevant per op
  absl::StatusOr<DelegateBlob> preprocess(const Graph& g, const Partition& p) override;

  // Nodes the backend claimed but could not compile on their own.
  int skipped() const { return skipped_; }

 private:
  std::shared_ptr<Partitioner> backend_;
  std::map<int, DelegateBlob> compiled_;  // node -> its blob, made while claiming
  int skipped_ = 0;
};

}  // namespace exporter
}  // namespace ember
