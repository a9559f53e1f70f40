#include "exporter/quantize/graph_interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "exporter/passes/kernel_call.h"
#include "runtime/kernel/kernel_registry.h"
#include "runtime/memory/memory_allocator.h"
#include "runtime/platform/diagnostic.h"

namespace ember {
namespace exporter {

absl::Status GraphInterpreter::run(const std::vector<NpyArray>& inputs, const Observer& observe) {
  storage_.assign(g_.values.size(), {});
  if (inputs.size() != g_.inputs.size()) {
    return absl::InvalidArgumentError("the method takes " + std::to_string(g_.inputs.size()) + " inputs, " +
                                      std::to_string(inputs.size()) + " given");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = g_.values[g_.inputs[i]];
    if (v.type != ValueType::Tensor) return absl::InvalidArgumentError("input " + std::to_string(i) + " is not a tensor");
    if (v.is_dynamic()) {
      return absl::InvalidArgumentError("calibration needs static shapes; input " + std::to_string(i) + " is dynamic");
    }
    if (inputs[i].dtype != v.dtype || inputs[i].shape != v.sizes) {
      return absl::InvalidArgumentError("input " + std::to_string(i) + " ('" + v.name + "') has the wrong dtype or shape: the method takes " +
                                        dtype_name(v.dtype) + " of " + std::to_string(v.numel()) + " elements in its graph's shape");
    }
    storage_[g_.inputs[i]] = inputs[i].data;
  }
  auto bind = [this](int id, Tensor* t) {  // activations, inputs, state (constants bind themselves)
    const Value& v = g_.values[id];
    std::vector<uint8_t>& s = storage_[id];
    if (s.size() < v.nbytes()) return false;  // not computed (or a state tensor never written)
    t->data = s.data();
    t->capacity_bytes = s.size();
    return true;
  };
  // Mutable state starts zeroed, as the runtime's does before its first write.
  for (const Value& v : g_.values) {
    if (v.role == ValueRole::MutableState && v.type == ValueType::Tensor) {
      if (v.constant >= 0) storage_[v.id] = g_.constants[v.constant].data;
      else storage_[v.id].assign(v.nbytes(), 0);
    }
  }
  // 64 MB of kernel scratch, left uninitialised (as the runtime's temp memory is): only the
  // pages kernels touch cost anything, where zero-filling it cost every export 64 MB of page
  // faults (~10 ms, most of a small model's export).
  constexpr size_t kTempDoubles = size_t{8} << 20;
  std::unique_ptr<double[]> temp(new double[kTempDoubles]);
  for (const Node& n : g_.nodes) {
    if (n.erased) continue;
    const std::string where = "calibration: node '" + n.name + "' (" + n.kernel_name() + ")";
    KernelFn fn = find_kernel(n.kernel_name().c_str());
    if (fn == nullptr) return absl::FailedPreconditionError(where + ": no kernel in this build");
    CallFrame frame(g_, bind);
    for (const Arg& a : n.args) {
      if (!frame.add(a)) return absl::FailedPreconditionError(where + ": an argument is symbolic or not computed (calibration needs static shapes)");
    }
    for (const Arg& o : n.outputs) {
      for (int r : o.value_refs()) {
        if (!frame.add_output(r)) return absl::FailedPreconditionError(where + ": an output has a dynamic shape");
      }
    }
    MemoryAllocator temp_allocator(temp.get(), kTempDoubles * sizeof(double));
    Diagnostic diag;
    KernelContext ctx;
    ctx.diag = &diag;
    ctx.temp = &temp_allocator;
    ctx.op_name = n.op.c_str();
    std::vector<EValue*> args = frame.pointers();
    if (fn(ctx, args.data(), args.size()) != Error::Ok) {
      return absl::InvalidArgumentError(where + ": the kernel failed: " + std::string(diag.text()));
    }
    for (const auto& [id, t] : frame.outputs()) {
      const size_t nbytes = t->nbytes();
      if (nbytes != g_.values[id].nbytes()) return absl::InternalError(where + ": an output changed size");
      storage_[id].assign(static_cast<const uint8_t*>(t->data), static_cast<const uint8_t*>(t->data) + nbytes);
      observe(id, *t);
    }
  }
  return absl::OkStatus();
}

double relative_l2_of_floats(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  const size_t n = std::min(got.size(), want.size()) / sizeof(float);
  double err = 0, norm = 0;
  for (size_t i = 0; i < n; ++i) {
    float a, b;
    std::memcpy(&a, got.data() + i * 4, 4);
    std::memcpy(&b, want.data() + i * 4, 4);
    err += (static_cast<double>(a) - b) * (static_cast<double>(a) - b);
    norm += static_cast<double>(b) * b;
  }
  return norm > 0 ? std::sqrt(err / norm) : std::sqrt(err);
}

}  // namespace exporter
}  // namespace ember
