// Per-operator profiling of the XNNPACK delegate through xnn_get_runtime_profiling_info.
#include <xnnpack.h>

#include "delegates/xnnpack/runtime/xnnpack_delegate.h"

namespace ember {
namespace xnnpack {
namespace {

// Longest XNNPACK operator name we budget for when a rebuilt runtime (new input shapes)
// picks other operators than the first one, e.g. "Convolution (NHWC, F32) IGEMM".
constexpr size_t kNameBudget = 96;

// Points name_of[] at the operator names of `runtime`; false when they do not fit.
bool load_names(XnnDelegate* d, xnn_runtime_t runtime) {
  OperatorProfile& p = d->profile;
  if (p.named_runtime == runtime) return p.num_named != 0 || p.capacity == 0;
  p.named_runtime = runtime;
  p.num_named = 0;
  size_t count = 0, size_ret = 0;
  if (xnn_get_runtime_profiling_info(runtime, xnn_profile_info_num_operators, sizeof(count), &count, &size_ret) !=
          xnn_status_success ||
      count > p.capacity) {
    return false;
  }
  if (xnn_get_runtime_profiling_info(runtime, xnn_profile_info_operator_name, p.names_bytes, p.names, &size_ret) !=
      xnn_status_success) {
    return false;
  }
  size_t offset = 0;
  for (size_t i = 0; i < count; ++i) {
    if (offset >= p.names_bytes) return false;
    p.name_of[i] = p.names + offset;
    while (offset < p.names_bytes && p.names[offset] != '\0') ++offset;
    ++offset;  // the separator
  }
  p.num_named = count;
  // One operator per blob node (none fused away, none added): operator i is node i.
  const bool one_to_one = count == d->num_nodes;
  for (size_t i = 0; i < count; ++i) {
    const fb::Node* node = one_to_one ? d->graph->nodes()->Get(static_cast<uint32_t>(i)) : nullptr;
    p.debug_of[i] = node != nullptr && node->name() != nullptr ? node->name()->c_str() : nullptr;
  }
  return true;
}

}  // namespace

Error init_profiling(XnnDelegate* d, xnn_runtime_t runtime, MemoryAllocator* alloc, Diagnostic* diag) {
  OperatorProfile& p = d->profile;
  size_t count = 0, size_ret = 0;
  xnn_status s =
      xnn_get_runtime_profiling_info(runtime, xnn_profile_info_num_operators, sizeof(count), &count, &size_ret);
  if (s != xnn_status_success) {
    return fail(diag, status_error(s), "xnnpack: xnn_get_runtime_profiling_info(num_operators) failed: %s",
                status_name(s));
  }
  // The names' size: XNNPACK answers out_of_memory with the size it needs.
  size_t names_needed = 0;
  char probe = 0;
  s = xnn_get_runtime_profiling_info(runtime, xnn_profile_info_operator_name, 0, &probe, &names_needed);
  if (s != xnn_status_success && s != xnn_status_out_of_memory) {
    return fail(diag, status_error(s), "xnnpack: xnn_get_runtime_profiling_info(operator_name) failed: %s",
                status_name(s));
  }
  // Room for a rebuilt runtime with a few more operators or longer names.
  p.capacity = count + (count / 4) + 4;
  p.names_bytes = names_needed + p.capacity * kNameBudget;
  p.names = alloc->allocate_array<char>(p.names_bytes);
  p.name_of = alloc->allocate_array<const char*>(p.capacity);
  p.timings_us = alloc->allocate_array<uint64_t>(p.capacity);
  p.debug_of = alloc->allocate_array<const char*>(p.capacity);
  if (p.names == nullptr || p.name_of == nullptr || p.timings_us == nullptr || p.debug_of == nullptr) {
    return method_allocator_too_small(diag, *alloc, "the xnnpack profiling tables");
  }
  p.named_runtime = nullptr;
  d->stats.profiling = true;
  d->stats.profiled_operators = count;
  return Error::Ok;
}

void report_operators(XnnDelegate* d, xnn_runtime_t runtime, const BackendExecuteContext& ctx,
                      uint64_t invoke_start_ns, uint64_t invoke_end_ns) {
  OperatorProfile& p = d->profile;
  size_t size_ret = 0;
  if (!load_names(d, runtime) ||
      xnn_get_runtime_profiling_info(runtime, xnn_profile_info_operator_timing, p.num_named * sizeof(uint64_t),
                                     p.timings_us, &size_ret) != xnn_status_success) {
    d->stats.unreported_invokes++;
    return;
  }
  d->stats.profiled_operators = p.num_named;
  uint64_t t = invoke_start_ns;
  for (size_t i = 0; i < p.num_named; ++i) {
    TraceEvent e;
    e.kind = TraceEventKind::DelegateOp;
    e.estimated_start = true;
    e.run = ctx.run;
    e.instruction = ctx.instruction;
    e.delegate_op = static_cast<uint32_t>(i);
    e.delegate_index = ctx.delegate_index;
    e.name = p.name_of[i];
    e.debug_name = p.debug_of[i] != nullptr ? p.debug_of[i] : ctx.debug_name;
    e.start_ns = t < invoke_end_ns ? t : invoke_end_ns;
    t += p.timings_us[i] * 1000;
    e.end_ns = t < invoke_end_ns ? t : invoke_end_ns;
    ctx.event_tracer->record(e);
    d->stats.operator_events++;
  }
}

}  // namespace xnnpack
}  // namespace ember
