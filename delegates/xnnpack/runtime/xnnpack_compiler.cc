// Blob verification and subgraph definition for the XNNPACK backend.
#include <pthreadpool.h>
#include <xnnpack.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#include "delegates/xnnpack/runtime/fp16_advice.h"
#include "delegates/xnnpack/runtime/method_workspace.h"
#include "delegates/xnnpack/runtime/weights_cache.h"
#include "delegates/xnnpack/runtime/xnnpack_delegate.h"
#include "flatbuffers/flatbuffers.h"
#include "runtime/core/flatbuffer_alignment.h"
#include "runtime/platform/log.h"
#include "runtime/program/program.h"

// One XNNPACK: the 2024 tree (third_party/xnnpack/local), never /usr/include's 2022 header.
static_assert(xnn_status_deprecated == 8 && XNN_MAX_TENSOR_DIMS >= 6,
              "xnnpack.h is not XNNPACK 2024: run ./setup.sh and check the include order");
// The blob's Winograd flags are XNNPACK's (third_party/xnnpack/patches/0005).
static_assert(ember::xnnpack::kWinogradFlag == XNN_FLAG_WINOGRAD_CONVOLUTION &&
                  ember::xnnpack::kWinograd2x2Flag == XNN_FLAG_WINOGRAD_2X2_TILES,
              "XNNPACK without Ember's Winograd patch: run ./setup.sh (third_party/xnnpack/build.sh)");

namespace ember {
namespace xnnpack {
namespace {

constexpr uint32_t kGraphVersion = 1;
constexpr uint32_t kMaxTensors = 1u << 20;
constexpr uint64_t kMaxDim = uint64_t{1} << 31;
constexpr uint64_t kMaxElements = uint64_t{1} << 36;

// Number of elements, or 0 with *ok = false on overflow.
bool checked_numel(const Dims& d, uint64_t* numel) {
  uint64_t n = 1;
  for (uint32_t i = 0; i < d.rank; ++i) {
    if (d.d[i] > kMaxDim) return false;
    if (d.d[i] != 0 && n > kMaxElements / d.d[i]) return false;
    n *= d.d[i];
  }
  *numel = n;
  return true;
}

bool read_dims(const flatbuffers::Vector<uint64_t>* v, Dims* out) {
  *out = Dims();
  if (v == nullptr) return true;  // scalar
  if (v->size() > kMaxDims) return false;  // alignment: checked by prepare_delegate first
  out->rank = v->size();
  for (uint32_t i = 0; i < out->rank; ++i) {
    if (v->Get(i) > kMaxDim) return false;
    out->d[i] = static_cast<size_t>(v->Get(i));
  }
  uint64_t n = 0;
  return checked_numel(*out, &n);
}

// Resolves a constant's bytes: in place when 4-byte aligned and followed by XNN_EXTRA_BYTES
// readable bytes, or when only packing reads it (`packed_only`: conv/fc filters and biases,
// which XNNPACK repacks at runtime creation without over-reading); otherwise copied once
// into the method allocator.
Error resolve_constant(XnnDelegate* d, uint32_t t, const fb::Tensor& tensor, BackendInitContext& ctx,
                       Span<const CompileSpecView> specs, bool packed_only) {
  const fb::ConstantData* c = tensor.constant();
  Diagnostic* diag = ctx.diag;
  if (c == nullptr) return fail(diag, Error::InvalidProgram, "xnnpack: constant tensor %u has no data", t);
  uint64_t numel = 0;
  checked_numel(d->declared_dims[t], &numel);
  const size_t elem = element_size(tensor.dtype());  // checked by check_tensor_type
  const uint64_t nbytes = storage_bytes(tensor.dtype(), numel);
  const uint8_t* base = nullptr;
  uint64_t available = 0;  // readable bytes from `base`
  if (c->segment_index() >= 0) {
    // segment_index is the delegate's constant slot (kConstantSegmentsSpec).
    Result<Span<const uint8_t>> seg = delegate_constant(ctx, specs, static_cast<uint32_t>(c->segment_index()));
    if (!seg.ok()) {
      return fail(diag, Error::InvalidProgram,
                  "xnnpack: constant tensor %u refers to constant slot %d, which the program does not provide "
                  "(missing %s compile spec, program or segment)",
                  t, c->segment_index(), kConstantSegmentsSpec);
    }
    if (c->nbytes() != nbytes || c->offset() > seg->size() || nbytes > seg->size() - c->offset()) {
      return fail(diag, Error::InvalidProgram,
                  "xnnpack: constant tensor %u (%llu bytes at offset %llu) does not fit constant slot %d (%zu bytes) "
                  "or disagrees with its dims (%llu bytes)",
                  t, static_cast<unsigned long long>(c->nbytes()), static_cast<unsigned long long>(c->offset()),
                  c->segment_index(), seg->size(), static_cast<unsigned long long>(nbytes));
    }
    base = seg->data() + c->offset();
    available = seg->size() - c->offset();
  } else {
    if (c->inline_bytes() == nullptr || c->inline_bytes()->size() < nbytes) {
      return fail(diag, Error::InvalidProgram, "xnnpack: constant tensor %u has %u inline bytes, needs %llu", t,
                  c->inline_bytes() ? c->inline_bytes()->size() : 0u, static_cast<unsigned long long>(nbytes));
    }
    base = c->inline_bytes()->data();
    available = c->inline_bytes()->size();
  }
  if (reinterpret_cast<uintptr_t>(base) % elem == 0 && packed_only) {
    d->constant_data[t] = base;
    d->stats.constants_in_place++;
    note_packed_source(d->weights, base, static_cast<size_t>(nbytes));  // pages given back once packed
    return Error::Ok;
  }
  if (reinterpret_cast<uintptr_t>(base) % elem == 0 && available >= nbytes + XNN_EXTRA_BYTES) {
    d->constant_data[t] = base;
    d->stats.constants_in_place++;
    return Error::Ok;
  }
  d->stats.constants_copied++;
  void* copy = ctx.method_allocator->allocate(nbytes + XNN_EXTRA_BYTES, 64);
  if (copy == nullptr) {
    char what[96];
    std::snprintf(what, sizeof(what), "an xnnpack copy of constant %u (%llu bytes)", t,
                  static_cast<unsigned long long>(nbytes));
    return method_allocator_too_small(diag, *ctx.method_allocator, what);
  }
  std::memcpy(copy, base, nbytes);
  std::memset(static_cast<uint8_t*>(copy) + nbytes, 0, XNN_EXTRA_BYTES);
  d->constant_data[t] = copy;
  return Error::Ok;
}

template <typename T>
T* alloc_array(MemoryAllocator* a, size_t n) {
  T* p = a->allocate_array<T>(n == 0 ? 1 : n);
  if (p != nullptr) {
    for (size_t i = 0; i < (n == 0 ? 1 : n); ++i) new (&p[i]) T();
  }
  return p;
}

Error prepare_port(XnnDelegate* d, ExternalPort* port, uint32_t t, const fb::Tensor& tensor, BackendInitContext& ctx) {
  Diagnostic* diag = ctx.diag;
  port->tensor_id = t;
  port->nchw = tensor.layout() == fb::Layout::NchwToNhwc;
  port->int8 = tensor.dtype() == fb::DataType::QInt8;
  port->elem_size = element_size(tensor.dtype());
  if (tensor.dtype() != fb::DataType::Fp32 && !port->int8) {
    return fail(diag, Error::InvalidProgram, "xnnpack: external tensor %u must be Fp32 or QInt8", t);
  }
  const Dims& dims = d->declared_dims[t];
  if (port->nchw && dims.rank != 4) {
    return fail(diag, Error::InvalidProgram, "xnnpack: tensor %u has layout NchwToNhwc but rank %u (needs 4)", t, dims.rank);
  }
  if (tensor.max_dims() != nullptr && tensor.max_dims()->size() != 0) {
    if (!read_dims(tensor.max_dims(), &port->max_dims) || port->max_dims.rank != dims.rank) {
      return fail(diag, Error::InvalidProgram, "xnnpack: tensor %u max_dims has the wrong rank or is too large", t);
    }
    for (uint32_t i = 0; i < dims.rank; ++i) {
      if (dims.d[i] > port->max_dims.d[i]) {
        return fail(diag, Error::InvalidProgram, "xnnpack: tensor %u dim %u (%zu) exceeds its bound %zu", t, i,
                    dims.d[i], port->max_dims.d[i]);
      }
      if (dims.d[i] != port->max_dims.d[i]) port->dynamic = true;
    }
  } else {
    port->max_dims = dims;
  }
  uint64_t numel = 0;
  checked_numel(port->max_dims, &numel);
  port->staging = ctx.method_allocator->allocate(numel * port->elem_size + XNN_EXTRA_BYTES, 64);
  if (port->staging == nullptr) {
    char what[96];
    std::snprintf(what, sizeof(what), "the xnnpack staging buffer of tensor %u (%llu bytes)", t,
                  static_cast<unsigned long long>(numel * port->elem_size));
    return method_allocator_too_small(diag, *ctx.method_allocator, what);
  }
  return Error::Ok;
}

}  // namespace

const char* status_name(xnn_status status) {
  switch (status) {
    case xnn_status_success: return "xnn_status_success";
    case xnn_status_uninitialized: return "xnn_status_uninitialized";
    case xnn_status_invalid_parameter: return "xnn_status_invalid_parameter";
    case xnn_status_invalid_state: return "xnn_status_invalid_state";
    case xnn_status_unsupported_parameter: return "xnn_status_unsupported_parameter";
    case xnn_status_unsupported_hardware: return "xnn_status_unsupported_hardware";
    case xnn_status_out_of_memory: return "xnn_status_out_of_memory";
    case xnn_status_reallocation_required: return "xnn_status_reallocation_required";
    case xnn_status_deprecated: return "xnn_status_deprecated";
  }
  return "xnn_status_unknown";
}

Error status_error(xnn_status status) {
  switch (status) {
    case xnn_status_success: return Error::Ok;
    case xnn_status_invalid_parameter: return Error::InvalidProgram;
    case xnn_status_unsupported_parameter:
    case xnn_status_unsupported_hardware: return Error::NotSupported;
    case xnn_status_out_of_memory: return Error::OutOfMemory;
    case xnn_status_deprecated: return Error::NotSupported;
    case xnn_status_uninitialized:
    case xnn_status_invalid_state:
    case xnn_status_reallocation_required: return Error::BackendFailed;
  }
  return Error::BackendFailed;
}

Error prepare_delegate(XnnDelegate* d, BackendInitContext& ctx, Span<const uint8_t> blob,
                       Span<const CompileSpecView> specs) {
  Diagnostic* diag = ctx.diag;
  if (blob.data() == nullptr || blob.size() < 8) {
    return fail(diag, Error::InvalidProgram, "xnnpack: the delegate blob is empty or truncated (%zu bytes)", blob.size());
  }
  flatbuffers::Verifier verifier(blob.data(), blob.size());
  if (!fb::VerifyGraphBuffer(verifier)) {
    return fail(diag, Error::InvalidProgram,
                "xnnpack: the delegate blob (%zu bytes) is not a valid XNNPACK graph FlatBuffer (identifier EXNN); "
                "re-export the program", blob.size());
  }
  const fb::Graph* g = fb::GetGraph(blob.data());
  d->graph = g;
  if (g->version() != kGraphVersion) {
    return fail(diag, Error::VersionMismatch, "xnnpack: blob version %u, this runtime reads version %u", g->version(),
                kGraphVersion);
  }
  if (g->tensors() == nullptr || g->nodes() == nullptr || g->nodes()->size() == 0 ||
      g->tensors()->size() > kMaxTensors) {
    return fail(diag, Error::InvalidProgram, "xnnpack: the blob has no nodes, no tensors or too many tensors");
  }
  d->num_tensors = g->tensors()->size();
  d->num_nodes = g->nodes()->size();
  d->num_inputs = g->num_inputs();
  d->num_outputs = g->num_outputs();
  if (d->num_inputs > d->num_tensors || d->num_outputs == 0 || d->num_outputs > d->num_tensors) {
    return fail(diag, Error::InvalidProgram, "xnnpack: bad input/output counts (%u, %u) for %u tensors", d->num_inputs,
                d->num_outputs, d->num_tensors);
  }
  MemoryAllocator* a = ctx.method_allocator;
  d->constant_data = alloc_array<const void*>(a, d->num_tensors);
  d->channel_scales = alloc_array<const float*>(a, d->num_tensors);
  d->block_scales = alloc_array<const uint16_t*>(a, d->num_tensors);
  d->declared_dims = alloc_array<Dims>(a, d->num_tensors);
  d->work_dims = alloc_array<Dims>(a, d->num_tensors);
  d->attrs = alloc_array<NodeAttrs>(a, d->num_nodes);
  d->inputs = alloc_array<ExternalPort>(a, d->num_inputs);
  d->outputs = alloc_array<ExternalPort>(a, d->num_outputs);
  d->externals = alloc_array<xnn_external_value>(a, d->num_inputs + d->num_outputs);
  // 0: not yet available, 1: available (input/constant/produced); used for use-before-def.
  uint8_t* available = alloc_array<uint8_t>(a, d->num_tensors);
  if (!d->constant_data || !d->channel_scales || !d->block_scales || !d->declared_dims || !d->work_dims ||
      !d->attrs || !d->inputs || !d->outputs || !d->externals || !available) {
    return method_allocator_too_small(diag, *a, "the xnnpack delegate tables");
  }
  bool* input_seen = reinterpret_cast<bool*>(alloc_array<uint8_t>(a, d->num_inputs + d->num_outputs));
  if (input_seen == nullptr) return method_allocator_too_small(diag, *a, "the xnnpack input table");
  // Per tensor: bit 0 = read as a conv/fc filter or bias (repacked), bit 1 = read otherwise.
  uint8_t* uses = alloc_array<uint8_t>(a, d->num_tensors);
  if (uses == nullptr) return method_allocator_too_small(diag, *a, "the xnnpack use table");
  for (uint32_t i = 0; i < d->num_nodes; ++i) {
    const fb::Node* node = g->nodes()->Get(i);
    if (node == nullptr || node->inputs() == nullptr) continue;  // rejected below
    const fb::OpType op = node->op();
    const bool packs = op == fb::OpType::Convolution2d || op == fb::OpType::DepthwiseConvolution2d ||
                       op == fb::OpType::Deconvolution2d || op == fb::OpType::FullyConnected;
    for (uint32_t j = 0; j < node->inputs()->size(); ++j) {
      const uint32_t t = node->inputs()->Get(j);
      if (t < d->num_tensors) uses[t] |= packs && j >= 1 ? 1 : 2;
    }
  }

  for (uint32_t t = 0; t < d->num_tensors; ++t) {
    const fb::Tensor* tensor = g->tensors()->Get(t);
    if (tensor == nullptr) return fail(diag, Error::InvalidProgram, "xnnpack: tensor %u is missing", t);
    if (!elements_aligned(tensor->dims()) || !elements_aligned(tensor->max_dims())) {
      return fail(diag, Error::InvalidProgram, "xnnpack: tensor %u has a misaligned dims vector (a corrupt blob); re-export the program", t);
    }
    if (!read_dims(tensor->dims(), &d->declared_dims[t])) {
      return fail(diag, Error::InvalidProgram, "xnnpack: tensor %u has rank > %u or a dim too large", t, kMaxDims);
    }
    EMBER_TRY(check_tensor_type(d, t, *tensor, ctx, specs));
    d->work_dims[t] = d->declared_dims[t];
    const uint32_t k = tensor->external_index();
    switch (tensor->kind()) {
      case fb::TensorKind::Internal:
        break;
      case fb::TensorKind::Constant:
        EMBER_TRY(resolve_constant(d, t, *tensor, ctx, specs, uses[t] == 1));
        available[t] = 1;
        break;
      case fb::TensorKind::ExternalInput:
        if (k >= d->num_inputs || input_seen[k]) {
          return fail(diag, Error::InvalidProgram, "xnnpack: tensor %u: input index %u out of range or repeated", t, k);
        }
        input_seen[k] = true;
        EMBER_TRY(prepare_port(d, &d->inputs[k], t, *tensor, ctx));
        available[t] = 1;
        break;
      case fb::TensorKind::IgnoredInput:
        if (k >= d->num_inputs || input_seen[k]) {
          return fail(diag, Error::InvalidProgram, "xnnpack: tensor %u: input index %u out of range or repeated", t, k);
        }
        input_seen[k] = true;
        d->inputs[k].tensor_id = t;
        d->inputs[k].ignored = true;
        d->inputs[k].max_dims = d->declared_dims[t];
        d->num_ignored++;
        break;
      case fb::TensorKind::ExternalOutput:
        if (k >= d->num_outputs || input_seen[d->num_inputs + k]) {
          return fail(diag, Error::InvalidProgram, "xnnpack: tensor %u: output index %u out of range or repeated", t, k);
        }
        input_seen[d->num_inputs + k] = true;
        EMBER_TRY(prepare_port(d, &d->outputs[k], t, *tensor, ctx));
        break;
      default:
        return fail(diag, Error::InvalidProgram, "xnnpack: tensor %u has an unknown kind %d", t,
                    static_cast<int>(tensor->kind()));
    }
  }
  for (uint32_t k = 0; k < d->num_inputs + d->num_outputs; ++k) {
    if (!input_seen[k]) {
      return fail(diag, Error::InvalidProgram, "xnnpack: no tensor is delegate %s %u", k < d->num_inputs ? "input" : "output",
                  k < d->num_inputs ? k : k - d->num_inputs);
    }
  }

  for (uint32_t i = 0; i < d->num_nodes; ++i) {
    const fb::Node* node = g->nodes()->Get(i);
    if (node == nullptr) return fail(diag, Error::InvalidProgram, "xnnpack: node %u is missing", i);
    if (node->op() > fb::OpType::MAX) {
      return fail(diag, Error::NotSupported, "xnnpack: node %u has unknown op %d (newer exporter?)", i,
                  static_cast<int>(node->op()));
    }
    const char* name = op_name(node->op());
    const char* why = "";
    if (!read_node_attrs(*node, &d->attrs[i], &why)) {
      return fail(diag, Error::InvalidProgram, "xnnpack: node %u (%s): %s", i, name, why);
    }
    const uint32_t allowed_flags = node->op() == fb::OpType::StaticResizeBilinear2d
                                       ? (XNN_FLAG_ALIGN_CORNERS | XNN_FLAG_TENSORFLOW_LEGACY_MODE)
                                   : node->op() == fb::OpType::BatchMatrixMultiply ? XNN_FLAG_TRANSPOSE_B
                                   : node->op() == fb::OpType::StaticReduce        ? XNN_FLAG_KEEP_DIMS
                                   : node->op() == fb::OpType::Convolution2d       ? (kWinogradFlag | kWinograd2x2Flag)
                                                                                   : 0;
    if ((node->flags() & ~allowed_flags) != 0 ||
        node->flags() == (XNN_FLAG_ALIGN_CORNERS | XNN_FLAG_TENSORFLOW_LEGACY_MODE)) {
      return fail(diag, Error::InvalidProgram, "xnnpack: node %u (%s): unsupported flags 0x%x", i, name, node->flags());
    }
    uint32_t min_in = 0, max_in = 0, num_out = 0;
    op_arity(node->op(), &min_in, &max_in, &num_out);
    const uint32_t n_in = node->inputs() ? node->inputs()->size() : 0;
    const uint32_t n_out = node->outputs() ? node->outputs()->size() : 0;
    if (n_in < min_in || n_in > max_in || n_out != num_out) {
      return fail(diag, Error::InvalidProgram, "xnnpack: node %u (%s) has %u inputs and %u outputs; expected %u..%u and %u",
                  i, name, n_in, n_out, min_in, max_in, num_out);
    }
    for (uint32_t j = 0; j < n_in; ++j) {
      const uint32_t t = node->inputs()->Get(j);
      if (t >= d->num_tensors || !available[t]) {
        return fail(diag, Error::InvalidProgram, "xnnpack: node %u (%s) input %u refers to tensor %u, which is %s", i, name,
                    j, t, t >= d->num_tensors ? "out of range" : "not defined before use");
      }
    }
    const uint32_t t = node->outputs()->Get(0);
    if (t >= d->num_tensors || available[t]) {
      return fail(diag, Error::InvalidProgram, "xnnpack: node %u (%s) output tensor %u is out of range or already defined",
                  i, name, t);
    }
    EMBER_TRY(check_node_types(d, i, *node, diag));
    const fb::TensorKind kind = g->tensors()->Get(t)->kind();
    if (kind != fb::TensorKind::Internal && kind != fb::TensorKind::ExternalOutput) {
      return fail(diag, Error::InvalidProgram, "xnnpack: node %u (%s) writes tensor %u, an input or constant", i, name, t);
    }
    available[t] = 1;
  }
  for (uint32_t k = 0; k < d->num_outputs; ++k) {
    if (!available[d->outputs[k].tensor_id]) {
      return fail(diag, Error::InvalidProgram, "xnnpack: delegate output %u (tensor %u) is never produced", k,
                  d->outputs[k].tensor_id);
    }
  }
  return infer_shapes(d, /*check_declared=*/true, diag);
}

Error infer_shapes(XnnDelegate* d, bool check_declared, Diagnostic* diag) {
  Dims in[5];
  for (uint32_t i = 0; i < d->num_nodes; ++i) {
    const fb::Node* node = d->graph->nodes()->Get(i);
    const uint32_t n_in = node->inputs()->size();
    for (uint32_t j = 0; j < n_in; ++j) in[j] = d->work_dims[node->inputs()->Get(j)];
    const uint32_t t = node->outputs()->Get(0);
    const char* why = "";
    Dims out;
    if (!infer_output_dims(d->attrs[i], in, n_in, &out, &why)) {
      return fail(diag, Error::InvalidProgram, "xnnpack: node %u (%s): %s", i, op_name(node->op()), why);
    }
    uint64_t numel = 0;
    if (!checked_numel(out, &numel)) {
      return fail(diag, Error::InvalidProgram, "xnnpack: node %u (%s): output too large", i, op_name(node->op()));
    }
    if (check_declared && out != d->declared_dims[t]) {
      return fail(diag, Error::InvalidProgram,
                  "xnnpack: node %u (%s): tensor %u is declared with a shape (rank %u, last dim %zu) that differs from "
                  "the one its inputs produce (rank %u, last dim %zu)",
                  i, op_name(node->op()), t, d->declared_dims[t].rank,
                  d->declared_dims[t].rank ? d->declared_dims[t].d[d->declared_dims[t].rank - 1] : 0, out.rank,
                  out.rank ? out.d[out.rank - 1] : 0);
    }
    d->work_dims[t] = out;
  }
  return Error::Ok;
}

namespace {

struct SubgraphGuard {
  xnn_subgraph_t subgraph = nullptr;
  ~SubgraphGuard() {
    if (subgraph != nullptr) xnn_delete_subgraph(subgraph);
  }
};

// An fp32 value internal to the subgraph (for ops composed of several XNNPACK nodes).
xnn_status define_temp(xnn_subgraph_t sg, const Dims& dims, uint32_t* id) {
  *id = XNN_INVALID_VALUE_ID;
  return xnn_define_tensor_value(sg, xnn_datatype_fp32, dims.rank, dims.d, nullptr, XNN_INVALID_VALUE_ID, 0, id);
}

xnn_status define_unary(xnn_subgraph_t sg, xnn_unary_operator type, uint32_t in, uint32_t out, const char* name,
                        const char** api) {
  *api = name;
  return xnn_define_unary(sg, type, nullptr, in, out, 0);
}

// Binary elementwise op with numpy broadcasting; `clamped`: the node's output_min/max apply.
xnn_status define_binary(xnn_subgraph_t sg, xnn_binary_operator type, const NodeAttrs& a, uint32_t in0, uint32_t in1,
                         uint32_t out, bool clamped, const char* name, const char** api) {
  *api = name;
  xnn_binary_params p;
  p.output_min = a.output_min;
  p.output_max = a.output_max;
  const bool clamp = clamped && (a.output_min != -INFINITY || a.output_max != INFINITY);
  return xnn_define_binary(sg, type, clamp ? &p : nullptr, in0, in1, out, 0);
}

xnn_status define_node(xnn_subgraph_t sg, const NodeAttrs& a, const fb::Node& node, const Dims* dims,
                       const char** api) {
  const uint32_t in0 = node.inputs()->Get(0);
  const uint32_t in1 = node.inputs()->size() > 1 ? node.inputs()->Get(1) : XNN_INVALID_VALUE_ID;
  const uint32_t in2 = node.inputs()->size() > 2 ? node.inputs()->Get(2) : XNN_INVALID_VALUE_ID;
  const uint32_t out = node.outputs()->Get(0);
  const float lo = a.output_min, hi = a.output_max;
  // Channel counts come from the dims checked by infer_shapes.
  const size_t in_channels = dims[in0].rank == 4 ? dims[in0].d[3] : 0;
  const size_t filter_in = in1 != XNN_INVALID_VALUE_ID && dims[in1].rank == 4 ? dims[in1].d[3] : 0;
  const size_t filter_out = in1 != XNN_INVALID_VALUE_ID && dims[in1].rank == 4 && a.groups != 0
                                ? dims[in1].d[0] / a.groups : 0;
  switch (a.op) {
    case fb::OpType::Convolution2d:
      *api = "xnn_define_convolution_2d";
      return xnn_define_convolution_2d(sg, a.padding[0], a.padding[1], a.padding[2], a.padding[3], a.kernel[0],
                                       a.kernel[1], a.stride[0], a.stride[1], a.dilation[0], a.dilation[1], a.groups,
                                       filter_in, filter_out, lo, hi, in0, in1, in2, out, a.flags);
    case fb::OpType::DepthwiseConvolution2d:
      *api = "xnn_define_depthwise_convolution_2d";
      return xnn_define_depthwise_convolution_2d(sg, a.padding[0], a.padding[1], a.padding[2], a.padding[3],
                                                 a.kernel[0], a.kernel[1], a.stride[0], a.stride[1], a.dilation[0],
                                                 a.dilation[1], a.groups, in_channels, lo, hi, in0, in1, in2, out, 0);
    case fb::OpType::Deconvolution2d:
      *api = "xnn_define_deconvolution_2d";
      return xnn_define_deconvolution_2d(sg, a.padding[0], a.padding[1], a.padding[2], a.padding[3], a.adjustment[0],
                                         a.adjustment[1], a.kernel[0], a.kernel[1], a.stride[0], a.stride[1],
                                         a.dilation[0], a.dilation[1], a.groups, filter_in, filter_out, lo, hi, in0, in1, in2,
                                         out, 0);
    case fb::OpType::FullyConnected:
      *api = "xnn_define_fully_connected";
      return xnn_define_fully_connected(sg, lo, hi, in0, in1, in2, out, 0);
    case fb::OpType::MaxPooling2d:
      *api = "xnn_define_max_pooling_2d";
      return xnn_define_max_pooling_2d(sg, a.padding[0], a.padding[1], a.padding[2], a.padding[3], a.kernel[0],
                                       a.kernel[1], a.stride[0], a.stride[1], a.dilation[0], a.dilation[1], lo, hi, in0,
                                       out, 0);
    case fb::OpType::AveragePooling2d:
      *api = "xnn_define_average_pooling_2d";
      return xnn_define_average_pooling_2d(sg, a.padding[0], a.padding[1], a.padding[2], a.padding[3], a.kernel[0],
                                           a.kernel[1], a.stride[0], a.stride[1], lo, hi, in0, out, 0);
    case fb::OpType::GlobalAveragePooling2d: {
      // NHWC mean over H and W, keeping them (the output is [N, 1, 1, C]); a fused clamp
      // becomes a clamp node on an internal value.
      const size_t axes[2] = {1, 2};
      *api = "xnn_define_static_reduce(mean)";
      if (lo == -INFINITY && hi == INFINITY) {
        return xnn_define_static_reduce(sg, xnn_reduce_mean, 2, axes, in0, out, XNN_FLAG_KEEP_DIMS);
      }
      uint32_t mean = XNN_INVALID_VALUE_ID;
      xnn_status s = define_temp(sg, dims[out], &mean);
      if (s == xnn_status_success) s = xnn_define_static_reduce(sg, xnn_reduce_mean, 2, axes, in0, mean, XNN_FLAG_KEEP_DIMS);
      if (s != xnn_status_success) return s;
      xnn_unary_params p;
      p.clamp.min = lo;
      p.clamp.max = hi;
      *api = "xnn_define_unary(clamp) after xnn_define_static_reduce(mean)";
      return xnn_define_unary(sg, xnn_unary_clamp, &p, mean, out, 0);
    }
    case fb::OpType::Add2: return define_binary(sg, xnn_binary_add, a, in0, in1, out, true, "xnn_define_binary(add)", api);
    case fb::OpType::Subtract:
      return define_binary(sg, xnn_binary_subtract, a, in0, in1, out, true, "xnn_define_binary(subtract)", api);
    case fb::OpType::Multiply2:
      return define_binary(sg, xnn_binary_multiply, a, in0, in1, out, true, "xnn_define_binary(multiply)", api);
    case fb::OpType::Divide:
      return define_binary(sg, xnn_binary_divide, a, in0, in1, out, true, "xnn_define_binary(divide)", api);
    case fb::OpType::Maximum2:
      return define_binary(sg, xnn_binary_maximum, a, in0, in1, out, false, "xnn_define_binary(maximum)", api);
    case fb::OpType::Minimum2:
      return define_binary(sg, xnn_binary_minimum, a, in0, in1, out, false, "xnn_define_binary(minimum)", api);
    case fb::OpType::SquaredDifference:
      return define_binary(sg, xnn_binary_squared_difference, a, in0, in1, out, false,
                           "xnn_define_binary(squared_difference)", api);
    case fb::OpType::Prelu:
      return define_binary(sg, xnn_binary_prelu, a, in0, in1, out, false, "xnn_define_binary(prelu)", api);
    case fb::OpType::Clamp: {
      xnn_unary_params p;
      p.clamp.min = lo;
      p.clamp.max = hi;
      *api = "xnn_define_unary(clamp)";
      return xnn_define_unary(sg, xnn_unary_clamp, &p, in0, out, 0);
    }
    case fb::OpType::Sigmoid: return define_unary(sg, xnn_unary_sigmoid, in0, out, "xnn_define_unary(sigmoid)", api);
    case fb::OpType::HardSwish:
      return define_unary(sg, xnn_unary_hardswish, in0, out, "xnn_define_unary(hardswish)", api);
    case fb::OpType::Softmax: *api = "xnn_define_softmax"; return xnn_define_softmax(sg, in0, out, 0);
    case fb::OpType::StaticConstantPad: {
      size_t pre[kMaxDims] = {0}, post[kMaxDims] = {0};
      for (size_t i = 0; i < a.num_paddings; ++i) pre[i] = a.pre_paddings[i], post[i] = a.post_paddings[i];
      *api = "xnn_define_static_constant_pad";
      return xnn_define_static_constant_pad(sg, pre, post, a.padding_value, in0, out, 0);
    }
    case fb::OpType::StaticReshape:
    case fb::OpType::Copy:
      // The output's dims (already derived, -1 resolved) are the new shape; defined by caller.
      *api = "xnn_define_static_reshape";
      return xnn_status_invalid_state;  // handled in create_runtime (needs the output dims)
    case fb::OpType::StaticResizeBilinear2d:
      *api = "xnn_define_static_resize_bilinear_2d";
      return xnn_define_static_resize_bilinear_2d(sg, a.new_height, a.new_width, in0, out, a.flags);
    case fb::OpType::LeakyRelu: {
      xnn_unary_params p;
      p.leaky_relu.negative_slope = a.alpha;
      *api = "xnn_define_unary(leaky_relu)";
      return xnn_define_unary(sg, xnn_unary_leaky_relu, &p, in0, out, 0);
    }
    case fb::OpType::Elu: {
      xnn_unary_params p;
      p.elu.alpha = a.alpha;
      *api = "xnn_define_unary(elu)";
      return xnn_define_unary(sg, xnn_unary_elu, &p, in0, out, 0);
    }
    case fb::OpType::Abs: return define_unary(sg, xnn_unary_abs, in0, out, "xnn_define_unary(abs)", api);
    case fb::OpType::Negate: return define_unary(sg, xnn_unary_negate, in0, out, "xnn_define_unary(negate)", api);
    case fb::OpType::Square: return define_unary(sg, xnn_unary_square, in0, out, "xnn_define_unary(square)", api);
    case fb::OpType::SquareRoot:
      return define_unary(sg, xnn_unary_square_root, in0, out, "xnn_define_unary(square_root)", api);
    case fb::OpType::Ceiling: return define_unary(sg, xnn_unary_ceiling, in0, out, "xnn_define_unary(ceiling)", api);
    case fb::OpType::Floor: return define_unary(sg, xnn_unary_floor, in0, out, "xnn_define_unary(floor)", api);
    case fb::OpType::Sine: return define_unary(sg, xnn_unary_sine, in0, out, "xnn_define_unary(sine)", api);
    case fb::OpType::Cosine: return define_unary(sg, xnn_unary_cosine, in0, out, "xnn_define_unary(cosine)", api);
    case fb::OpType::BankersRounding:
      return define_unary(sg, xnn_unary_bankers_rounding, in0, out, "xnn_define_unary(bankers_rounding)", api);
    case fb::OpType::DepthToSpace:
      *api = "xnn_define_depth_to_space";
      return xnn_define_depth_to_space(sg, in0, out, a.groups, 0);
    case fb::OpType::BatchMatrixMultiply:
      *api = "xnn_define_batch_matrix_multiply";
      return xnn_define_batch_matrix_multiply(sg, in0, in1, out, a.flags);
    case fb::OpType::StaticTranspose: {
      size_t perm[kMaxDims] = {0};
      for (size_t i = 0; i < a.num_axes; ++i) perm[i] = static_cast<size_t>(a.axes[i]);
      *api = "xnn_define_static_transpose";
      return xnn_define_static_transpose(sg, a.num_axes, perm, in0, out, 0);
    }
    case fb::OpType::StaticSlice: {
      size_t offsets[kMaxDims] = {0}, sizes[kMaxDims] = {0};
      for (size_t i = 0; i < a.num_slice; ++i) {
        offsets[i] = static_cast<size_t>(a.offsets[i]);
        sizes[i] = static_cast<size_t>(a.sizes[i]);
      }
      *api = "xnn_define_static_slice";
      return xnn_define_static_slice(sg, a.num_slice, offsets, sizes, in0, out, 0);
    }
    case fb::OpType::Concatenate: {
      const uint32_t n = node.inputs()->size();
      const int32_t axis = static_cast<int32_t>(a.axis);
      const uint32_t in3 = n > 3 ? node.inputs()->Get(3) : XNN_INVALID_VALUE_ID;
      const uint32_t in4 = n > 4 ? node.inputs()->Get(4) : XNN_INVALID_VALUE_ID;
      switch (n) {
        case 2: *api = "xnn_define_concatenate2"; return xnn_define_concatenate2(sg, axis, in0, in1, out, 0);
        case 3: *api = "xnn_define_concatenate3"; return xnn_define_concatenate3(sg, axis, in0, in1, in2, out, 0);
        case 4:
          *api = "xnn_define_concatenate4";
          return xnn_define_concatenate4(sg, axis, in0, in1, in2, in3, out, 0);
        default:
          *api = "xnn_define_concatenate5";
          return xnn_define_concatenate5(sg, axis, in0, in1, in2, in3, in4, out, 0);
      }
    }
    case fb::OpType::Gelu: return define_unary(sg, xnn_unary_gelu, in0, out, "xnn_define_unary(gelu)", api);
    case fb::OpType::Tanh: return define_unary(sg, xnn_unary_tanh, in0, out, "xnn_define_unary(tanh)", api);
    case fb::OpType::Exp: return define_unary(sg, xnn_unary_exp, in0, out, "xnn_define_unary(exp)", api);
    case fb::OpType::Log: return define_unary(sg, xnn_unary_log, in0, out, "xnn_define_unary(log)", api);
    case fb::OpType::ReciprocalSquareRoot:
      return define_unary(sg, xnn_unary_reciprocal_square_root, in0, out,
                          "xnn_define_unary(reciprocal_square_root)", api);
    case fb::OpType::Convert:
      *api = "xnn_define_unary(convert)";
      return xnn_define_unary(sg, xnn_unary_convert, nullptr, in0, out, 0);
    case fb::OpType::StaticReduce: {
      size_t axes[kMaxDims] = {0};
      for (size_t i = 0; i < a.num_axes; ++i) axes[i] = static_cast<size_t>(a.axes[i]);
      *api = a.reduce_op == 0 ? "xnn_define_static_reduce(sum)" : "xnn_define_static_reduce(mean)";
      return xnn_define_static_reduce(sg, a.reduce_op == 0 ? xnn_reduce_sum : xnn_reduce_mean, a.num_axes, axes, in0,
                                      out, a.flags);
    }
  }
  *api = "(unknown op)";
  return xnn_status_unsupported_parameter;
}

}  // namespace

namespace {

// Output channels per block when fp32 convolution `node` runs as channel blocks on `threads`
// threads (see blocked_convolution.cc), 0 when it runs whole.
size_t conv_block(const XnnDelegate* d, const NodeAttrs& a, const fb::Node& node, size_t threads) {
  if (a.op != fb::OpType::Convolution2d || a.groups != 1 || node.inputs()->size() < 2) return 0;
  // A Winograd convolution blocks its own work (by tiles, then output channels per thread).
  if ((a.flags & kWinogradFlag) != 0) return 0;
  const uint32_t filter = node.inputs()->Get(1);
  const fb::Tensor* t = d->graph->tensors()->Get(filter);
  if (t->dtype() != fb::DataType::Fp32 || d->constant_data[filter] == nullptr) return 0;
  if (node.inputs()->size() > 2) {
    const uint32_t bias = node.inputs()->Get(2);
    if (bias != XNN_INVALID_VALUE_ID && d->constant_data[bias] == nullptr) return 0;
  }
  const Dims& fd = d->work_dims[filter];
  const size_t out_channels = fd.d[0];
  const size_t block =
      conv_block_channels(out_channels, fd.d[1] * fd.d[2] * fd.d[3] * sizeof(float), threads, d->conv_block_bytes);
  return block < out_channels ? block : 0;
}

Error define_subgraph(XnnDelegate* d, SubgraphGuard& guard, Diagnostic* diag) {
  xnn_status s = xnn_create_subgraph(d->num_tensors, 0, &guard.subgraph);
  if (s != xnn_status_success) {
    return fail(diag, status_error(s), "xnnpack: xnn_create_subgraph(%u values) failed: %s", d->num_tensors,
                status_name(s));
  }
  for (uint32_t t = 0; t < d->num_tensors; ++t) {
    const fb::Tensor* tensor = d->graph->tensors()->Get(t);
    if (tensor->kind() == fb::TensorKind::IgnoredInput) continue;  // never referenced (checked)
    uint32_t flags = 0;
    if (tensor->kind() == fb::TensorKind::ExternalInput) flags = XNN_VALUE_FLAG_EXTERNAL_INPUT;
    if (tensor->kind() == fb::TensorKind::ExternalOutput) flags = XNN_VALUE_FLAG_EXTERNAL_OUTPUT;
    uint32_t id = XNN_INVALID_VALUE_ID;
    const Dims& dims = d->work_dims[t];
    s = define_value(d, guard.subgraph, *tensor, dims, d->constant_data[t], t, flags, &id);
    if (s != xnn_status_success || id != t) {
      return fail(diag, s != xnn_status_success ? status_error(s) : Error::Internal,
                  "xnnpack: xnn_define_tensor_value for tensor %u failed: %s", t, status_name(s));
    }
  }
  const size_t threads = d->pool != nullptr ? pthreadpool_get_threads_count(d->pool) : 1;
  d->stats.blocked_convolutions = 0;
  d->stats.winograd_convolutions = 0;
  for (uint32_t i = 0; i < d->num_nodes; ++i) {
    const fb::Node* node = d->graph->nodes()->Get(i);
    // The node as this runtime defines it: the exporter's Winograd flags hold only on pools of
    // at most kWinogradMaxThreads threads (xnnpack_backend.h).
    NodeAttrs a = d->attrs[i];
    if (a.op == fb::OpType::Convolution2d && (a.flags & kWinogradFlag) != 0) {
      if (threads > kWinogradMaxThreads) {
        a.flags &= ~(kWinogradFlag | kWinograd2x2Flag);
      } else {
        d->stats.winograd_convolutions++;
      }
    }
    const char* api = "";
    if (a.op == fb::OpType::Copy) {
      api = "xnn_define_copy";
      s = xnn_define_copy(guard.subgraph, node->inputs()->Get(0), node->outputs()->Get(0), 0);
    } else if (a.op == fb::OpType::StaticReshape) {
      // The derived dims, except that a -1 of the blob becomes 0: XNNPACK infers it on every
      // xnn_reshape_runtime, so the runtime follows bounded input-shape changes.
      Dims out = d->work_dims[node->outputs()->Get(0)];
      for (uint32_t k = 0; k < out.rank && k < a.new_shape_rank; ++k) {
        if (a.new_shape[k] == -1) out.d[k] = 0;
      }
      api = "xnn_define_static_reshape";
      s = xnn_define_static_reshape(guard.subgraph, out.rank, out.d, node->inputs()->Get(0), node->outputs()->Get(0), 0);
    } else if (const size_t block = conv_block(d, a, *node, threads); block != 0) {
      s = define_blocked_convolution(d, guard.subgraph, a, *node, block, &api);
      d->stats.blocked_convolutions++;
    } else {
      s = define_node(guard.subgraph, a, *node, d->work_dims, &api);
    }
    if (s != xnn_status_success) {
      return fail(diag, status_error(s), "xnnpack: node %u (%s): %s failed: %s", i, op_name(a.op), api, status_name(s));
    }
  }
  return Error::Ok;
}

// The QBInt4 filters' scale checks, for the weights cache to run on the filters it packs.
std::vector<BlockScaleCheck> block_scale_checks(const XnnDelegate* d) {
  std::vector<BlockScaleCheck> checks;
  for (uint32_t t = 0; t < d->num_tensors; ++t) {
    if (d->block_scales[t] == nullptr || d->constant_data[t] == nullptr) continue;
    const fb::Tensor* tensor = d->graph->tensors()->Get(t);  // checked by check_block_quantized
    const size_t blocks = d->declared_dims[t].d[0] * (d->declared_dims[t].d[1] / tensor->quant()->block_size());
    checks.push_back(BlockScaleCheck{d->constant_data[t], d->block_scales[t], blocks, t});
  }
  return checks;
}

// An fp16 runtime on a CPU where fp16 is expected to be slower than fp32 (fp16_advice.h): said
// once per process, not per partition.
void warn_fp16_slowdown_once(uint32_t nodes) {
  static std::atomic<bool> warned{false};
  const char* why = fp16_slowdown_reason(this_cpu_fp16_features());
  if (why == nullptr || warned.exchange(true)) return;
  EMBER_LOG(Warning, "xnnpack: an fp16 partition (%u nodes) loaded; %s", nodes, why);
}

}  // namespace

Error create_runtime(XnnDelegate* d, xnn_runtime_t* runtime, Diagnostic* diag) {
  // fp16 first when asked, then fp32. XNNPACK rewrites a subgraph while creating a runtime
  // from it, so each attempt defines a fresh one.
  xnn_status s = xnn_status_success;
  xnn_status fp16_status = xnn_status_success;
  *runtime = nullptr;
  for (bool fp16 : {true, false}) {
    if (fp16 && !d->fp16) continue;
    SubgraphGuard guard;
    EMBER_TRY(define_subgraph(d, guard, diag));
    // Profiling makes every invoke read the clock per operator: only when tracing was asked for.
    const uint32_t flags =
        (fp16 ? XNN_FLAG_FORCE_FP16_INFERENCE : 0) | (d->profile.enabled ? XNN_FLAG_BASIC_PROFILING : 0);
    xnn_workspace_t workspace = workspace_handle(d->workspace);  // the Method's, shared
    BadBlockScale bad;
    if (d->weights != nullptr) {
      const std::vector<BlockScaleCheck> checks = block_scale_checks(d);
      s = create_runtime_with_cache(d->weights, guard.subgraph, workspace, d->pool, flags, checks.data(), checks.size(),
                                    runtime, &bad);
    } else {
      s = xnn_create_runtime_v4(guard.subgraph, nullptr, workspace, d->pool, flags, runtime);
    }
    if (bad.found) return bad_block_scale(bad.tensor, bad.index, bad.bits, diag);
    if (s != xnn_status_success) {
      *runtime = nullptr;
      if (fp16) fp16_status = s;
      continue;
    }
    if (fp16) warn_fp16_slowdown_once(d->num_nodes);
    if (d->fp16 && !fp16) {
      d->fp16 = false;
      EMBER_LOG(Warning,
                "xnnpack: this partition (%u nodes) cannot run in fp16 (%s: %s); it runs in fp32. "
                "Re-export without --xnnpack-fp16 to silence this",
                d->num_nodes,
                fp16_status == xnn_status_unsupported_hardware ? "the CPU has no fp16 support XNNPACK can use"
                                                               : "an op without an fp16 kernel",
                status_name(fp16_status));
    }
    return Error::Ok;
  }
  return fail(diag, status_error(s), "xnnpack: xnn_create_runtime (%u nodes) failed: %s", d->num_nodes, status_name(s));
}

}  // namespace xnnpack
}  // namespace ember
