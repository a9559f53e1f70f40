#include "runtime/executor/method.h"

#include <cstring>

#include "runtime/executor/instruction_loop.h"
#include "runtime/kernel/kernel_selection.h"
#include "runtime/program/program.h"
#include "schema/program_generated.h"

namespace ember {

namespace {

using flatbuffers::uoffset_t;

// Builds the runtime value table entries that need memory from the method allocator.
class ValueBuilder {
 public:
  ValueBuilder(const Program& program, const schema::Method* method, MemoryManager& memory,
               Diagnostic* diag)
      : program_(program), method_(method), memory_(memory), alloc_(*memory.method_allocator), diag_(diag) {}

  Error oom(const char* what) {
    return fail(diag_, Error::OutOfMemory,
                "method allocator too small while allocating %s: %zu bytes given, at least %zu "
                "needed; enlarge the method allocator",
                what, alloc_.size(), alloc_.bytes_needed());
  }

  Error build_tensor(const schema::Tensor* st, Tensor* t) {
    uint32_t rank = st->sizes() ? st->sizes()->size() : 0;
    t->dtype = static_cast<ScalarType>(st->dtype());
    t->rank = static_cast<uint8_t>(rank);
    t->dynamic = st->dynamism() == schema::ShapeDynamism::DynamicBounded;
    int64_t* sizes = alloc_.allocate_array<int64_t>(rank == 0 ? 1 : rank * 2);
    if (sizes == nullptr) return oom("tensor sizes");
    for (uint32_t d = 0; d < rank; ++d) {
      sizes[d] = st->sizes()->Get(d);
      sizes[rank + d] = sizes[d];
    }
    t->sizes = sizes;
    t->max_sizes = sizes + rank;
    t->dim_order = (st->dim_order() && st->dim_order()->size() == rank && rank > 0)
                       ? st->dim_order()->data() : nullptr;
    t->capacity_bytes = static_cast<size_t>(st->nbytes());
    switch (st->location()) {
      case schema::DataLocation::Arena:
      case schema::DataLocation::CallerInput:
      case schema::DataLocation::MutableState:
        t->data = memory_.planned_arenas[st->arena_id()].data() + st->arena_offset();
        break;
      case schema::DataLocation::Constant: {
        Result<Span<const uint8_t>> seg = program_.segment(st->segment_index());
        if (!seg.ok()) return fail(diag_, Error::InvalidProgram, "constant tensor refers to a missing data segment");
        if (st->segment_offset() > seg->size() || st->nbytes() > seg->size() - st->segment_offset()) {
          return fail(diag_, Error::InvalidProgram, "constant tensor reads past its data segment");
        }
        // Constants are never written: the exporter never plans a constant as an output.
        t->data = const_cast<uint8_t*>(seg->data() + st->segment_offset());
        break;
      }
      case schema::DataLocation::Unplanned:
        t->data = nullptr;
        t->capacity_bytes = 0;
        break;
    }
    if (st->location() == schema::DataLocation::MutableState) {
      Result<Span<const uint8_t>> seg = program_.segment(st->segment_index());
      if (!seg.ok() || st->segment_offset() > seg->size() ||
          st->nbytes() > seg->size() - st->segment_offset()) {
        return fail(diag_, Error::InvalidProgram, "mutable state refers to a missing initial value");
      }
      std::memcpy(t->data, seg->data() + st->segment_offset(), st->nbytes());
    }
    return Error::Ok;
  }

  Error build(EValue* values, size_t num_values) {
    for (uoffset_t i = 0; i < num_values; ++i) {
      const schema::Value* sv = method_->values()->Get(i);
      EValue& v = values[i];
      switch (sv->value_type()) {
        case schema::ValueKind::NONE:
        case schema::ValueKind::None:
          v.tag = ValueTag::None;
          break;
        case schema::ValueKind::Int:
          v.tag = ValueTag::Int;
          v.as_int = sv->value_as_Int()->value();
          break;
        case schema::ValueKind::Double:
          v.tag = ValueTag::Double;
          v.as_double = sv->value_as_Double()->value();
          break;
        case schema::ValueKind::Bool:
          v.tag = ValueTag::Bool;
          v.as_bool = sv->value_as_Bool()->value();
          break;
        case schema::ValueKind::String: {
          const flatbuffers::String* s = sv->value_as_String()->value();
          v.tag = ValueTag::String;
          v.as_string = StringValue{s ? s->c_str() : "", s ? s->size() : 0};
          break;
        }
        case schema::ValueKind::Tensor: {
          Tensor* t = alloc_.allocate_array<Tensor>(1);
          if (t == nullptr) return oom("a tensor");
          new (t) Tensor();
          EMBER_TRY(build_tensor(sv->value_as_Tensor(), t));
          v.tag = ValueTag::Tensor;
          v.as_tensor = t;
          break;
        }
        case schema::ValueKind::IntList: {
          const schema::IntList* list = sv->value_as_IntList();
          size_t n = list->items() ? list->items()->size() : 0;
          int64_t* items = alloc_.allocate_array<int64_t>(n == 0 ? 1 : n);
          if (items == nullptr) return oom("an int list");
          for (size_t k = 0; k < n; ++k) items[k] = list->items()->Get(static_cast<uoffset_t>(k));
          int32_t* refs = nullptr;
          if (list->value_refs() != nullptr && list->value_refs()->size() == n && n > 0) {
            refs = alloc_.allocate_array<int32_t>(n);
            if (refs == nullptr) return oom("an int list");
            for (size_t k = 0; k < n; ++k) refs[k] = list->value_refs()->Get(static_cast<uoffset_t>(k));
          }
          v.tag = ValueTag::IntList;
          v.as_int_list = IntListValue{items, refs, values, n};
          break;
        }
        case schema::ValueKind::DoubleList: {
          const auto* items = sv->value_as_DoubleList()->items();
          size_t n = items ? items->size() : 0;
          double* copy = alloc_.allocate_array<double>(n == 0 ? 1 : n);
          if (copy == nullptr) return oom("a double list");
          for (size_t k = 0; k < n; ++k) copy[k] = items->Get(static_cast<uoffset_t>(k));
          v.tag = ValueTag::DoubleList;
          v.as_double_list = Span<const double>(copy, n);
          break;
        }
        case schema::ValueKind::BoolList: {
          const auto* items = sv->value_as_BoolList()->items();
          size_t n = items ? items->size() : 0;
          bool* copy = alloc_.allocate_array<bool>(n == 0 ? 1 : n);
          if (copy == nullptr) return oom("a bool list");
          for (size_t k = 0; k < n; ++k) copy[k] = items->Get(static_cast<uoffset_t>(k)) != 0;
          v.tag = ValueTag::BoolList;
          v.as_bool_list = Span<const bool>(copy, n);
          break;
        }
        case schema::ValueKind::TensorList:
        case schema::ValueKind::OptionalTensorList:
          break;  // second pass: needs every tensor built
      }
    }
    for (uoffset_t i = 0; i < num_values; ++i) {
      const schema::Value* sv = method_->values()->Get(i);
      bool optional = sv->value_type() == schema::ValueKind::OptionalTensorList;
      if (sv->value_type() != schema::ValueKind::TensorList && !optional) continue;
      const flatbuffers::Vector<int32_t>* items =
          optional ? sv->value_as_OptionalTensorList()->items() : sv->value_as_TensorList()->items();
      size_t n = items ? items->size() : 0;
      Tensor** list = alloc_.allocate_array<Tensor*>(n == 0 ? 1 : n);
      if (list == nullptr) return oom("a tensor list");
      for (size_t k = 0; k < n; ++k) {
        int32_t ref = items->Get(static_cast<uoffset_t>(k));
        list[k] = ref < 0 ? nullptr : values[ref].as_tensor;
      }
      values[i].tag = optional ? ValueTag::OptionalTensorList : ValueTag::TensorList;
      values[i].as_tensor_list = Span<Tensor* const>(list, n);
    }
    return Error::Ok;
  }

 private:
  const Program& program_;
  const schema::Method* method_;
  MemoryManager& memory_;
  MemoryAllocator& alloc_;
  Diagnostic* diag_;
};

int first_tensor_dtype(EValue** args, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (args[i]->is_tensor()) return static_cast<int>(args[i]->as_tensor->dtype);
    if (args[i]->is_tensor_list() && args[i]->as_tensor_list.size() > 0 && args[i]->as_tensor_list[0]) {
      return static_cast<int>(args[i]->as_tensor_list[0]->dtype);
    }
  }
  return kAnyDtype;
}

// Appends `text` to the missing-kernel list in `buffer` unless it is there already.
void append_unique(char* buffer, size_t capacity, const char* text) {
  if (std::strstr(buffer, text) != nullptr) return;
  size_t used = std::strlen(buffer);
  std::snprintf(buffer + used, capacity - used, "%s%s", used ? ", " : "", text);
}

}  // namespace

Result<Method> Program::load_method(const char* name, MemoryManager* memory, Diagnostic* diag,
                                    ThreadPool* thread_pool) const {
  const schema::Method* method = find_method(name);
  if (method == nullptr) {
    return fail(diag, Error::NotFound, "the program has no method named '%s'", name ? name : "(null)");
  }
  return Method::init(*this, method, memory, diag, thread_pool);
}

Result<Method> Method::init(const Program& program, const schema::Method* method,
                            MemoryManager* memory, Diagnostic* diag, ThreadPool* thread_pool) {
  return init_with(program, method, memory, diag, thread_pool, nullptr);
}

Result<Method> Method::init_with(const Program& program, const schema::Method* method,
                                 MemoryManager* memory, Diagnostic* diag, ThreadPool* thread_pool,
                                 InitObserver* observer) {
  if (memory == nullptr || memory->method_allocator == nullptr) {
    return fail(diag, Error::InvalidArgument, "load_method: a MemoryManager with a method allocator is required");
  }
  MethodMeta meta(method);
  for (size_t i = 0; i < meta.num_arenas(); ++i) {
    size_t need = *meta.arena_size(i);
    if (i >= memory->planned_arenas.size()) {
      return fail(diag, Error::OutOfMemory,
                  "method '%s' needs %zu planned arenas but %zu were given; size them from "
                  "MethodMeta::arena_size()", meta.name(), meta.num_arenas(), memory->planned_arenas.size());
    }
    if (memory->planned_arenas[i].size() < need ||
        (need > 0 && memory->planned_arenas[i].data() == nullptr)) {
      return fail(diag, Error::OutOfMemory,
                  "planned arena %zu of method '%s' needs %zu bytes but %zu were given", i,
                  meta.name(), need, memory->planned_arenas[i].size());
    }
    if (reinterpret_cast<uintptr_t>(memory->planned_arenas[i].data()) % 8 != 0) {
      return fail(diag, Error::InvalidArgument,
                  "planned arena %zu of method '%s' must be at least 8-byte aligned", i, meta.name());
    }
  }
  MemoryAllocator& alloc = *memory->method_allocator;
  Method m;
  m.program_ = &program;
  m.method_ = method;
  m.memory_ = *memory;
  m.thread_pool_ = thread_pool;
  auto oom = [&](const char* what) {
    return fail(diag, Error::OutOfMemory,
                "method allocator too small while allocating %s: %zu bytes given, at least %zu "
                "needed; enlarge the method allocator", what, alloc.size(), alloc.bytes_needed());
  };

  m.num_values_ = method->values() ? method->values()->size() : 0;
  m.values_ = alloc.allocate_array<EValue>(m.num_values_ == 0 ? 1 : m.num_values_);
  if (m.values_ == nullptr) return oom("the value table");
  for (size_t i = 0; i < m.num_values_; ++i) new (&m.values_[i]) EValue();
  ValueBuilder builder(program, method, *memory, diag);
  EMBER_TRY(builder.build(m.values_, m.num_values_));

  // Inputs and outputs.
  m.num_inputs_ = meta.num_inputs();
  m.input_indices_ = method->inputs() ? method->inputs()->data() : nullptr;
  m.input_planned_data_ = alloc.allocate_array<void*>(m.num_inputs_ + 1);
  m.input_planned_capacity_ = alloc.allocate_array<size_t>(m.num_inputs_ + 1);
  if (m.input_planned_capacity_ == nullptr) return oom("input tables");
  m.num_outputs_ = meta.num_outputs();
  m.output_indices_ = method->outputs() ? method->outputs()->data() : nullptr;
  m.output_planned_data_ = alloc.allocate_array<void*>(m.num_outputs_ + 1);
  m.output_planned_capacity_ = alloc.allocate_array<size_t>(m.num_outputs_ + 1);
  if (!m.input_planned_data_ || !m.output_planned_data_ || !m.output_planned_capacity_) return oom("input/output tables");
  for (size_t i = 0; i < m.num_inputs_; ++i) {
    const EValue& v = m.values_[m.input_indices_[i]];
    m.input_planned_data_[i] = v.is_tensor() ? v.as_tensor->data : nullptr;
    m.input_planned_capacity_[i] = v.is_tensor() ? v.as_tensor->capacity_bytes : 0;
  }
  for (size_t i = 0; i < m.num_outputs_; ++i) {
    const EValue& v = m.values_[m.output_indices_[i]];
    m.output_planned_data_[i] = v.is_tensor() ? v.as_tensor->data : nullptr;
    m.output_planned_capacity_[i] = v.is_tensor() ? v.as_tensor->capacity_bytes : 0;
  }

  // Mutable state.
  for (uoffset_t i = 0; i < m.num_values_; ++i) {
    const schema::Value* sv = method->values()->Get(i);
    if (sv->value_type() == schema::ValueKind::Tensor &&
        sv->value_as_Tensor()->location() == schema::DataLocation::MutableState) {
      ++m.num_state_values_;
    }
  }
  m.state_values_ = alloc.allocate_array<uint32_t>(m.num_state_values_ + 1);
  if (m.state_values_ == nullptr) return oom("the state table");
  for (uoffset_t i = 0, k = 0; i < m.num_values_; ++i) {
    const schema::Value* sv = method->values()->Get(i);
    if (sv->value_type() == schema::ValueKind::Tensor &&
        sv->value_as_Tensor()->location() == schema::DataLocation::MutableState) {
      m.state_values_[k++] = i;
    }
  }

  // Delegates.
  const size_t num_delegates = meta.num_delegates();
  m.delegate_backends_ = alloc.allocate_array<Backend*>(num_delegates + 1);
  m.delegate_handles_ = alloc.allocate_array<void*>(num_delegates + 1);
  // "<backend>#<index>": the trace name of each delegate's init and calls.
  char* delegate_names = alloc.allocate_array<char>(num_delegates * kDelegateNameBytes + 1);
  if (!m.delegate_backends_ || !m.delegate_handles_ || !delegate_names) return oom("the delegate table");
  m.delegate_names_ = delegate_names;
  m.num_delegates_ = num_delegates;  // only now may the destructor walk the tables
  for (size_t i = 0; i < m.num_delegates_; ++i) {
    m.delegate_backends_[i] = nullptr;
    m.delegate_handles_[i] = nullptr;
  }
  for (uoffset_t i = 0; i < m.num_delegates_; ++i) {
    const schema::Delegate* d = method->delegates()->Get(i);
    const char* id = d->backend_id()->c_str();
    Backend* backend = find_backend(id);
    if (backend == nullptr) {
      return fail(diag, Error::NotSupported,
                  "delegate %u needs backend '%s', which is not linked into this binary; link its "
                  "library or re-export with --backend portable", i, id);
    }
    if (!backend->is_available()) {
      const char* why = backend->unavailable_reason();
      return fail(diag, Error::NotSupported,
                  "backend '%s' is not available on this device%s%s; re-export with --backend portable", id,
                  why[0] != '\0' ? ": " : "", why);
    }
    Span<const uint8_t> blob;
    if (d->blob_segment() >= 0) {
      Result<Span<const uint8_t>> seg = program.segment(static_cast<uint32_t>(d->blob_segment()));
      if (!seg.ok()) return fail(diag, Error::InvalidProgram, "delegate %u blob segment is missing", i);
      blob = *seg;
    } else if (d->inline_blob() != nullptr) {
      blob = Span<const uint8_t>(d->inline_blob()->data(), d->inline_blob()->size());
    }
    size_t num_specs = d->compile_specs() ? d->compile_specs()->size() : 0;
    CompileSpecView* specs = alloc.allocate_array<CompileSpecView>(num_specs + 1);
    if (specs == nullptr) return oom("compile specs");
    for (uoffset_t k = 0; k < num_specs; ++k) {
      const schema::CompileSpec* spec = d->compile_specs()->Get(k);
      specs[k].key = spec->key()->c_str();
      specs[k].value = spec->value() ? Span<const uint8_t>(spec->value()->data(), spec->value()->size())
                                     : Span<const uint8_t>();
    }
    std::snprintf(delegate_names + i * kDelegateNameBytes, kDelegateNameBytes, "%s#%u", id, i);
    BackendInitContext context{&alloc, &program, thread_pool, diag};
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
    m.delegate_backends_[i] = backend;
    m.delegate_handles_[i] = *handle;
  }

  // Instructions: resolve every kernel now; report all missing ones at once.
  m.num_instructions_ = meta.num_instructions();
  m.instructions_ = alloc.allocate_array<Instruction>(m.num_instructions_ + 1);
  if (m.instructions_ == nullptr) return oom("the instruction table");
  char missing[300] = {0};
  for (uoffset_t i = 0; i < m.num_instructions_; ++i) {
    const schema::Instruction* si = method->instructions()->Get(i);
    Instruction& ins = *new (&m.instructions_[i]) Instruction();
    const flatbuffers::Vector<int32_t>* args = nullptr;
    switch (si->kind_type()) {
      case schema::InstructionKind::KernelCall:
        ins.kind = Instruction::Kind::Kernel;
        args = si->kind_as_KernelCall()->args();
        break;
      case schema::InstructionKind::DelegateCall:
        ins.kind = Instruction::Kind::Delegate;
        ins.a = si->kind_as_DelegateCall()->delegate_index();
        args = si->kind_as_DelegateCall()->args();
        break;
      case schema::InstructionKind::Move:
        ins.kind = Instruction::Kind::Move;
        ins.a = si->kind_as_Move()->from_value();
        ins.b = si->kind_as_Move()->to_value();
        break;
      case schema::InstructionKind::JumpFalse:
        ins.kind = Instruction::Kind::JumpFalse;
        ins.a = si->kind_as_JumpFalse()->condition_value();
        ins.b = si->kind_as_JumpFalse()->destination();
        break;
      default:
        ins.kind = Instruction::Kind::Nop;  // Free: memory is planned ahead of time
        break;
    }
    if (args != nullptr) {
      ins.num_args = args->size();
      ins.args = alloc.allocate_array<EValue*>(ins.num_args + 1);
      if (ins.args == nullptr) return oom("kernel arguments");
      for (uoffset_t k = 0; k < ins.num_args; ++k) ins.args[k] = &m.values_[args->Get(k)];
    }
    if (ins.kind == Instruction::Kind::Kernel) {
      const schema::Operator* op = method->operators()->Get(si->kind_as_KernelCall()->op_index());
      char key[160];
      std::snprintf(key, sizeof(key), "%s.%s", op->name()->c_str(),
                    op->overload() && op->overload()->size() ? op->overload()->c_str() : "default");
      ins.fn = find_kernel(key, first_tensor_dtype(ins.args, ins.num_args));
      ins.op_name = op->name()->c_str();
      if (ins.fn == nullptr) append_unique(missing, sizeof(missing), key);
    }
  }
  if (missing[0] != 0) {
    if (kernel_selection() != nullptr) {
      return fail(diag, Error::NotSupported,
                  "method '%s' uses operators not in this build: %s (kernels selected from %s); "
                  "rebuild with this program added to --ops-from", meta.name(), missing, kernel_selection());
    }
    return fail(diag, Error::NotSupported,
                "method '%s' uses operators with no registered kernel: %s; link the kernel "
                "library that provides them", meta.name(), missing);
  }
  m.initialized_ = true;
  return Result<Method>(static_cast<Method&&>(m));
}

Method::Method(Method&& other) noexcept
    : program_(other.program_), method_(other.method_), memory_(other.memory_),
      values_(other.values_), num_values_(other.num_values_), instructions_(other.instructions_),
      num_instructions_(other.num_instructions_), input_indices_(other.input_indices_),
      input_planned_data_(other.input_planned_data_),
      input_planned_capacity_(other.input_planned_capacity_), num_inputs_(other.num_inputs_),
      output_indices_(other.output_indices_), output_planned_data_(other.output_planned_data_),
      output_planned_capacity_(other.output_planned_capacity_), num_outputs_(other.num_outputs_),
      state_values_(other.state_values_), num_state_values_(other.num_state_values_),
      delegate_backends_(other.delegate_backends_), delegate_handles_(other.delegate_handles_),
      delegate_names_(other.delegate_names_), num_delegates_(other.num_delegates_),
      thread_pool_(other.thread_pool_), event_tracer_(other.event_tracer_),
      traced_run_(other.traced_run_), trace_runs_(other.trace_runs_), initialized_(other.initialized_), diag_(other.diag_) {
  other.initialized_ = false;
  other.num_delegates_ = 0;
  other.delegate_backends_ = nullptr;
}

Method::~Method() {
  for (size_t i = 0; i < num_delegates_; ++i) {
    if (delegate_backends_[i] != nullptr) delegate_backends_[i]->destroy(delegate_handles_[i]);
  }
}

Error Method::check_input_tensor(size_t index, const Tensor& given, Tensor** target) {
  if (!initialized_) return fail(&diag_, Error::InvalidState, "method is not initialised");
  if (index >= num_inputs_) {
    return fail(&diag_, Error::InvalidArgument, "input %zu does not exist: the method takes %zu inputs",
                index, num_inputs_);
  }
  EValue& slot = values_[input_indices_[index]];
  if (!slot.is_tensor()) {
    return fail(&diag_, Error::InvalidArgument, "input %zu is not a tensor", index);
  }
  Tensor& t = *slot.as_tensor;
  if (given.dtype != t.dtype) {
    return fail(&diag_, Error::InvalidArgument, "input %zu must be %s, got %s", index,
                scalar_type_name(t.dtype), scalar_type_name(given.dtype));
  }
  if (given.rank != t.rank) {
    return fail(&diag_, Error::InvalidArgument, "input %zu must have rank %d, got %d", index, t.rank,
                given.rank);
  }
  if (given.rank > 0 && given.sizes == nullptr) {
    return fail(&diag_, Error::InvalidArgument, "input %zu has null sizes", index);
  }
  for (int d = 0; d < t.rank; ++d) {
    int64_t s = given.sizes[d];
    if (s < 0 || s > t.max_sizes[d] || (!t.dynamic && s != t.max_sizes[d])) {
      return fail(&diag_, s > t.max_sizes[d] ? Error::OutOfBounds : Error::InvalidArgument,
                  "input %zu dimension %d has size %lld; the program expects %s%lld", index, d,
                  static_cast<long long>(s), t.dynamic ? "at most " : "",
                  static_cast<long long>(t.max_sizes[d]));
    }
  }
  if (given.numel() > 0 && given.data == nullptr) {
    return fail(&diag_, Error::InvalidArgument, "input %zu has a null data pointer", index);
  }
  if (given.dim_order != nullptr && !given.is_contiguous()) {
    return fail(&diag_, Error::NotSupported, "input %zu must be contiguous", index);
  }
  *target = &t;
  return Error::Ok;
}

Error Method::set_input(size_t index, const EValue& value) {
  if (index < num_inputs_ && initialized_ && !values_[input_indices_[index]].is_tensor()) {
    EValue& slot = values_[input_indices_[index]];
    if (value.tag != slot.tag) {
      return fail(&diag_, Error::InvalidArgument, "input %zu has the wrong kind of value", index);
    }
    if (slot.is_int() || slot.is_double() || slot.is_bool()) {
      slot = value;
      return Error::Ok;
    }
    return fail(&diag_, Error::NotSupported, "input %zu: only tensor and scalar inputs can be set", index);
  }
  if (!value.is_tensor() || value.as_tensor == nullptr) {
    return fail(&diag_, Error::InvalidArgument, "input %zu must be a tensor", index);
  }
  Tensor* t = nullptr;
  EMBER_TRY(check_input_tensor(index, *value.as_tensor, &t));
  void* planned = input_planned_data_[index];
  size_t bytes = value.as_tensor->nbytes();
  t->capacity_bytes = input_planned_capacity_[index];
  if (planned == nullptr || bytes > t->capacity_bytes) {
    return fail(&diag_, Error::OutOfBounds, "input %zu does not fit its planned storage", index);
  }
  t->data = planned;
  if (bytes > 0) std::memmove(t->data, value.as_tensor->data, bytes);
  for (int d = 0; d < t->rank; ++d) t->sizes[d] = value.as_tensor->sizes[d];
  return Error::Ok;
}

Error Method::bind_input(size_t index, const Tensor& tensor) {
  Tensor* t = nullptr;
  EMBER_TRY(check_input_tensor(index, tensor, &t));
  t->data = tensor.data;
  // Only the caller's bytes are usable: a kernel writing into this input stays inside them.
  t->capacity_bytes = tensor.nbytes();
  for (int d = 0; d < t->rank; ++d) t->sizes[d] = tensor.sizes[d];
  return Error::Ok;
}

Error Method::set_output_buffer(size_t index, void* data, size_t nbytes) {
  if (index >= num_outputs_ || !values_[output_indices_[index]].is_tensor()) {
    return fail(&diag_, Error::InvalidArgument, "output %zu is not a tensor output", index);
  }
  Tensor& t = *values_[output_indices_[index]].as_tensor;
  if (data == nullptr) {
    t.data = output_planned_data_[index];
    t.capacity_bytes = output_planned_capacity_[index];
    return Error::Ok;
  }
  if (nbytes < output_planned_capacity_[index]) {
    return fail(&diag_, Error::OutOfMemory, "output %zu needs a buffer of %zu bytes, got %zu", index,
                output_planned_capacity_[index], nbytes);
  }
  t.data = data;
  t.capacity_bytes = nbytes;
  return Error::Ok;
}

const EValue& Method::input(size_t index) const { return values_[input_indices_[index]]; }
const EValue& Method::output(size_t index) const { return values_[output_indices_[index]]; }

Error Method::execute() {
  if (!initialized_) return fail(&diag_, Error::InvalidState, "execute: the method is not initialised");
  diag_.message[0] = 0;
  // One check per execute(): the untraced loop has no tracing code at all, and the traced
  // one is reached only through traced_run_, set by the tracing entry points.
  return traced_run_ != nullptr ? traced_run_(*this) : run_instructions<false>();
}

template Error Method::run_instructions<false>();


// Completes the failure message of instruction `pc` and resets the temp allocator.
Error Method::instruction_failed(Error err, size_t pc) {
  const Instruction& ins = instructions_[pc];
  size_t temp_needed = 0;
  if (memory_.temp_allocator != nullptr) {
    temp_needed = memory_.temp_allocator->last_failure_bytes();
    memory_.temp_allocator->reset();
  }
  if (diag_.message[0] == 0) {
    fail(&diag_, err, "instruction %zu (%s) failed: %s", pc,
         ins.kind == Instruction::Kind::Kernel ? ins.op_name : "delegate", error_name(err));
  }
  if (err == Error::OutOfMemory && temp_needed > 0) {
    // Say how much scratch the instruction wanted (kernels only see a null pointer).
    char kernel_message[sizeof(diag_.message)];
    std::memcpy(kernel_message, diag_.message, sizeof(kernel_message));
    fail(&diag_, err, "%s; temp allocator: %zu bytes given, at least %zu needed", kernel_message,
         memory_.temp_allocator->size(), temp_needed);
  } else if (err == Error::OutOfMemory && memory_.temp_allocator == nullptr) {
    char kernel_message[sizeof(diag_.message)];
    std::memcpy(kernel_message, diag_.message, sizeof(kernel_message));
    fail(&diag_, err, "%s; the method has no temp allocator (MemoryManager::temp_allocator)", kernel_message);
  }
  return err;
}

Error Method::reset_state() {
  if (!initialized_) return Error::InvalidState;
  for (size_t i = 0; i < num_state_values_; ++i) {
    const schema::Tensor* st = method_->values()->Get(state_values_[i])->value_as_Tensor();
    Result<Span<const uint8_t>> seg = program_->segment(st->segment_index());
    if (!seg.ok()) return Error::InvalidProgram;
    Tensor& t = *values_[state_values_[i]].as_tensor;
    std::memcpy(t.data, seg->data() + st->segment_offset(), st->nbytes());
    for (int d = 0; d < t.rank; ++d) t.sizes[d] = t.max_sizes[d];
  }
  return Error::Ok;
}

}  // namespace ember
