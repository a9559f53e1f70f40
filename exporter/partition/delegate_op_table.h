// One table per delegate: what each aten op needs to run on the delegate, declared once.
//
// A delegate's exporter keeps a DelegateOpTable<Context> whose entries live in family files
// (convolution and pooling, elementwise, normalisation, attention, shape ops). An entry names
// the aten kernels it covers and two functions:
//   check(ctx, node) -> "" when the delegate takes the node, else why not (shown by
//                       `ember export --verbose` and kept in the partition report);
//   lower(ctx, node) -> "" after adding the node to the blob being built, else why it could
//                       not (apply_partitioner then leaves the node to the portable kernels).
// Context is the delegate's own: the graph, the blob builder, value -> blob-tensor maps.
// `check` must be cheap and side-effect free; a delegate that can only tell by trying may
// leave it null and let the table fall back to lowering into a throwaway context.
//
// A delegate may also declare per-op Traits (its own struct: layout needs, fusions) stored in
// the entry beside check and lower; without it, entries carry none.
//
// Adding an op is one entry (plus its tests); the partitioner's claim() and preprocess() are
// generic loops over the table. Lifetime: tables are built once (function-local static in
// the delegate) and read-only afterwards, so lookups are thread-safe.
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "exporter/ir/graph.h"

namespace ember {
namespace exporter {

struct NoOpTraits {};

template <typename Context, typename Traits = NoOpTraits>
struct DelegateOpEntry {
  using Check = std::string (*)(const Context& ctx, const Node& node);
  using Lower = std::string (*)(Context& ctx, const Node& node);
  Check check = nullptr;  // null: supported when lower() succeeds (the caller tries it)
  Lower lower = nullptr;
  Traits traits{};
};

template <typename Context, typename Traits = NoOpTraits>
class DelegateOpTable {
 public:
  using Entry = DelegateOpEntry<Context, Traits>;

  // Registers `entry` for every kernel name in `ops` ("aten::add.Tensor"). A name registered
  // twice is a programming error caught by the delegate's table test (duplicates()).
  void add(std::initializer_list<const char*> ops, Entry entry) {
    for (const char* op : ops) {
      if (!entries_.emplace(op, entry).second) duplicates_.push_back(op);
    }
  }
  void add(std::initializer_list<const char*> ops, typename Entry::Check check, typename Entry::Lower lower,
           Traits traits = Traits()) {
    Entry e;
    e.check = check;
    e.lower = lower;
    e.traits = traits;
    add(ops, e);
  }

  // The entry for kernel `op`, or null when the delegate has none.
  const Entry* find(const std::string& op) const {
    auto it = entries_.find(op);
    return it == entries_.end() ? nullptr : &it->second;
  }

  // "" when the entry for `node` accepts it; else the reason. Entries without a check are
  // reported as supported here (their lower() decides).
  std::string check(const Context& ctx, const Node& node) const {
    const Entry* e = find(node.kernel_name());
    if (e == nullptr) return "no " + name_ + " lowering for " + node.kernel_name();
    return e->check ? e->check(ctx, node) : std::string();
  }

  // Lowers `node` into ctx; "" on success, else why not.
  std::string lower(Context& ctx, const Node& node) const {
    const Entry* e = find(node.kernel_name());
    if (e == nullptr) return "no " + name_ + " lowering for " + node.kernel_name();
    return e->lower(ctx, node);
  }

  // Kernel names covered, sorted (for docs, --help and the table's tests).
  std::vector<std::string> ops() const {
    std::vector<std::string> out;
    for (const auto& kv : entries_) out.push_back(kv.first);
    return out;
  }
  const std::vector<std::string>& duplicates() const { return duplicates_; }

  explicit DelegateOpTable(std::string delegate_name) : name_(std::move(delegate_name)) {}

 private:
  std::string name_;
  std::map<std::string, Entry> entries_;
  std::vector<std::string> duplicates_;
};

}  // namespace exporter
}  // namespace ember
