#include "delegates/xnnpack/runtime/xnnpack_backend.h"

#include <pthreadpool.h>
#include <xnnpack.h>

#include <cstring>
#include <new>

#include "delegates/xnnpack/runtime/layout.h"
#include "delegates/xnnpack/runtime/method_workspace.h"
#include "delegates/xnnpack/runtime/weights_cache.h"
#include "delegates/xnnpack/runtime/xnnpack_delegate.h"
#include "delegates/xnnpack/xnnpack_compile_specs.h"
#include "runtime/platform/platform.h"

namespace ember {
namespace xnnpack {
namespace {

bool xnnpack_initialized() {
  static const bool ok = xnn_initialize(nullptr) == xnn_status_success;
  return ok;
}

// Ember sizes of a port for XNNPACK dims (NHWC -> NCHW when the port converts layout).
void ember_sizes(const ExternalPort& port, const Dims& dims, int64_t* sizes) {
  for (uint32_t i = 0; i < dims.rank; ++i) sizes[i] = static_cast<int64_t>(dims.d[i]);
  if (port.nchw) {
    sizes[1] = static_cast<int64_t>(dims.d[3]);
    sizes[2] = static_cast<int64_t>(dims.d[1]);
    sizes[3] = static_cast<int64_t>(dims.d[2]);
  }
}

// XNNPACK dims of an Ember tensor arriving at `port`.
void xnn_dims(const ExternalPort& port, const Tensor& t, Dims* dims) {
  dims->rank = t.rank;
  for (uint32_t i = 0; i < t.rank; ++i) dims->d[i] = static_cast<size_t>(t.sizes[i]);
  if (port.nchw) {
    dims->d[1] = static_cast<size_t>(t.sizes[2]);
    dims->d[2] = static_cast<size_t>(t.sizes[3]);
    dims->d[3] = static_cast<size_t>(t.sizes[1]);
  }
}

// True when NCHW and NHWC order the elements identically (C == 1 or H*W == 1).
bool layout_trivial(const Dims& nhwc) { return nhwc.d[3] == 1 || nhwc.d[1] * nhwc.d[2] == 1; }

// The delegate's compile specs as one CompileOptions (xnnpack_compile_specs.h: the exporter
// writes them with the same encode / decode pair).
Error read_compile_options(Span<const CompileSpecView> specs, CompileOptions* options, Diagnostic* diag) {
  *options = CompileOptions();
  for (const CompileSpecView& spec : specs) {
    const char* why = nullptr;
    if (!decode_compile_option(spec.key, spec.value.data(), spec.value.size(), options, &why)) {
      return fail(diag, Error::InvalidProgram, "xnnpack: compile spec %s (%zu bytes): %s; re-export the program",
                  spec.key, spec.value.size(), why);
    }
  }
  return Error::Ok;
}

void release(XnnDelegate* d) {
  {
    MethodWorkspaceLock lock(d->workspace);  // deleting a runtime unlinks it from the workspace
    for (size_t i = 0; i < d->num_cached; ++i) {
      if (d->cache[i].runtime != nullptr) xnn_delete_runtime(d->cache[i].runtime);
      d->cache[i].runtime = nullptr;
    }
  }
  release_method_workspace(d->workspace);
  d->workspace = nullptr;
  d->num_cached = 0;
  d->current = nullptr;
  release_weights_cache(d->weights);  // after the runtimes that point into it
  d->weights = nullptr;
  if (d->owns_pool && d->pool != nullptr) pthreadpool_destroy(d->pool);
  d->pool = nullptr;
  d->~XnnDelegate();
}

// Builds a runtime for the input shapes in `key` into a cache slot (evicting the least
// recently used one when full). Allocates inside XNNPACK: only at init and on shape change.
Error build_cached_runtime(XnnDelegate* d, const Dims* key, Diagnostic* diag, CachedRuntime** out) {
  for (uint32_t k = 0; k < d->num_inputs; ++k) d->work_dims[d->inputs[k].tensor_id] = key[k];
  EMBER_TRY(infer_shapes(d, /*check_declared=*/false, diag));
  for (uint32_t k = 0; k < d->num_outputs; ++k) {
    const ExternalPort& port = d->outputs[k];
    const Dims& dims = d->work_dims[port.tensor_id];
    for (uint32_t i = 0; i < dims.rank; ++i) {
      if (dims.d[i] > port.max_dims.d[i]) {
        return fail(diag, Error::OutOfBounds,
                    "xnnpack: for these input shapes output %u dim %u would be %zu, above its bound %zu", k, i,
                    dims.d[i], port.max_dims.d[i]);
      }
    }
  }
  xnn_runtime_t runtime = nullptr;
  EMBER_TRY(create_runtime(d, &runtime, diag));
  // The runtime's shapes are fixed at creation: plan its memory once.
  const xnn_status s = xnn_reshape_runtime(runtime);
  if (s != xnn_status_success) {
    xnn_delete_runtime(runtime);
    return fail(diag, status_error(s), "xnnpack: xnn_reshape_runtime (%u nodes) failed: %s", d->num_nodes,
                status_name(s));
  }
  CachedRuntime* slot = nullptr;
  if (d->num_cached < kMaxCachedRuntimes) {
    slot = &d->cache[d->num_cached++];
  } else {
    slot = &d->cache[0];
    for (size_t i = 1; i < d->num_cached; ++i) {
      if (d->cache[i].last_use < slot->last_use) slot = &d->cache[i];
    }
    xnn_delete_runtime(slot->runtime);
  }
  slot->runtime = runtime;
  slot->bound_valid = false;
  d->profile.named_runtime = nullptr;  // a new runtime may reuse a freed one's address
  for (uint32_t k = 0; k < d->num_inputs; ++k) slot->input_dims[k] = key[k];
  for (uint32_t k = 0; k < d->num_outputs; ++k) slot->output_dims[k] = d->work_dims[d->outputs[k].tensor_id];
  d->stats.runtimes_built++;
  *out = slot;
  return Error::Ok;
}

// Puts a runtime whose reshape did not go through back to the shapes of its key.
Error restore_shapes(XnnDelegate* d, CachedRuntime* rt, Diagnostic* diag) {
  rt->bound_valid = false;
  xnn_status s = xnn_status_success;
  for (uint32_t k = 0; k < d->num_inputs && s == xnn_status_success; ++k) {
    if (d->inputs[k].ignored) continue;
    s = xnn_reshape_external_value(rt->runtime, d->inputs[k].tensor_id, rt->input_dims[k].rank, rt->input_dims[k].d);
  }
  if (s == xnn_status_success) s = xnn_reshape_runtime(rt->runtime);
  if (s != xnn_status_success) {
    return fail(diag, status_error(s), "xnnpack: restoring the runtime's shapes after a failed reshape failed: %s",
                status_name(s));
  }
  return Error::Ok;
}

// Shape change on the current runtime: XNNPACK re-derives every internal shape and replans
// its memory (xnn_reshape_external_value + xnn_reshape_runtime), keeping the packed weights.
// *reshaped = false (no error) when XNNPACK cannot reshape this graph: the caller builds a
// new runtime instead.
Error reshape_current(XnnDelegate* d, CachedRuntime* rt, const Dims* key, Diagnostic* diag, bool* reshaped) {
  *reshaped = false;
  for (uint32_t k = 0; k < d->num_inputs; ++k) d->work_dims[d->inputs[k].tensor_id] = key[k];
  EMBER_TRY(infer_shapes(d, /*check_declared=*/false, diag));
  for (uint32_t k = 0; k < d->num_outputs; ++k) {
    const ExternalPort& port = d->outputs[k];
    const Dims& dims = d->work_dims[port.tensor_id];
    for (uint32_t i = 0; i < dims.rank; ++i) {
      if (dims.d[i] > port.max_dims.d[i]) {
        return fail(diag, Error::OutOfBounds,
                    "xnnpack: for these input shapes output %u dim %u would be %zu, above its bound %zu", k, i,
                    dims.d[i], port.max_dims.d[i]);
      }
    }
  }
  for (uint32_t k = 0; k < d->num_inputs; ++k) {
    const ExternalPort& port = d->inputs[k];
    if (port.ignored) continue;
    if (xnn_reshape_external_value(rt->runtime, port.tensor_id, key[k].rank, key[k].d) != xnn_status_success) {
      return restore_shapes(d, rt, diag);  // rebuild instead
    }
  }
  if (xnn_reshape_runtime(rt->runtime) != xnn_status_success) return restore_shapes(d, rt, diag);
  // XNNPACK's output shapes must be the ones Ember derived (and sized the outputs for).
  for (uint32_t k = 0; k < d->num_outputs; ++k) {
    const ExternalPort& port = d->outputs[k];
    const Dims& want = d->work_dims[port.tensor_id];
    size_t rank = 0;
    size_t got[XNN_MAX_TENSOR_DIMS] = {0};
    const xnn_status s = xnn_get_external_value_shape(rt->runtime, port.tensor_id, &rank, got);
    bool same = s == xnn_status_success && rank == want.rank;
    for (uint32_t i = 0; same && i < want.rank; ++i) same = got[i] == want.d[i];
    if (!same) return restore_shapes(d, rt, diag);  // rebuild instead
  }
  for (uint32_t k = 0; k < d->num_inputs; ++k) rt->input_dims[k] = key[k];
  for (uint32_t k = 0; k < d->num_outputs; ++k) rt->output_dims[k] = d->work_dims[d->outputs[k].tensor_id];
  rt->bound_valid = false;  // xnn_setup_runtime_v2 is required after a reshape
  d->stats.reshapes++;
  *reshaped = true;
  return Error::Ok;
}

bool same_key(const CachedRuntime& c, const Dims* key, uint32_t n) {
  for (uint32_t k = 0; k < n; ++k) {
    if (c.input_dims[k] != key[k]) return false;
  }
  return true;
}

class XnnpackBackend final : public Backend {
 public:
  bool is_available() const override { return xnnpack_initialized(); }

  Result<void*> init(BackendInitContext& ctx, Span<const uint8_t> blob, Span<const CompileSpecView> specs) override {
    if (!xnnpack_initialized()) {
      return fail(ctx.diag, Error::NotSupported, "xnnpack: xnn_initialize failed (unsupported CPU?)");
    }
    if (ctx.method_allocator == nullptr) return fail(ctx.diag, Error::InvalidArgument, "xnnpack: no method allocator");
    void* mem = ctx.method_allocator->allocate(sizeof(XnnDelegate), alignof(XnnDelegate));
    if (mem == nullptr) return method_allocator_too_small(ctx.diag, *ctx.method_allocator, "the xnnpack delegate");
    XnnDelegate* d = new (mem) XnnDelegate();
    Error err = init_delegate(d, ctx, blob, specs);
    if (err != Error::Ok) {
      release(d);
      return err;
    }
    return static_cast<void*>(d);
  }

  Error execute(BackendExecuteContext& ctx, void* handle, EValue** args, size_t num_args) override {
    XnnDelegate* d = static_cast<XnnDelegate*>(handle);
    Diagnostic* diag = ctx.diag;
    if (d == nullptr) return fail(diag, Error::InvalidState, "xnnpack: execute on a null delegate");
    // Shared with the Method's other runtimes (method_workspace.h): uncontended by design.
    MethodWorkspaceLock lock(d->workspace);
    if (num_args != d->num_inputs + d->num_outputs) {
      return fail(diag, Error::InvalidArgument, "xnnpack: delegate takes %u inputs and %u outputs, got %zu arguments",
                  d->num_inputs, d->num_outputs, num_args);
    }
    for (size_t i = 0; i < num_args; ++i) {
      if (i < d->num_inputs && d->inputs[i].ignored) continue;
      const uint32_t rank = i < d->num_inputs ? d->work_dims[d->inputs[i].tensor_id].rank
                                              : d->outputs[i - d->num_inputs].max_dims.rank;
      const bool int8 = i < d->num_inputs ? d->inputs[i].int8 : d->outputs[i - d->num_inputs].int8;
      if (args[i] == nullptr || !args[i]->is_tensor() || args[i]->as_tensor == nullptr ||
          args[i]->as_tensor->dtype != (int8 ? ScalarType::Int8 : ScalarType::Float32) ||
          args[i]->as_tensor->rank != rank || !args[i]->as_tensor->is_contiguous()) {
        return fail(diag, Error::InvalidArgument, "xnnpack: delegate argument %zu must be a contiguous %s tensor of rank %u",
                    i, int8 ? "int8" : "float32", rank);
      }
    }
    // Shapes: the cache key is every input's XNNPACK dims.
    Dims* keys = d->scratch_key;
    for (uint32_t k = 0; k < d->num_inputs; ++k) {
      const ExternalPort& port = d->inputs[k];
      if (port.ignored) {
        keys[k] = port.max_dims;
        continue;
      }
      xnn_dims(port, *args[k]->as_tensor, &keys[k]);
      for (uint32_t i = 0; i < keys[k].rank; ++i) {
        if (keys[k].d[i] > port.max_dims.d[i]) {
          return fail(diag, Error::OutOfBounds, "xnnpack: input %u dim %u is %zu, above the compiled bound %zu", k, i,
                      keys[k].d[i], port.max_dims.d[i]);
        }
      }
    }
    CachedRuntime* rt = d->current;
    if (rt == nullptr || !same_key(*rt, keys, d->num_inputs)) {
      rt = nullptr;
      for (size_t i = 0; i < d->num_cached; ++i) {
        if (same_key(d->cache[i], keys, d->num_inputs)) rt = &d->cache[i];
      }
      if (rt == nullptr && d->current != nullptr) {
        bool reshaped = false;
        EMBER_TRY(reshape_current(d, d->current, keys, diag, &reshaped));
        if (reshaped) rt = d->current;
      }
      if (rt == nullptr) EMBER_TRY(build_cached_runtime(d, keys, diag, &rt));
      d->current = rt;
      d->stats.runtime_switches++;
    }
    rt->last_use = ++d->clock;
    // Inputs: NCHW -> NHWC into staging; as-is tensors are used in place when XNNPACK may
    // read XNN_EXTRA_BYTES past their end, else copied to staging.
    bool changed = !rt->bound_valid;
    uint32_t e = 0;  // next slot in d->externals
    for (uint32_t k = 0; k < d->num_inputs; ++k) {
      const ExternalPort& port = d->inputs[k];
      if (port.ignored) continue;
      const Tensor& t = *args[k]->as_tensor;
      const Dims& dims = rt->input_dims[k];
      const size_t nbytes = dims.numel() * port.elem_size;
      if (t.data == nullptr && nbytes != 0) return fail(diag, Error::InvalidArgument, "xnnpack: input %u has no data", k);
      void* ptr = port.staging;
      if (port.nchw && !layout_trivial(dims) && port.int8) {
        nchw_to_nhwc(static_cast<const int8_t*>(t.data), static_cast<int8_t*>(port.staging), dims.d[0], dims.d[3],
                     dims.d[1] * dims.d[2], d->pool);
      } else if (port.nchw && !layout_trivial(dims)) {
        nchw_to_nhwc(static_cast<const float*>(t.data), static_cast<float*>(port.staging), dims.d[0], dims.d[3],
                     dims.d[1] * dims.d[2], d->pool);
      } else if (t.capacity_bytes >= nbytes + XNN_EXTRA_BYTES) {
        ptr = t.data;
      } else {
        std::memcpy(port.staging, t.data, nbytes);
      }
      d->externals[e] = xnn_external_value{port.tensor_id, ptr};
      changed |= rt->bound[e++] != ptr;
    }
    int64_t sizes[kMaxDims];
    for (uint32_t k = 0; k < d->num_outputs; ++k) {
      const ExternalPort& port = d->outputs[k];
      Tensor& t = *args[d->num_inputs + k]->as_tensor;
      const Dims& dims = rt->output_dims[k];
      ember_sizes(port, dims, sizes);
      Error err = resize_tensor(t, Span<const int64_t>(sizes, dims.rank));
      if (err != Error::Ok) {
        return fail(diag, err, "xnnpack: output %u cannot take the shape the partition produces (%zu elements)", k,
                    dims.numel());
      }
      if (t.data == nullptr && dims.numel() != 0) {
        return fail(diag, Error::InvalidArgument, "xnnpack: output %u has no data", k);
      }
      void* ptr = port.nchw && !layout_trivial(dims) ? static_cast<void*>(port.staging) : t.data;
      d->externals[e] = xnn_external_value{port.tensor_id, ptr};
      changed |= rt->bound[e++] != ptr;
    }
    if (changed) {
      xnn_status s = xnn_setup_runtime_v2(rt->runtime, e, d->externals);
      if (s != xnn_status_success) {
        rt->bound_valid = false;
        return fail(diag, status_error(s), "xnnpack: xnn_setup_runtime_v2 failed: %s", status_name(s));
      }
      for (uint32_t k = 0; k < e; ++k) rt->bound[k] = d->externals[k].data;
      rt->bound_valid = true;
      d->stats.setups++;
    }
    // Operators are reported only for a traced call of a delegate built with profiling.
    const bool report = ctx.event_tracer != nullptr && d->profile.enabled;
    const uint64_t invoke_start_ns = report ? platform_monotonic_ns() : 0;
    xnn_status s = xnn_invoke_runtime(rt->runtime);
    if (s != xnn_status_success) {
      return fail(diag, status_error(s), "xnnpack: xnn_invoke_runtime (%u nodes) failed: %s", d->num_nodes,
                  status_name(s));
    }
    if (report) report_operators(d, rt->runtime, ctx, invoke_start_ns, platform_monotonic_ns());
    d->stats.invokes++;
    for (uint32_t k = 0; k < d->num_outputs; ++k) {
      const ExternalPort& port = d->outputs[k];
      const Dims& dims = rt->output_dims[k];
      if (port.nchw && !layout_trivial(dims) && port.int8) {
        nhwc_to_nchw(static_cast<const int8_t*>(port.staging),
                     static_cast<int8_t*>(args[d->num_inputs + k]->as_tensor->data), dims.d[0], dims.d[3],
                     dims.d[1] * dims.d[2], d->pool);
      } else if (port.nchw && !layout_trivial(dims)) {
        nhwc_to_nchw(static_cast<const float*>(port.staging),
                     static_cast<float*>(args[d->num_inputs + k]->as_tensor->data), dims.d[0], dims.d[3],
                     dims.d[1] * dims.d[2], d->pool);
      }
    }
    return Error::Ok;
  }

  void destroy(void* handle) override {
    if (handle != nullptr) release(static_cast<XnnDelegate*>(handle));
  }

 private:
  static Error init_delegate(XnnDelegate* d, BackendInitContext& ctx, Span<const uint8_t> blob,
                             Span<const CompileSpecView> specs) {
    CompileOptions options;
    EMBER_TRY(read_compile_options(specs, &options, ctx.diag));
    size_t threads = options.num_threads;
    d->fp16 = options.fp16;
    d->conv_block_bytes = options.conv_block_bytes;
    d->weights = acquire_weights_cache(ctx.program);
    d->workspace = acquire_method_workspace(ctx.method_allocator);
    pthreadpool_t shared = ctx.thread_pool != nullptr ? static_cast<pthreadpool_t>(ctx.thread_pool->native_handle())
                                                      : nullptr;
    if (shared == nullptr && threads == 0 && ctx.thread_pool != nullptr) threads = ctx.thread_pool->num_threads();
    EMBER_TRY(prepare_delegate(d, ctx, blob, specs));
    // A small compute-bound graph runs on fewer threads than offered (thread_budget.cc): on
    // none but the caller's, or on a pool of its own.
    const size_t offered = shared != nullptr ? pthreadpool_get_threads_count(shared) : threads;
    const size_t useful = useful_threads(d, offered);
    if (useful < offered) {
      shared = nullptr;
      threads = useful;
      d->stats.threads_offered = offered;
    }
    MemoryAllocator* a = ctx.method_allocator;
    const uint32_t ni = d->num_inputs, no = d->num_outputs;
    d->scratch_key = a->allocate_array<Dims>(ni + 1);
    if (d->scratch_key == nullptr) return method_allocator_too_small(ctx.diag, *a, "the xnnpack shape key");
    for (CachedRuntime& c : d->cache) {
      c.input_dims = a->allocate_array<Dims>(ni + 1);
      c.output_dims = a->allocate_array<Dims>(no + 1);
      c.bound = a->allocate_array<void*>(ni + no + 1);
      if (!c.input_dims || !c.output_dims || !c.bound) {
        return method_allocator_too_small(ctx.diag, *a, "the xnnpack runtime cache");
      }
      for (uint32_t k = 0; k < ni + no; ++k) c.bound[k] = nullptr;
    }
    if (shared != nullptr) {
      d->pool = shared;  // the method's pool: owned by the caller, outlives the method
      d->stats.shared_pool = true;
    } else if (threads > 1) {
      d->pool = pthreadpool_create(threads);
      if (d->pool == nullptr) {
        return fail(ctx.diag, Error::OutOfMemory, "xnnpack: could not create a pthreadpool of %zu threads", threads);
      }
      d->owns_pool = true;
    }
    d->stats.num_threads = d->pool != nullptr ? pthreadpool_get_threads_count(d->pool) : 1;
    // The runtime for the compiled shapes.
    for (uint32_t k = 0; k < ni; ++k) d->scratch_key[k] = d->declared_dims[d->inputs[k].tensor_id];
    CachedRuntime* rt = nullptr;
    d->profile.enabled = ctx.event_tracer != nullptr;
    {
      MethodWorkspaceLock lock(d->workspace);
      EMBER_TRY(build_cached_runtime(d, d->scratch_key, ctx.diag, &rt));
    }
    d->current = rt;
    if (d->profile.enabled) EMBER_TRY(init_profiling(d, rt->runtime, a, ctx.diag));
    return Error::Ok;
  }
};

XnnpackBackend g_backend;
const bool g_registered = register_backend(kXnnpackBackendId, &g_backend);

}  // namespace

Backend& xnnpack_backend() {
  (void)g_registered;
  return g_backend;
}

ProgramWeightsStats program_weights_stats(const void* handle) {
  ProgramWeightsStats out;
  if (handle == nullptr) return out;
  const XnnDelegate* d = static_cast<const XnnDelegate*>(handle);
  if (d->weights == nullptr) return out;
  const WeightsCacheStats w = weights_cache_stats(d->weights);
  out.shared = true;
  out.packed_bytes = w.packed_bytes;
  out.packings = w.packings;
  out.reuses = w.reuses;
  out.file_cache = w.file.enabled;
  out.index_loaded = w.file.index_loaded;
  out.mapped_blocks = w.file.mapped_blocks;
  out.mapped_bytes = w.file.mapped_bytes;
  out.file_hits = w.file.hits;
  out.written_blocks = w.file.written_blocks;
  out.dropped_source_bytes = w.dropped_source_bytes;
  out.shared_with_other_programs_bytes = w.shared_with_other_programs_bytes;
  return out;
}

uint64_t packed_weights_bytes_in_process() { return packed_bytes_held_in_process(); }

XnnpackDelegateStats delegate_stats(const void* handle) {
  if (handle == nullptr) return XnnpackDelegateStats();
  const XnnDelegate* d = static_cast<const XnnDelegate*>(handle);
  XnnpackDelegateStats s = d->stats;
  s.cached_runtimes = d->num_cached;
  s.fp16 = d->fp16;
  s.shares_weights = d->weights != nullptr;
  return s;
}

}  // namespace xnnpack
}  // namespace ember
