#include "extension/module/module.h"

#include <algorithm>
#include <cstdlib>

#include "runtime/loader/buffer_data_loader.h"
#include "runtime/loader/file_data_loader.h"
#include "runtime/loader/mmap_data_loader.h"
#include "extension/module/module_call_guard.h"
#include "extension/module/shared_data_file.h"
#include "extension/threadpool/thread_pool_factory.h"
#include "runtime/platform/platform.h"

namespace ember {

namespace {

// ModuleMemory's default: the C heap.
class HeapMemory final : public ModuleMemory {
 public:
  void* allocate(size_t bytes, size_t alignment) override {
    void* p = nullptr;
    return posix_memalign(&p, alignment, bytes) == 0 ? p : nullptr;
  }
  void deallocate(void* block) override { std::free(block); }
};
HeapMemory g_heap_memory;

// The end of every message about memory the Module could not get.
constexpr char kNoRoom[] = ": the process (or ModuleOptions::memory) has no room for it; free memory and call again";

}  // namespace

// Memory owned for one loaded method: allocator buffer, arenas, temp, and output views.
struct Module::LoadedMethod {
  explicit LoadedMethod(ModuleMemory* m) : memory(m) {}
  ~LoadedMethod() {
    method.reset();  // delegates may use their method allocator's memory while they go
    for (void* b : buffers) memory->deallocate(b);
  }
  LoadedMethod(const LoadedMethod&) = delete;
  LoadedMethod& operator=(const LoadedMethod&) = delete;

  ModuleMemory* memory;
  std::vector<void*> buffers;  // from `memory`
  std::vector<Span<uint8_t>> arenas;
  MemoryAllocator method_allocator;
  MemoryAllocator temp_allocator;
  MemoryManager memory_manager;
  std::unique_ptr<Method> method;
  std::vector<Output> outputs;
  size_t arena_bytes = 0;
  size_t total_bytes = 0;  // arenas + temp + method allocator (ModuleOptions::memory_budget_bytes)

  uint8_t* allocate(size_t bytes) {
    void* p = memory->allocate(bytes == 0 ? 64 : bytes, 64);
    if (p == nullptr) return nullptr;
    buffers.push_back(p);
    return static_cast<uint8_t*>(p);
  }
  void free_last() {
    memory->deallocate(buffers.back());
    buffers.pop_back();
  }
};

ModuleMemory& Module::memory() const { return options_.memory != nullptr ? *options_.memory : g_heap_memory; }

Module::Module(std::string path) : Module(std::move(path), Options()) {}

Module::Module(std::string path, Options options) : path_(std::move(path)), options_(std::move(options)) {}

Module::Module(std::string path, std::vector<std::string> data_files, Options options)
    : path_(std::move(path)), options_(std::move(options)) {
  options_.data_files = std::move(data_files);
}

Module::Module(const void* data, size_t size, Options options)
    : buffer_(data), buffer_size_(size), options_(options) {}

Module::~Module() {
  methods_.clear();  // methods before the program they point into
  for (Span<uint8_t>& s : shared_state_) memory().deallocate(s.data());
  shared_state_.clear();
  program_.reset();
  loader_.reset();
  data_files_.clear();  // after the program that reads them
}

Status Module::load() {
  EMBER_ONE_CALL_AT_A_TIME();
  if (program_ != nullptr) return Status::Ok();
  const uint64_t start_ns = options_.event_tracer != nullptr ? platform_monotonic_ns() : 0;
  if (buffer_ != nullptr) {
    loader_.reset(new BufferDataLoader(buffer_, buffer_size_));
  } else if (options_.load_mode == LoadMode::File) {
    Result<FileDataLoader> loader = FileDataLoader::open(path_.c_str());
    if (!loader.ok()) return Status(loader.error(), "cannot open '" + path_ + "': check the path and permissions");
    loader_.reset(new FileDataLoader(std::move(*loader)));
  } else {
    auto lock = options_.load_mode == LoadMode::MmapUseMlock ? MmapDataLoader::Lock::Mlock
                                                             : MmapDataLoader::Lock::None;
    Result<MmapDataLoader> loader = MmapDataLoader::open(path_.c_str(), lock);
    if (!loader.ok()) {
      return Status(loader.error(), "cannot map '" + path_ + "': check the path" +
                                        (lock == MmapDataLoader::Lock::Mlock ? " and RLIMIT_MEMLOCK" : ""));
    }
    loader_.reset(new MmapDataLoader(std::move(*loader)));
  }
  std::vector<const DataFile*> files;
  for (const std::string& data_path : options_.data_files) {
    auto shared = open_shared_data_file(data_path, options_.load_mode, options_.data_verification);
    if (!shared.ok()) {
      loader_.reset();
      data_files_.clear();
      return shared.error();
    }
    data_files_.push_back(*shared);
    files.push_back(&(*shared)->file());
  }
  Program::ExternalData external;
  external.files = Span<const DataFile* const>(files.data(), files.size());
  external.allow_updated_weights = options_.allow_updated_weights;
  Diagnostic diag;
  Result<Program> program = Program::load(loader_.get(), options_.verification, &diag, external);
  if (!program.ok()) {
    loader_.reset();
    data_files_.clear();
    return Status(program.error(), diag.message[0] ? diag.message : "cannot load the program");
  }
  program_.reset(new Program(std::move(*program)));
  // State several methods share (a KV cache of prefill and decode): one buffer each for the
  // Module's life, initialised here; every method loaded later is handed the same buffers.
  for (size_t i = 0; i < program_->num_shared_state(); ++i) {
    const size_t bytes = *program_->shared_state_nbytes(i);
    void* p = memory().allocate(bytes == 0 ? 64 : bytes, 64);
    if (p == nullptr) {
      for (Span<uint8_t>& done : shared_state_) memory().deallocate(done.data());
      shared_state_.clear();
      program_.reset();
      loader_.reset();
      data_files_.clear();
      return Status(Error::OutOfMemory, "cannot allocate shared state of " + std::to_string(bytes) + " bytes" + kNoRoom);
    }
    shared_state_.emplace_back(static_cast<uint8_t*>(p), bytes);
  }
  Status init = init_shared_state();
  if (!init.ok()) return init;
  if (options_.event_tracer != nullptr) {
    TraceEvent e;
    e.kind = TraceEventKind::ProgramLoad;
    e.name = buffer_ != nullptr ? "<memory>" : path_.c_str();
    e.start_ns = start_ns;
    e.end_ns = platform_monotonic_ns();
    options_.event_tracer->record(e);
  }
  return Status::Ok();
}

Expected<std::vector<std::string>> Module::method_names() {
  EMBER_ONE_CALL_AT_A_TIME();
  Status s = load();
  if (!s.ok()) return s;
  std::vector<std::string> names;
  for (size_t i = 0; i < program_->num_methods(); ++i) names.push_back(*program_->method_name(i));
  return names;
}

Expected<std::vector<std::pair<std::string, std::string>>> Module::metadata() {
  EMBER_ONE_CALL_AT_A_TIME();
  Status s = load();
  if (!s.ok()) return s;
  std::vector<std::pair<std::string, std::string>> entries;
  for (size_t i = 0; i < program_->num_metadata(); ++i) {
    entries.emplace_back(*program_->metadata_key(i), *program_->metadata_value(i));
  }
  return entries;
}

Expected<std::string> Module::metadata(const std::string& key) {
  EMBER_ONE_CALL_AT_A_TIME();
  Status s = load();
  if (!s.ok()) return s;
  Result<const char*> value = program_->metadata(key.c_str());
  if (value.ok()) return std::string(*value);
  std::string keys;
  for (size_t i = 0; i < program_->num_metadata(); ++i) keys += std::string(keys.empty() ? "" : ", ") + *program_->metadata_key(i);
  return Status(Error::NotFound, "the program has no metadata '" + key + "' (" +
                                     (keys.empty() ? std::string("it has none") : "it has: " + keys) +
                                     "); export it with ember export --metadata " + key + "=VALUE");
}

Expected<MethodMeta> Module::method_meta(const std::string& name) {
  EMBER_ONE_CALL_AT_A_TIME();
  Status s = load();
  if (!s.ok()) return s;
  Result<MethodMeta> meta = program_->method_meta(name.c_str());
  if (!meta.ok()) return Status(Error::NotFound, "the program has no method named '" + name + "'");
  return *meta;
}

Status Module::load_method(const std::string& name) {
  EMBER_ONE_CALL_AT_A_TIME();
  if (methods_.count(name) != 0) return Status::Ok();
  Status s = load();
  if (!s.ok()) return s;
  Result<MethodMeta> meta = program_->method_meta(name.c_str());
  if (!meta.ok()) {
    std::string known;
    for (size_t i = 0; i < program_->num_methods(); ++i) {
      known += (i ? ", " : "") + std::string(*program_->method_name(i));
    }
    return Status(Error::NotFound, "the program has no method named '" + name + "' (it has: " + known + ")");
  }
  if (options_.memory_budget_bytes > 0) {
    size_t arenas = 0;
    for (size_t i = 0; i < meta->num_arenas(); ++i) arenas += *meta->arena_size(i);
    const size_t in_use = memory_in_use();
    const size_t wanted = arenas + options_.temp_allocator_bytes;
    if (in_use + wanted > options_.memory_budget_bytes) {
      return Status(Error::OutOfMemory,
                    "method '" + name + "' needs " + std::to_string(wanted) + " bytes (planned arenas " +
                        std::to_string(arenas) + ", temp allocator " + std::to_string(options_.temp_allocator_bytes) +
                        ") on top of the " + std::to_string(in_use) + " this Module holds, over its budget of " +
                        std::to_string(options_.memory_budget_bytes) +
                        " bytes: raise ModuleOptions::memory_budget_bytes, lower temp_allocator_bytes, or export with "
                        "smaller inputs");
    }
  }
  std::unique_ptr<LoadedMethod> lm(new LoadedMethod(&memory()));
  for (size_t i = 0; i < meta->num_arenas(); ++i) {
    size_t bytes = *meta->arena_size(i);
    uint8_t* p = lm->allocate(bytes);
    if (p == nullptr) {
      return Status(Error::OutOfMemory, "cannot allocate an arena of " + std::to_string(bytes) + " bytes" + kNoRoom);
    }
    lm->arenas.emplace_back(p, bytes);
    lm->arena_bytes += bytes;
  }
  uint8_t* temp = lm->allocate(options_.temp_allocator_bytes);
  if (temp == nullptr) {
    return Status(Error::OutOfMemory, "cannot allocate the temp allocator of " + std::to_string(options_.temp_allocator_bytes) +
                                          " bytes" + kNoRoom + " (or lower ModuleOptions::temp_allocator_bytes)");
  }
  lm->temp_allocator = MemoryAllocator(temp, options_.temp_allocator_bytes);
  // Size the method allocator by trying: a failed init reports the bytes it needed.
  size_t method_bytes = 64 << 10;
  // bytes_needed() covers the allocations up to the first failure only (later ones, e.g. of
  // further delegates, are unknown), so grow at least geometrically.
  for (int attempt = 0; attempt < 16; ++attempt) {
    uint8_t* p = lm->allocate(method_bytes);
    if (p == nullptr) {
      return Status(Error::OutOfMemory, "cannot allocate the method allocator of " + std::to_string(method_bytes) + " bytes" + kNoRoom);
    }
    lm->method_allocator = MemoryAllocator(p, method_bytes);
    lm->memory_manager.method_allocator = &lm->method_allocator;
    lm->memory_manager.planned_arenas = Span<Span<uint8_t>>(lm->arenas.data(), lm->arenas.size());
    lm->memory_manager.temp_allocator = &lm->temp_allocator;
    lm->memory_manager.shared_state = Span<Span<uint8_t>>(shared_state_.data(), shared_state_.size());
    Diagnostic diag;
    Result<Method> method = program_->load_method(name.c_str(), &lm->memory_manager, &diag, thread_pool_.get(),
                                                         options_.event_tracer);
    if (method.ok()) {
      lm->method.reset(new Method(std::move(*method)));
      break;
    }
    if (method.error() != Error::OutOfMemory || lm->method_allocator.bytes_needed() <= method_bytes) {
      return Status(method.error(), diag.message);
    }
    method_bytes = std::max(lm->method_allocator.bytes_needed() + 4096, 2 * method_bytes);
    lm->free_last();
  }
  if (lm->method == nullptr) return Status(Error::OutOfMemory, "cannot size the method allocator");
  lm->total_bytes = lm->arena_bytes + options_.temp_allocator_bytes + method_bytes;
  if (options_.memory_budget_bytes > 0 && memory_in_use() + lm->total_bytes > options_.memory_budget_bytes) {
    return Status(Error::OutOfMemory, "method '" + name + "' needs " + std::to_string(lm->total_bytes) +
                                          " bytes with its method allocator, over the Module's budget of " +
                                          std::to_string(options_.memory_budget_bytes) +
                                          " bytes: raise ModuleOptions::memory_budget_bytes");
  }
  for (size_t i = 0; i < lm->method->num_outputs(); ++i) lm->outputs.emplace_back(&lm->method->output(i));
  methods_[name] = std::move(lm);
  return Status::Ok();
}

Status Module::method_for(const std::string& name, LoadedMethod** out) {
  Status s = load_method(name);
  if (!s.ok()) return s;
  *out = methods_[name].get();
  return Status::Ok();
}

Status Module::set_input(const std::string& name, size_t index, const Input& input) {
  EMBER_ONE_CALL_AT_A_TIME();
  LoadedMethod* lm = nullptr;
  Status s = method_for(name, &lm);
  if (!s.ok()) return s;
  Error err = input.is_tensor() ? lm->method->bind_input(index, *input.tensor())
                                : lm->method->set_input(index, input.scalar());
  if (err != Error::Ok) return Status(err, lm->method->last_error_message());
  return Status::Ok();
}

Expected<Outputs> Module::execute(const std::string& name, const std::vector<Input>& inputs) {
  EMBER_ONE_CALL_AT_A_TIME();
  LoadedMethod* lm = nullptr;
  Status s = method_for(name, &lm);
  if (!s.ok()) return s;
  if (inputs.size() != lm->method->num_inputs()) {
    return Status(Error::InvalidArgument, "method '" + name + "' takes " +
                                              std::to_string(lm->method->num_inputs()) + " inputs, got " +
                                              std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    Error err = inputs[i].is_tensor() ? lm->method->bind_input(i, *inputs[i].tensor())
                                      : lm->method->set_input(i, inputs[i].scalar());
    if (err != Error::Ok) return Status(err, lm->method->last_error_message());
  }
  return execute(name);
}

Expected<Outputs> Module::execute(const std::string& name) {
  EMBER_ONE_CALL_AT_A_TIME();
  LoadedMethod* lm = nullptr;
  Status s = method_for(name, &lm);
  if (!s.ok()) return s;
  Error err = lm->method->execute();
  if (err != Error::Ok) return Status(err, lm->method->last_error_message());
  return Outputs(lm->outputs.data(), lm->outputs.size());
}

Status Module::set_output_buffer(const std::string& name, size_t index, void* data, size_t nbytes) {
  EMBER_ONE_CALL_AT_A_TIME();
  LoadedMethod* lm = nullptr;
  Status s = method_for(name, &lm);
  if (!s.ok()) return s;
  Error err = lm->method->set_output_buffer(index, data, nbytes);
  if (err != Error::Ok) return Status(err, lm->method->last_error_message());
  return Status::Ok();
}

Status Module::reset_state(const std::string& name) {
  EMBER_ONE_CALL_AT_A_TIME();
  LoadedMethod* lm = nullptr;
  Status s = method_for(name, &lm);
  if (!s.ok()) return s;
  Error err = lm->method->reset_state();
  if (err != Error::Ok) return Status(err, "cannot reset the method's state");
  return Status::Ok();
}

size_t Module::memory_in_use() const {
  size_t bytes = 0;
  for (const Span<uint8_t>& s : shared_state_) bytes += s.size();
  for (const auto& [name, lm] : methods_) bytes += lm->total_bytes;
  return bytes;
}

Status Module::init_shared_state() {
  for (size_t i = 0; i < shared_state_.size(); ++i) {
    if (program_->init_shared_state(i, shared_state_[i]) != Error::Ok) {
      return Status(Error::InvalidProgram, "cannot initialise shared state '" +
                                               std::string(*program_->shared_state_name(i)) + "'; re-export the program");
    }
  }
  return Status::Ok();
}

Status Module::reset_state() {
  EMBER_ONE_CALL_AT_A_TIME();
  Status s = load();
  if (!s.ok()) return s;
  for (auto& [name, lm] : methods_) {
    if (lm->method->reset_state() != Error::Ok) return Status(Error::InvalidState, "cannot reset the state of '" + name + "'");
  }
  return init_shared_state();
}

Status Module::set_num_threads(size_t threads) {
  EMBER_ONE_CALL_AT_A_TIME();
  if (threads == 0) return Status(Error::InvalidArgument, "thread count must be at least 1");
  const size_t cpus = available_cpus();
  if (threads > cpus) threads = cpus;
  num_threads_ = threads;
  thread_pool_ = threads > 1 ? create_thread_pool(threads) : nullptr;
  if (threads > 1 && thread_pool_ == nullptr) {
    return Status(Error::NotSupported, "cannot create a thread pool of " + std::to_string(threads) + " threads");
  }
  // Delegates bind the pool when they are initialised: reload methods lazily.
  methods_.clear();
  return program_ == nullptr ? Status::Ok() : init_shared_state();  // reloaded methods start afresh
}

Expected<Module::MemoryUsage> Module::memory_usage(const std::string& name) const {
  EMBER_ONE_CALL_AT_A_TIME();
  auto it = methods_.find(name);
  if (it == methods_.end()) return Status(Error::InvalidState, "method '" + name + "' is not loaded");
  MemoryUsage usage;
  usage.method_allocator_bytes = it->second->method_allocator.high_water();
  usage.planned_arena_bytes = it->second->arena_bytes;
  usage.temp_bytes = it->second->temp_allocator.high_water();
  return usage;
}

Method* Module::method(const std::string& name) {
  CallGuard call_guard(this);
  if (!call_guard.ok()) return nullptr;
  auto it = methods_.find(name);
  return it == methods_.end() ? nullptr : it->second->method.get();
}

}  // namespace ember
