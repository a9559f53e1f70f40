// Program: a loaded .pte file. Cheap to keep; methods are loaded from it on demand.
//
// Lifetime: the DataLoader must outlive the Program when it returns in-place buffers
// (BufferDataLoader, MmapDataLoader); so must the DataFiles it was loaded against. Every
// Method loaded from a Program must be destroyed before the Program. Thread-safety: a loaded Program is immutable; several threads may
// call its const methods and load Methods from it concurrently.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/content_digest.h"
#include "runtime/core/little_endian.h"
#include "runtime/core/event_tracer.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/loader/data_loader.h"
#include "runtime/platform/diagnostic.h"
#include "runtime/program/data_file.h"
#include "runtime/program/method_meta.h"

namespace ember {
namespace schema {
struct Program;
struct Method;
}  // namespace schema

class Method;
class ThreadPool;
struct MemoryManager;

class Program {
 public:
  enum class Verification {
    Minimal,  // header + FlatBuffer identifier: for trusted files, fastest load
    Full,     // FlatBuffer verifier + semantic checks of every index, size, offset, enum
  };

  // The data files a program exported with `--external-weights` reads its weights from
  // (docs/pte-format.md, "Data files"). Every external segment is resolved at load: its key
  // must be in one of `files` (searched in order) with the dtype, sizes and content digest
  // the program recorded; otherwise load fails with a message naming the tensor.
  struct ExternalData {
    // Not owned; none null; each must outlive the Program. At most kMaxDataFiles.
    Span<const DataFile* const> files;
    // Accept entries whose bytes differ from the exported ones (same key, dtype and sizes):
    // weights updated in the data file without re-exporting the program.
    bool allow_updated_weights = false;
  };
  static constexpr size_t kMaxDataFiles = 8;

  static Result<Program> load(DataLoader* loader, Verification verification = Verification::Full,
                              Diagnostic* diag = nullptr);
  static Result<Program> load(DataLoader* loader, Verification verification, Diagnostic* diag,
                              const ExternalData& data);

  Program(Program&&) noexcept;  // defined out of line: one copy of the code (core size)
  Program& operator=(Program&&) = default;

  size_t num_methods() const;
  // Name of method `index`; NotFound when out of range. Points into the program.
  Result<const char*> method_name(size_t index) const;
  // Metadata without initialising the method (no allocation).
  Result<MethodMeta> method_meta(const char* name) const;
  // Loads and initialises a method in `memory` (see Method). Program must outlive it.
  // `thread_pool` (may be null) is used by kernels and handed to delegates at init.
  // Both overloads are defined by //runtime/executor (runtime/executor/method.h), which
  // depends on this component, never the reverse: include method.h to call them.
  Result<Method> load_method(const char* name, MemoryManager* memory,
                             Diagnostic* diag = nullptr, ThreadPool* thread_pool = nullptr) const;
  // The same with event tracing: `event_tracer` (may be null) receives init events and stays
  // attached (runtime/core/event_tracer.h). Only a binary that calls this overload (or
  // Method::set_event_tracer) links the tracing code (runtime/executor/method_tracing.cc).
  Result<Method> load_method(const char* name, MemoryManager* memory, Diagnostic* diag,
                             ThreadPool* thread_pool, EventTracer* event_tracer) const;

  // Mutable state shared by several methods (a KV cache of prefill and decode methods): the
  // caller provides one buffer per entry (MemoryManager::shared_state), initialises it once
  // with init_shared_state() and hands the same buffers to every method it loads.
  size_t num_shared_state() const;
  // Name ("layers.0.k_cache") and byte size of entry `index`; NotFound when out of range.
  Result<const char*> shared_state_name(size_t index) const;
  Result<size_t> shared_state_nbytes(size_t index) const;
  // Writes entry `index`'s initial value into `buffer` (at least shared_state_nbytes bytes).
  Error init_shared_state(size_t index, Span<uint8_t> buffer) const;

  // Program metadata (`ember export --metadata key=value`), readable without loading a
  // method. The strings point into the program (NUL-terminated) and live as long as it.
  size_t num_metadata() const;
  // Key and value of entry `index`; NotFound when out of range.
  Result<const char*> metadata_key(size_t index) const;
  Result<const char*> metadata_value(size_t index) const;
  // Value of `key`; NotFound when the program has no such key.
  Result<const char*> metadata(const char* key) const;
  // Bytes of data segment `index` (in this file or, for an external segment, in its data
  // file); InvalidProgram when out of range.
  Result<Span<const uint8_t>> segment(uint32_t index) const;
  // Segments kept in data files (0 for a self-contained program).
  size_t num_external_segments() const;
  // The data files the program was loaded against (Program::ExternalData), in search order.
  size_t num_data_files() const { return num_data_files_; }
  const DataFile* data_file(size_t index) const { return index < num_data_files_ ? data_files_[index] : nullptr; }
  // The segments inside this file as one range (every non-external segment(i) lies inside
  // it; empty without segments): lets a delegate name a pointer into the weights by its
  // offset, which is the same in every process that loads this file.
  Span<const uint8_t> segment_area() const {
    return Span<const uint8_t>(static_cast<const uint8_t*>(segment_data_.data()), segment_data_.size());
  }
  // The file header's content digest of the program's bytes (file_header.h); zero when the
  // writer computed none. Not recomputed at load: caches trust it to name the content.
  ContentDigest content_digest() const {
    ContentDigest d;
    d.lo = read_le(reinterpret_cast<const uint8_t*>(&content_digest_lo_), 8);
    d.hi = read_le(reinterpret_cast<const uint8_t*>(&content_digest_hi_), 8);
    return d;
  }
  const schema::Program* flatbuffer() const { return program_; }
  const schema::Method* find_method(const char* name) const;

 private:
  Program() = default;
  // Header, FlatBuffer, segments and (Full) validation; no data files bound.
  static Result<Program> load_file(DataLoader* loader, Verification verification, Diagnostic* diag);
  // Finds every external segment in the data files and checks it (ExternalData).
  Error bind_external_data(const ExternalData& data, Diagnostic* diag);
  // The entry named `key` in the first data file that holds it; NotFound otherwise.
  Result<DataEntryView> find_data_entry(const char* key, size_t key_size) const;
  // The bytes of external segment `index` in its data file: set by bind_external_data, so a
  // binary that never loads with data files links none of that code.
  using ExternalSegmentFn = Result<Span<const uint8_t>> (*)(const Program& program, uint32_t index);
  static Result<Span<const uint8_t>> external_segment_bytes(const Program& program, uint32_t index);
  ExternalSegmentFn external_segment_ = nullptr;
  FreeableBuffer program_data_;
  const DataFile* data_files_[kMaxDataFiles] = {};
  size_t num_data_files_ = 0;
  FreeableBuffer segment_data_;
  const schema::Program* program_ = nullptr;
  // The header's 16 digest bytes as stored (little-endian), decoded on demand.
  uint64_t content_digest_lo_ = 0;
  uint64_t content_digest_hi_ = 0;
};

}  // namespace ember
