#include "delegates/qnn/runtime/qnn_backend.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "delegates/qnn/qnn_blob_generated.h"
#include "delegates/qnn/qnn_blob_version.h"
#include "delegates/qnn/qnn_library.h"
#include "runtime/platform/platform.h"

namespace ember {
namespace qnn {
namespace {

// One delegate: its QNN context and graph, and the tensor descriptions execute binds.
struct QnnDelegate {
  const QnnLibrary* lib = nullptr;
  ContextHandle context = nullptr;
  GraphHandle graph = nullptr;
  std::vector<Tensor> inputs, outputs;
  std::vector<std::vector<uint32_t>> dims;  // storage for the tensors' dimension arrays
  std::vector<size_t> in_bytes, out_bytes;
  std::vector<ScalarType> in_types, out_types;
  ProfileHandle profile = nullptr;  // with a tracer that wants delegate operators
  // Operator names copied out of the library's profile (its strings do not outlive the next
  // call, the tracer reads names later): fixed slots made at init, so execute never allocates.
  static constexpr size_t kMaxProfiledOps = 1024, kNameBytes = 64;
  std::vector<char> op_names;
  ~QnnDelegate() {
    if (context != nullptr) lib->api().context_free(context, nullptr);
    if (profile != nullptr && lib->api().profile_free != nullptr) lib->api().profile_free(profile);
  }
};

// Reports the library's per-operator events of the last execute as DelegateOp events. The
// HTP's detailed profile nests one event per operator ("Conv2d_2:OpId_26 (cycles)") under its
// "Accelerator (execute) time (cycles)" event; the cycles are the HTP's (the simulator's model
// of them on x86-64), so the operators are laid back to back over the call's wall time in
// proportion to their cycles (estimated_start, like XNNPACK's). Nothing is allocated.
void report_operators(const QnnDelegate& d, const BackendExecuteContext& ctx, uint64_t start_ns, uint64_t end_ns) {
  const FunctionTable& q = d.lib->api();
  const ProfileEventId* events = nullptr;
  uint32_t n = 0;
  if (q.profile_get_events(d.profile, &events, &n) != 0 || events == nullptr) return;
  for (uint32_t i = 0; i < n; ++i) {
    const ProfileEventId* ops = nullptr;
    uint32_t m = 0;
    if (q.profile_get_sub_events(events[i], &ops, &m) != 0 || ops == nullptr || m == 0) continue;
    uint64_t total = 0;
    for (uint32_t j = 0; j < m; ++j) {
      ProfileEventData data{};
      if (q.profile_get_event_data(ops[j], &data) == 0) total += data.value;
    }
    if (total == 0) continue;
    const double ns_per_cycle = double(end_ns - start_ns) / double(total);
    uint64_t cycles = 0;
    for (uint32_t j = 0; j < m && j < QnnDelegate::kMaxProfiledOps; ++j) {
      ProfileEventData data{};
      if (q.profile_get_event_data(ops[j], &data) != 0) continue;
      TraceEvent e;
      e.kind = TraceEventKind::DelegateOp;
      e.estimated_start = true;
      e.run = ctx.run;
      e.instruction = ctx.instruction;
      e.delegate_op = j;
      e.delegate_index = ctx.delegate_index;
      // "Conv2d_2:OpId_26 (cycles)" -> "Conv2d" (the QNN op type; `delegate_op` is its index).
      char* name = const_cast<char*>(d.op_names.data()) + j * QnnDelegate::kNameBytes;
      size_t k = 0;
      for (const char* c = data.identifier; c != nullptr && *c != '\0' && *c != ':' && *c != ' ' &&
                                            k + 1 < QnnDelegate::kNameBytes;
           ++c) {
        name[k++] = *c;
      }
      while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9') --k;  // "Conv2d_2" -> "Conv2d"
      if (k > 0 && name[k - 1] == '_') --k;
      name[k] = '\0';
      e.name = k > 0 ? name : "qnn op";
      e.debug_name = ctx.debug_name;
      e.start_ns = start_ns + static_cast<uint64_t>(double(cycles) * ns_per_cycle);
      cycles += data.value;
      e.end_ns = start_ns + static_cast<uint64_t>(double(cycles) * ns_per_cycle);
      ctx.event_tracer->record(e);
    }
    return;  // one execute event per call
  }
}

Error describe(const flatbuffers::Vector<flatbuffers::Offset<fb::IoTensor>>* list, QnnDelegate& d, bool input,
               Diagnostic* diag) {
  if (list == nullptr) return fail(diag, Error::InvalidProgram, "qnn: blob lists no %s", input ? "inputs" : "outputs");
  for (const fb::IoTensor* t : *list) {
    if (t == nullptr || t->name() == nullptr || t->dims() == nullptr) {
      return fail(diag, Error::InvalidProgram, "qnn: blob has an incomplete tensor description");
    }
    if (!is_valid_scalar_type(t->ember_dtype())) {
      return fail(diag, Error::InvalidProgram, "qnn: blob tensor %s has an invalid dtype", t->name()->c_str());
    }
    if (t->nbytes() > UINT32_MAX) return fail(diag, Error::InvalidProgram, "qnn: blob tensor over 4 GiB");
    d.dims.emplace_back(t->dims()->begin(), t->dims()->end());
    Tensor x;
    std::memset(&x, 0, sizeof x);
    x.version = 1;
    x.v1.id = t->id();
    x.v1.name = t->name()->c_str();
    x.v1.type = input ? kAppWrite : kAppRead;
    x.v1.data_type = static_cast<DataType>(t->data_type());
    x.v1.quantize_params.definition = kDefinitionUndefined;
    x.v1.quantize_params.encoding = kEncodingUndefined;
    if (t->scale() > 0) {
      x.v1.quantize_params.definition = kDefined;
      x.v1.quantize_params.encoding = kScaleOffset;
      x.v1.quantize_params.scale_offset = ScaleOffset{t->scale(), t->offset()};
    }
    x.v1.rank = static_cast<uint32_t>(d.dims.back().size());
    x.v1.mem_type = kMemRaw;
    (input ? d.inputs : d.outputs).push_back(x);
    (input ? d.in_bytes : d.out_bytes).push_back(static_cast<size_t>(t->nbytes()));
    (input ? d.in_types : d.out_types).push_back(static_cast<ScalarType>(t->ember_dtype()));
  }
  return Error::Ok;
}

class QnnBackend final : public Backend {
 public:
  bool is_available() const override { return QnnLibrary::get(nullptr) != nullptr; }
  const char* unavailable_reason() const override {
    static std::string reason;  // set once, from the library's first failure
    if (reason.empty()) {
      std::string e;
      if (QnnLibrary::get(&e) == nullptr) reason = e;
    }
    return reason.c_str();
  }

  Result<void*> init(BackendInitContext& context, Span<const uint8_t> blob, Span<const CompileSpecView>) override {
    flatbuffers::Verifier verifier(blob.data(), blob.size());
    if (!fb::BlobBufferHasIdentifier(blob.data()) || !fb::VerifyBlobBuffer(verifier)) {
      return fail(context.diag, Error::InvalidProgram, "qnn: the delegate blob is corrupt (re-export the program)");
    }
    const fb::Blob* b = fb::GetBlob(blob.data());
    if (b->version() != kQnnBlobVersion) {
      return fail(context.diag, Error::VersionMismatch, "qnn: blob version %u, this runtime reads %u (re-export)",
                  b->version(), kQnnBlobVersion);
    }
    if (b->context_binary() == nullptr || b->context_binary()->size() == 0 || b->graph_name() == nullptr) {
      return fail(context.diag, Error::InvalidProgram, "qnn: the blob has no context binary");
    }
    // The I/O descriptions are checked before the library is asked for anything (the .pte
    // fuzzer runs without the library and reaches this far).
    auto d = std::make_unique<QnnDelegate>();
    if (Error e = describe(b->inputs(), *d, true, context.diag); e != Error::Ok) return e;
    if (Error e = describe(b->outputs(), *d, false, context.diag); e != Error::Ok) return e;
    std::string error;
    const QnnLibrary* lib = QnnLibrary::get(&error);
    if (lib == nullptr) return fail(context.diag, Error::NotSupported, "%s", error.c_str());
    if (b->core_api_major() != lib->api_version().core_api.major) {
      return fail(context.diag, Error::NotSupported,
                  "qnn: the program was compiled with QNN core API %u.x, the library %s implements %u.%u",
                  b->core_api_major(), lib->path().c_str(), lib->api_version().core_api.major,
                  lib->api_version().core_api.minor);
    }
    d->lib = lib;
    size_t k = 0;
    for (Tensor& t : d->inputs) t.v1.dimensions = d->dims[k++].data();
    for (Tensor& t : d->outputs) t.v1.dimensions = d->dims[k++].data();
    const FunctionTable& q = lib->api();
    if (context.event_tracer != nullptr && context.event_tracer->wants_delegate_ops() && q.profile_create != nullptr &&
        q.profile_create(lib->backend(), kProfileLevelDetailed, &d->profile) != 0) {
      d->profile = nullptr;  // the library gives no profile: the call is traced as a whole
    }
    if (d->profile != nullptr) d->op_names.assign(QnnDelegate::kMaxProfiledOps * QnnDelegate::kNameBytes, '\0');
    ErrorHandle e = q.context_create_from_binary(lib->backend(), lib->device(), nullptr, b->context_binary()->data(),
                                                 b->context_binary()->size(), &d->context, nullptr);
    if (e != 0) {
      d->context = nullptr;
      return fail(context.diag, Error::BackendFailed,
                  "qnn: the library rejected the context binary (%s); it is corrupt or was compiled for another "
                  "SoC or QNN version: re-export the program with this library",
                  lib->message(e).c_str());
    }
    e = q.graph_retrieve(d->context, b->graph_name()->c_str(), &d->graph);
    if (e != 0) {
      return fail(context.diag, Error::BackendFailed, "qnn: graph %s not in the context binary (%s)",
                  b->graph_name()->c_str(), lib->message(e).c_str());
    }
    return static_cast<void*>(d.release());
  }

  Error execute(BackendExecuteContext& context, void* handle, EValue** args, size_t num_args) override {
    if (handle == nullptr) return fail(context.diag, Error::InvalidState, "qnn: execute without init");
    QnnDelegate& d = *static_cast<QnnDelegate*>(handle);
    const size_t ni = d.inputs.size(), no = d.outputs.size();
    if (num_args != ni + no) {
      return fail(context.diag, Error::InvalidProgram, "qnn: delegate call has %zu arguments, the graph %zu",
                  num_args, ni + no);
    }
    for (size_t i = 0; i < ni + no; ++i) {
      const bool input = i < ni;
      const size_t j = input ? i : i - ni;
      if (args[i] == nullptr || !args[i]->is_tensor() || args[i]->as_tensor == nullptr) {
        return fail(context.diag, Error::InvalidArgument, "qnn: argument %zu is not a tensor", i);
      }
      ember::Tensor& t = *args[i]->as_tensor;
      const size_t want = input ? d.in_bytes[j] : d.out_bytes[j];
      const ScalarType type = input ? d.in_types[j] : d.out_types[j];
      if (t.dtype != type || t.nbytes() != want || t.data == nullptr || !t.is_contiguous()) {
        return fail(context.diag, Error::InvalidArgument,
                    "qnn: argument %zu is %s of %zu bytes; the compiled graph needs a contiguous %s of %zu bytes", i,
                    scalar_type_name(t.dtype), t.nbytes(), scalar_type_name(type), want);
      }
      ClientBuffer& buf = input ? d.inputs[j].v1.client_buf : d.outputs[j].v1.client_buf;
      buf.data = t.data;
      buf.data_size = static_cast<uint32_t>(want);
    }
    const bool profiling = d.profile != nullptr && context.event_tracer != nullptr;
    const uint64_t start_ns = profiling ? platform_monotonic_ns() : 0;
    const ErrorHandle e =
        d.lib->api().graph_execute(d.graph, d.inputs.data(), static_cast<uint32_t>(ni), d.outputs.data(),
                                   static_cast<uint32_t>(no), profiling ? d.profile : nullptr, nullptr);
    if (e == 0 && profiling) report_operators(d, context, start_ns, platform_monotonic_ns());
    if (e != 0) {
      const char* text = nullptr;
      if (d.lib->api().error_get_message != nullptr) d.lib->api().error_get_message(e, &text);
      return fail(context.diag, Error::BackendFailed, "qnn: graphExecute failed: error %llu (%s)",
                  static_cast<unsigned long long>(e), text != nullptr ? text : "no message");
    }
    return Error::Ok;
  }

  void destroy(void* handle) override { delete static_cast<QnnDelegate*>(handle); }
};

QnnBackend g_backend;
const bool g_registered = register_backend("qnn", &g_backend);

}  // namespace

Backend& qnn_backend() {
  (void)g_registered;
  return g_backend;
}

}  // namespace qnn
}  // namespace ember
