// Module: the app-facing API. Loads a .pte lazily, keeps methods loaded with their memory,
// and runs them with tensors from caller memory.
//
//   ember::Module model("mobilenet_v2.pte");            // nothing is read yet
//   auto out = model.forward({ember::from_blob(pixels, {1, 3, 224, 224})});
//   if (!out.ok()) { puts(out.error().to_string().c_str()); }
//   const float* logits = out->at(0).data<float>();
//
// Memory: each loaded method owns its method allocator, planned arenas (sized from the
// program) and a temp allocator, taken from ModuleOptions::memory (default: the C heap); after a method's first execute nothing is allocated per
// call (inputs are bound zero-copy, outputs are views of planned memory).
// Lifetimes: outputs are views valid until the next execute() of the same method,
// reset_state(), or the Module's destruction. Input memory must stay valid during execute().
// Thread-safety: a Module runs one call at a time; use one Module per thread (several Modules
// may load the same file concurrently, and share one data file). A call made while another
// thread is inside a call of the same Module does not wait and touches nothing: it returns
// InvalidState saying so. Calls taking turns from several threads (serialised by the app) are
// fine; outputs are then views that the next execute() on any thread overwrites. The inline
// accessors (is_loaded, is_method_loaded, num_threads) are not checked.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/core/evalue.h"
#include "runtime/executor/method.h"
#include "runtime/program/method_meta.h"
#include "runtime/kernel/kernel_context.h"
#include "runtime/loader/data_loader.h"
#include "extension/module/status.h"
#include "extension/module/tensor_ptr.h"
#include "runtime/program/program.h"

namespace ember {

class SharedDataFile;

// One input: a tensor (bound without copying) or a scalar.
class Input {
 public:
  Input(const TensorPtr& tensor) : tensor_(&tensor.tensor()) { value_.tag = ValueTag::Tensor; }  // NOLINT
  Input(const Tensor& tensor) : tensor_(&tensor) { value_.tag = ValueTag::Tensor; }              // NOLINT
  Input(int64_t v) { value_.tag = ValueTag::Int; value_.as_int = v; }                            // NOLINT
  Input(int v) : Input(static_cast<int64_t>(v)) {}                                                // NOLINT
  Input(double v) { value_.tag = ValueTag::Double; value_.as_double = v; }                       // NOLINT
  Input(bool v) { value_.tag = ValueTag::Bool; value_.as_bool = v; }                             // NOLINT
  bool is_tensor() const { return tensor_ != nullptr; }
  const Tensor* tensor() const { return tensor_; }
  const EValue& scalar() const { return value_; }

 private:
  const Tensor* tensor_ = nullptr;
  EValue value_;
};

// One output: a view of the method's output value.
class Output {
 public:
  Output() = default;
  explicit Output(const EValue* value) : value_(value) {}
  bool is_tensor() const { return value_ && value_->is_tensor(); }
  const Tensor& tensor() const { return *value_->as_tensor; }
  template <typename T>
  const T* data() const { return static_cast<const T*>(value_->as_tensor->data); }
  ScalarType dtype() const { return value_->as_tensor->dtype; }
  Span<const int64_t> sizes() const {
    return Span<const int64_t>(value_->as_tensor->sizes, value_->as_tensor->rank);
  }
  int64_t numel() const { return value_->as_tensor->numel(); }
  const EValue& value() const { return *value_; }

 private:
  const EValue* value_ = nullptr;
};

// A method's outputs: a view into the Module, valid as described above.
class Outputs {
 public:
  Outputs() = default;
  Outputs(const Output* data, size_t size) : data_(data), size_(size) {}
  size_t size() const { return size_; }
  const Output& at(size_t i) const { return data_[i]; }
  const Output& operator[](size_t i) const { return data_[i]; }
  const Output* begin() const { return data_; }
  const Output* end() const { return data_ + size_; }

 private:
  const Output* data_ = nullptr;
  size_t size_ = 0;
};

enum class ModuleLoadMode {
  File,          // read the file into memory
  Mmap,          // map it; weights are used in place (default)
  MmapUseMlock,  // map and lock it in RAM (no page faults during inference)
};

// Where a Module takes the memory of its methods: planned arenas, temp allocators, method
// allocators, and the program's shared state (the large, long-lived buffers; the Module's
// bookkeeping, such as its maps and strings, stays on the C++ heap). Default: the C heap.
// Calls come from the thread inside a Module call (one at a time per Module); one
// ModuleMemory may serve several Modules only if it is thread-safe.
class ModuleMemory {
 public:
  virtual ~ModuleMemory() = default;
  // `bytes` (> 0) aligned to `alignment` (a power of two, 64 here), or null when there is no
  // room: the Module call fails with OutOfMemory and keeps nothing of the attempt.
  virtual void* allocate(size_t bytes, size_t alignment) = 0;
  // Takes back a block allocate() returned (when the method or the Module goes).
  virtual void deallocate(void* block) = 0;
};

struct ModuleOptions {
  ModuleLoadMode load_mode = ModuleLoadMode::Mmap;
  Program::Verification verification = Program::Verification::Full;
  size_t temp_allocator_bytes = 8 << 20;  // kernel scratch per method
  // Receives the program-load event and the init and execute events of every method this
  // Module loads (event_tracer.h).
  // Not owned; must outlive the Module. Null: no tracing.
  EventTracer* event_tracer = nullptr;
  // The data files (.ptd) of a program exported with `--external-weights`, searched in order
  // for each tensor. Each is opened once per process and shared by every Module naming it
  // (shared_data_file.h), with `load_mode` and `data_verification` (Full hashes every tensor
  // once against its recorded digest; Structure skips that for trusted files).
  std::vector<std::string> data_files;
  DataFile::Verification data_verification = DataFile::Verification::Full;
  // Accept data file tensors whose bytes differ from the exported ones (same key, dtype and
  // sizes): weights updated without re-exporting the program (Program::ExternalData).
  bool allow_updated_weights = false;
  // The most memory the Module may take for its methods (0: no limit): every loaded method's
  // planned arenas, temp allocator and method allocator, plus the program's shared state. A
  // method that would exceed it is refused at load_method() with the numbers (OutOfMemory);
  // nothing is allocated for it. Weights are mapped, not counted.
  size_t memory_budget_bytes = 0;
  // The memory of the methods and shared state (see ModuleMemory). Not owned; must outlive
  // the Module. Null: the C heap.
  ModuleMemory* memory = nullptr;
};

// How close a bundled output must be to its expected value (Module::verify_bundled_cases).
// Besides the expected dtype and shape, an output passes when, over its n elements (NaN
// matches NaN, infinities match exactly),
//   max |got - want|     <= atol + rtol * max |want|
//   ||got - want||_2 / sqrt(n) <= atol + rtol * ||want||_2 / sqrt(n)   (RMS: relative L2)
// Both bounds scale with the output as a whole, not each element: a correct fp32 program
// differs from PyTorch by rounding relative to the output's large values, which can be far
// more than rtol of a near-zero element. rtol = atol = 0 asks for exact equality.
struct BundledTolerance {
  double rtol = 0.0;
  double atol = 0.0;
};
// The defaults by output dtype: float32 and float64 rtol 1e-4, atol 1e-5 (rounding passes, a
// 1% error fails); float16 rtol 1e-2, atol 1e-3; bfloat16 rtol 5e-2, atol 1e-2; integer and
// bool outputs exact.
BundledTolerance default_bundled_tolerance(ScalarType dtype);

struct VerifyOptions {
  // Override the per-dtype default for every output when >= 0.
  double rtol = -1.0;
  double atol = -1.0;
};

// One output of a bundled test case.
struct BundledOutputResult {
  ScalarType dtype = ScalarType::Float32;  // the expected dtype
  BundledTolerance tolerance;              // what was applied
  bool passed = false;
  double max_abs_error = 0.0;
  double max_abs_limit = 0.0;  // atol + rtol * max |want|
  double rel_l2_error = 0.0;   // ||got - want||_2 / ||want||_2 (inf when want is 0 and got is not)
};

// The outcome of one bundled test case (Module::verify_bundled_cases).
struct BundledCaseResult {
  std::string name;    // the case's name (its --bundle directory)
  std::string method;
  bool passed = false;
  double max_abs_error = 0.0;  // over every element of every output
  double max_rel_error = 0.0;  // |got - want| / |want| where want != 0 (elementwise; not a criterion)
  double rel_l2_error = 0.0;   // the largest over the outputs
  std::vector<BundledOutputResult> outputs;  // those compared
  std::string message;         // why it failed: the first mismatch or the run's error
};

class Module {
 public:
  using LoadMode = ModuleLoadMode;
  using Options = ModuleOptions;

  explicit Module(std::string path);
  Module(std::string path, Options options);
  // A program whose weights are in data files (`ember export --external-weights`):
  // Module("model.pte", {"model.ptd"}) sets options.data_files.
  Module(std::string path, std::vector<std::string> data_files, Options options = Options());
  // Zero-copy from caller memory that outlives the Module (64-byte aligned for in-place weights).
  Module(const void* data, size_t size, Options options = Options());
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  Status load();  // loads the program (idempotent)
  bool is_loaded() const { return program_ != nullptr; }
  Expected<std::vector<std::string>> method_names();
  // Program metadata (`ember export --metadata key=value`), without loading a method:
  // every entry in file order, or one value (NotFound names the keys the program has).
  Expected<std::vector<std::pair<std::string, std::string>>> metadata();
  Expected<std::string> metadata(const std::string& key);
  Expected<MethodMeta> method_meta(const std::string& name);
  Status load_method(const std::string& name);
  bool is_method_loaded(const std::string& name) const { return methods_.count(name) != 0; }

  Expected<Outputs> execute(const std::string& name, const std::vector<Input>& inputs);
  Expected<Outputs> forward(const std::vector<Input>& inputs) { return execute("forward", inputs); }
  // Run with the inputs already bound by set_input().
  Expected<Outputs> execute(const std::string& name);
  Status set_input(const std::string& name, size_t index, const Input& input);
  // Output `index` of `name` is written to caller memory (null restores planned memory).
  Status set_output_buffer(const std::string& name, size_t index, void* data, size_t nbytes);
  // Restores the method's mutable state (e.g. a KV cache) to its initial value, including
  // state it shares with other methods (a prefill / decode program's one KV cache).
  Status reset_state(const std::string& name);
  // Restores all state: every loaded method's and every shared buffer.
  Status reset_state();

  // Threads for CPU kernels and delegates; 1 runs on the calling thread. Call it before
  // the first execute: methods already loaded are unloaded (their state is reset) and
  // reload with the new pool on next use. At most the CPUs the process may run on
  // (available_cpus(), its affinity mask) are used: more would spin against each other.
  Status set_num_threads(size_t threads);
  // The threads in use: the requested count, capped at the available CPUs.
  size_t num_threads() const { return num_threads_; }

  // Memory a loaded method uses: method allocator high-water, arenas, temp high-water.
  struct MemoryUsage {
    size_t method_allocator_bytes = 0;
    size_t planned_arena_bytes = 0;
    size_t temp_bytes = 0;
  };
  Expected<MemoryUsage> memory_usage(const std::string& name) const;
  // Direct access for advanced use (null when not loaded, or while another thread is inside a
  // call of this Module).
  Method* method(const std::string& name);

  // Runs every test case bundled in the program (`ember export --bundle`), each from the
  // method's initial state. A case passes when every output passes BundledTolerance's check,
  // with default_bundled_tolerance() of its dtype unless `options` overrides rtol / atol.
  // NotFound when the program has no bundled cases; a failing case is a result, not an error.
  Expected<std::vector<BundledCaseResult>> verify_bundled_cases(const VerifyOptions& options = VerifyOptions());
  // The same rtol and atol for every output.
  Expected<std::vector<BundledCaseResult>> verify_bundled_cases(double rtol, double atol) {
    VerifyOptions options;
    options.rtol = rtol;
    options.atol = atol;
    return verify_bundled_cases(options);
  }

 private:
  struct LoadedMethod;
  class CallGuard;  // module.cc: one public call at a time
  // The thread inside a public call of this Module (none: no call). Calls nested on that
  // thread (execute -> load_method -> load) pass.
  mutable std::atomic<std::thread::id> caller_{};
  Status method_for(const std::string& name, LoadedMethod** out);
  Status init_shared_state();
  ModuleMemory& memory() const;  // options_.memory or the C heap
  size_t memory_in_use() const;  // what memory_budget_bytes counts, over the loaded methods

  std::string path_;
  const void* buffer_ = nullptr;
  size_t buffer_size_ = 0;
  Options options_;
  std::unique_ptr<DataLoader> loader_;
  std::vector<std::shared_ptr<const SharedDataFile>> data_files_;  // outlive program_
  std::unique_ptr<Program> program_;
  // Program::num_shared_state() buffers (malloc'd, freed by ~Module): state the program's
  // methods share, persisting across calls of any of them until reset_state().
  std::vector<Span<uint8_t>> shared_state_;
  std::map<std::string, std::unique_ptr<LoadedMethod>> methods_;
  std::unique_ptr<ThreadPool> thread_pool_;
  size_t num_threads_ = 1;
};

}  // namespace ember
