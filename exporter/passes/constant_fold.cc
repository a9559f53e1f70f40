// Constant folding: a node whose every input is a constant is run once at export time with
// the linked portable kernel (the same code the runtime would run), and its outputs become
// constants. Typical wins: weight transposes/reshapes in core-ATen graphs (permute + addmm),
// dtype conversions of buffers, precomputed masks and tables.
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "exporter/passes/kernel_call.h"
#include "exporter/passes/passes.h"
#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_registry.h"
#include "runtime/memory/memory_allocator.h"

namespace ember {
namespace exporter {
namespace {

// Ops whose results must not be baked in: random samples, uninitialised memory.
bool is_nondeterministic(const std::string& op) {
  static const char* kWords[] = {"rand", "normal", "bernoulli", "uniform", "dropout", "multinomial",
                                 "exponential", "cauchy", "geometric", "log_normal", "poisson", "empty"};
  for (const char* w : kWords) {
    if (op.find(w) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<int> fold_constants(Graph& g) {
  // 64 MB of kernel scratch, left uninitialised (as the runtime's temp memory is): only the
  // pages kernels touch cost anything, where zero-filling it cost every export 64 MB of page
  // faults (~10 ms, most of a small model's export).
  constexpr size_t kTempDoubles = size_t{8} << 20;
  std::unique_ptr<double[]> temp(new double[kTempDoubles]);
  int folded = 0;
  // Values written by more than one node (a producer and later in-place writes, e.g. T5's
  // `buckets = zeros(); buckets += ...`) stay activations: folding the producer would turn
  // the buffer the later writes target into a read-only constant.
  std::map<int, int> writers;
  for (const Node& n : g.nodes) {
    if (n.erased) continue;
    for (int r : n.output_values()) ++writers[r];
  }
  for (Node& n : g.nodes) {
    if (n.erased || n.op.rfind("aten::", 0) != 0 || is_nondeterministic(n.op)) continue;
    KernelFn fn = find_kernel(n.kernel_name().c_str());
    if (fn == nullptr) continue;
    // Outputs must be fresh values (not in-place writes into an input).
    std::set<int> read;
    for (const Arg& a : n.args) for (int r : a.value_refs()) read.insert(r);
    bool ok = !n.outputs.empty();
    CallFrame frame(g);
    for (const Arg& a : n.args) ok = ok && frame.add(a);
    size_t output_bytes = 0;
    for (const Arg& o : n.outputs) {
      if (!ok) break;
      if (o.kind != Arg::Kind::Tensor && o.kind != Arg::Kind::Tensors) ok = false;
      for (int r : o.value_refs()) {
        ok = ok && !read.count(r) && writers[r] == 1 && g.values[r].role == ValueRole::Activation &&
             frame.add_output(r);
        if (ok) output_bytes += g.values[r].nbytes();
      }
    }
    // Do not let folding grow the program much (e.g. an expand of a small buffer).
    if (!ok || output_bytes > 2 * frame.input_bytes() + (64 << 10)) continue;
    MemoryAllocator temp_allocator(temp.get(), kTempDoubles * sizeof(double));
    KernelContext ctx;
    ctx.temp = &temp_allocator;
    ctx.op_name = n.op.c_str();
    std::vector<EValue*> args = frame.pointers();
    if (fn(ctx, args.data(), args.size()) != Error::Ok) continue;  // leave it to run time
    for (const auto& [id, t] : frame.outputs()) {
      Value& v = g.values[id];
      if (static_cast<size_t>(t->numel()) * element_size(t->dtype) != v.nbytes()) return absl::InternalError("folded output changed size");
      Constant c;
      c.name = v.name + "_folded";
      c.dtype = v.dtype;
      c.sizes = v.sizes;
      c.data.assign(static_cast<const uint8_t*>(t->data), static_cast<const uint8_t*>(t->data) + v.nbytes());
      g.constants.push_back(std::move(c));
      v.role = ValueRole::Constant;
      v.constant = static_cast<int>(g.constants.size()) - 1;
      v.producer = -1;
    }
    n.erased = true;
    ++folded;
  }
  if (folded > 0) g.compact();
  return folded;
}

}  // namespace exporter
}  // namespace ember
