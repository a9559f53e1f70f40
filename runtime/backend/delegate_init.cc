#include "runtime/backend/delegate_init.h"

#include <cstdio>

#include "runtime/program/program.h"
#include "schema/program_generated.h"

namespace ember {
namespace {

using flatbuffers::uoffset_t;

Error backend_not_linked(Diagnostic* diag, uoffset_t index, const char* id) {
  return fail(diag, Error::NotSupported,
              "delegate %u needs backend '%s', which is not linked into this binary; link its "
              "library or re-export with --backend portable", index, id);
}

Error init_registered_delegates(const DelegateInitRequest& request) {
  const auto* delegates = request.method->delegates();
  Diagnostic* diag = request.diag;
  DelegateInitObserver* observer = request.observer;
  for (uoffset_t i = 0; i < delegates->size(); ++i) {
    const schema::Delegate* d = delegates->Get(i);
    const char* id = d->backend_id()->c_str();
    Backend* backend = find_backend(id);
    if (backend == nullptr) return backend_not_linked(diag, i, id);
    if (!backend->is_available()) {
      const char* why = backend->unavailable_reason();
      return fail(diag, Error::NotSupported,
                  "backend '%s' is not available on this device%s%s; re-export with --backend portable", id,
                  why[0] != '\0' ? ": " : "", why);
    }
    Span<const uint8_t> blob;
    const flatbuffers::Vector<uint8_t>* inline_blob = d->inline_blob();
    if (d->blob_segment() >= 0) {
      Result<Span<const uint8_t>> seg = request.program->segment(static_cast<uint32_t>(d->blob_segment()));
      if (!seg.ok()) return fail(diag, Error::InvalidProgram, "delegate %u blob segment is missing", i);
      blob = *seg;
    } else if (inline_blob != nullptr) {
      blob = Span<const uint8_t>(inline_blob->data(), inline_blob->size());
      // Backends read their blobs as FlatBuffers, whose 8-byte scalars must be aligned in memory;
      // the verifier checks alignment only relative to the blob's start. Segments are 64-byte
      // aligned (program_validator.cc); an inline blob is where the file's writer put it.
      if (reinterpret_cast<uintptr_t>(blob.data()) % kDelegateBlobAlignment != 0) {
        return fail(diag, Error::InvalidProgram,
                    "delegate %u: its inline blob is not %zu-byte aligned in the program; write it as a data "
                    "segment (as ember export does) or force the vector's alignment", i, kDelegateBlobAlignment);
      }
    }
    const auto* compile_specs = d->compile_specs();
    size_t num_specs = compile_specs ? compile_specs->size() : 0;
    CompileSpecView* specs = request.allocator->allocate_array<CompileSpecView>(num_specs + 1);
    if (specs == nullptr) return method_allocator_too_small(diag, *request.allocator, "compile specs");
    for (uoffset_t k = 0; k < num_specs; ++k) {
      const schema::CompileSpec* spec = compile_specs->Get(k);
      const flatbuffers::Vector<uint8_t>* value = spec->value();
      specs[k].key = spec->key()->c_str();
      specs[k].value = value ? Span<const uint8_t>(value->data(), value->size()) : Span<const uint8_t>();
    }
    std::snprintf(request.names + i * request.name_bytes, request.name_bytes, "%s#%u", id, i);
    BackendInitContext context{request.allocator, request.program, request.thread_pool, diag};
    if (observer != nullptr) {
      context.event_tracer = observer->delegate_tracer();
      observer->delegate_init(i, false);
    }
    Result<void*> handle = backend->init(context, blob, Span<const CompileSpecView>(specs, num_specs));
    if (!handle.ok()) {
      if (diag != nullptr && diag->message[0] == 0) {
        fail(diag, handle.error(), "backend '%s' failed to initialise delegate %u", id, i);
      }
      return handle.error();
    }
    if (observer != nullptr) observer->delegate_init(i, true);
    request.backends[i] = backend;
    request.handles[i] = *handle;
  }
  return Error::Ok;
}

// Constant-initialised, so it is set before or after any other static initialiser.
Error (*g_init_delegates)(const DelegateInitRequest&) = nullptr;

}  // namespace

Error init_delegates(const DelegateInitRequest& request) {
  if (g_init_delegates == nullptr) {
    // No backend was ever registered, so find_backend() finds none for the first delegate.
    return backend_not_linked(request.diag, 0, request.method->delegates()->Get(0)->backend_id()->c_str());
  }
  return g_init_delegates(request);
}

void enable_delegate_init() { g_init_delegates = &init_registered_delegates; }

}  // namespace ember
