#include "runtime/executor/method.h"

#include <cstring>

#include "runtime/executor/instruction_loop.h"
#include "runtime/kernel/kernel_selection.h"
#include "runtime/program/program.h"
#include "schema/program_generated.h"

namespace ember {

namespace {

using flatbuffers::uoffset_t;

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

// The steps of Method::init_with, each filling part of one Method from the program. Every
// table comes from the method allocator, in a fixed order (the "at least N bytes needed" of
// an out-of-memory message counts every request made before it).
class Method::Init {
 public:
  Init(Method& m, const Program& program, const schema::Method* method, MemoryManager* memory,
       Diagnostic* diag)
      : m_(m), program_(program), method_(method), values_(method->values()), memory_(*memory),
        alloc_(*memory->method_allocator), diag_(diag), name_(method->name() ? method->name()->c_str() : "") {}

  Error check_arenas();
  Error build_values();
  Error build_io_tables();
  Error build_state_table();
  Error build_delegates(ThreadPool* thread_pool, InitObserver* observer);
  Error build_instructions();

 private:
  Error oom(const char* what) { return method_allocator_too_small(diag_, alloc_, what); }
  Error build_tensor(const schema::Tensor* st, Tensor* t);
  // allocate_array<T>(count) of the method allocator: every table here is 8-byte aligned.
  template <typename T>
  T* take(size_t count) {
    static_assert(alignof(T) <= 8, "take() allocates 8-byte aligned memory");
    return static_cast<T*>(take_bytes(count, sizeof(T)));
  }
  void* take_bytes(size_t count, size_t size) {
    if (count > SIZE_MAX / size) return nullptr;
    return alloc_.allocate(count * size, 8);
  }
  // Copies `n` elements of `size` bytes into the method allocator (one element when empty).
  void* copy_items(const void* data, size_t n, size_t size) {
    void* copy = take_bytes(n == 0 ? 1 : n, size);
    if (copy != nullptr && n > 0) std::memcpy(copy, data, n * size);
    return copy;
  }

  Method& m_;
  const Program& program_;
  const schema::Method* method_;
  const flatbuffers::Vector<flatbuffers::Offset<schema::Value>>* values_;
  const MemoryManager& memory_;
  MemoryAllocator& alloc_;
  Diagnostic* diag_;
  const char* name_;
};

Error Method::Init::check_arenas() {
  const flatbuffers::Vector<uint64_t>* sizes = method_->arena_sizes();
  const size_t num_arenas = sizes ? sizes->size() : 0;
  const Span<Span<uint8_t>> given = memory_.planned_arenas;
  for (size_t i = 0; i < num_arenas; ++i) {
    size_t need = static_cast<size_t>(sizes->Get(static_cast<uoffset_t>(i)));
    if (i >= given.size()) {
      return fail(diag_, Error::OutOfMemory,
                  "method '%s' needs %zu planned arenas but %zu were given; size them from "
                  "MethodMeta::arena_size()", name_, num_arenas, given.size());
    }
    if (given[i].size() < need || (need > 0 && given[i].data() == nullptr)) {
      return fail(diag_, Error::OutOfMemory,
                  "planned arena %zu of method '%s' needs %zu bytes but %zu were given", i,
                  name_, need, given[i].size());
    }
    if (reinterpret_cast<uintptr_t>(given[i].data()) % 8 != 0) {
      return fail(diag_, Error::InvalidArgument,
                  "planned arena %zu of method '%s' must be at least 8-byte aligned", i, name_);
    }
  }
  return Error::Ok;
}

Error Method::Init::build_tensor(const schema::Tensor* st, Tensor* t) {
  const flatbuffers::Vector<int64_t>* st_sizes = st->sizes();
  const flatbuffers::Vector<uint8_t>* dim_order = st->dim_order();
  uint32_t rank = st_sizes ? st_sizes->size() : 0;
  t->dtype = static_cast<ScalarType>(st->dtype());
  t->rank = static_cast<uint8_t>(rank);
  t->dynamic = st->dynamism() == schema::ShapeDynamism::DynamicBounded;
  int64_t* sizes = take<int64_t>(rank == 0 ? 1 : rank * 2);
  if (sizes == nullptr) return oom("tensor sizes");
  for (uint32_t d = 0; d < rank; ++d) sizes[d] = sizes[rank + d] = st_sizes->Get(d);
  t->sizes = sizes;
  t->max_sizes = sizes + rank;
  t->dim_order = (dim_order && dim_order->size() == rank && rank > 0) ? dim_order->data() : nullptr;
  const uint64_t nbytes = st->nbytes();
  t->capacity_bytes = static_cast<size_t>(nbytes);
  const schema::DataLocation location = st->location();
  switch (location) {
    case schema::DataLocation::Arena:
    case schema::DataLocation::CallerInput:
    case schema::DataLocation::MutableState:
      if (st->shared_state() >= 0) {
        // Shared with other methods: the caller's buffer, initialised once by the caller.
        const size_t k = static_cast<size_t>(st->shared_state());
        if (k >= memory_.shared_state.size() || memory_.shared_state[k].size() < nbytes ||
            reinterpret_cast<uintptr_t>(memory_.shared_state[k].data()) % 8 != 0) {
          return fail(diag_, Error::InvalidArgument,
                      "method '%s' needs shared state buffer %zu: give MemoryManager::shared_state one buffer per "
                      "Program::shared_state_nbytes(i)",
                      name_, k);
        }
        t->data = memory_.shared_state[k].data();
        break;
      }
      t->data = memory_.planned_arenas[st->arena_id()].data() + st->arena_offset();
      break;
    case schema::DataLocation::Unplanned:
      t->capacity_bytes = 0;
      break;
    default:
      break;
  }
  if (location == schema::DataLocation::Constant || location == schema::DataLocation::MutableState) {
    // A constant is read in place; mutable state starts as a copy of its initial value.
    const bool constant = location == schema::DataLocation::Constant;
    Result<Span<const uint8_t>> seg = program_.segment(st->segment_index());
    const uint64_t offset = st->segment_offset();
    if (!seg.ok() || offset > seg->size() || nbytes > seg->size() - offset) {
      return fail(diag_, Error::InvalidProgram,
                  !constant ? "mutable state refers to a missing initial value"
                  : !seg.ok() ? "constant tensor refers to a missing data segment"
                              : "constant tensor reads past its data segment");
    }
    const uint8_t* bytes = seg->data() + offset;
    if (constant) {
      // Constants are never written: the exporter never plans a constant as an output.
      t->data = const_cast<uint8_t*>(bytes);
    } else if (st->shared_state() < 0 && nbytes > 0) {  // shared state keeps what other methods wrote
      std::memcpy(t->data, bytes, nbytes);
    }
  }
  return Error::Ok;
}

Error Method::Init::build_values() {
  const size_t num_values = values_ ? values_->size() : 0;
  EValue* values = take<EValue>(num_values == 0 ? 1 : num_values);
  if (values == nullptr) return oom("the value table");
  for (size_t i = 0; i < num_values; ++i) new (&values[i]) EValue();
  m_.num_values_ = num_values;
  m_.values_ = values;
  for (uoffset_t i = 0; i < num_values; ++i) {
    const schema::Value* sv = values_->Get(i);
    const void* payload = sv->value();
    EValue& v = values[i];
    switch (sv->value_type()) {
      case schema::ValueKind::NONE:
      case schema::ValueKind::None:
        break;
      case schema::ValueKind::Int:
        v.tag = ValueTag::Int;
        v.as_int = static_cast<const schema::Int*>(payload)->value();
        break;
      case schema::ValueKind::Double:
        v.tag = ValueTag::Double;
        v.as_double = static_cast<const schema::Double*>(payload)->value();
        break;
      case schema::ValueKind::Bool:
        v.tag = ValueTag::Bool;
        v.as_bool = static_cast<const schema::Bool*>(payload)->value();
        break;
      case schema::ValueKind::String: {
        const flatbuffers::String* s = static_cast<const schema::String*>(payload)->value();
        v.tag = ValueTag::String;
        v.as_string = StringValue{s ? s->c_str() : "", s ? s->size() : 0};
        break;
      }
      case schema::ValueKind::Tensor: {
        Tensor* t = take<Tensor>(1);
        if (t == nullptr) return oom("a tensor");
        new (t) Tensor();
        EMBER_TRY(build_tensor(static_cast<const schema::Tensor*>(payload), t));
        v.tag = ValueTag::Tensor;
        v.as_tensor = t;
        break;
      }
      case schema::ValueKind::IntList: {
        const schema::IntList* list = static_cast<const schema::IntList*>(payload);
        const flatbuffers::Vector<int64_t>* items = list->items();
        const flatbuffers::Vector<int32_t>* value_refs = list->value_refs();
        size_t n = items ? items->size() : 0;
        int64_t* copy = static_cast<int64_t*>(copy_items(items ? items->data() : nullptr, n, sizeof(int64_t)));
        if (copy == nullptr) return oom("an int list");
        int32_t* refs = nullptr;
        if (value_refs != nullptr && value_refs->size() == n && n > 0) {
          refs = static_cast<int32_t*>(copy_items(value_refs->data(), n, sizeof(int32_t)));
          if (refs == nullptr) return oom("an int list");
        }
        v.tag = ValueTag::IntList;
        v.as_int_list = IntListValue{copy, refs, values, n};
        break;
      }
      case schema::ValueKind::DoubleList: {
        const flatbuffers::Vector<double>* items = static_cast<const schema::DoubleList*>(payload)->items();
        size_t n = items ? items->size() : 0;
        double* copy = static_cast<double*>(copy_items(items ? items->data() : nullptr, n, sizeof(double)));
        if (copy == nullptr) return oom("a double list");
        v.tag = ValueTag::DoubleList;
        v.as_double_list = Span<const double>(copy, n);
        break;
      }
      case schema::ValueKind::BoolList: {
        const flatbuffers::Vector<uint8_t>* items = static_cast<const schema::BoolList*>(payload)->items();
        size_t n = items ? items->size() : 0;
        bool* copy = take<bool>(n == 0 ? 1 : n);
        if (copy == nullptr) return oom("a bool list");
        for (size_t k = 0; k < n; ++k) copy[k] = items->Get(static_cast<uoffset_t>(k)) != 0;
        v.tag = ValueTag::BoolList;
        v.as_bool_list = Span<const bool>(copy, n);
        break;
      }
      case schema::ValueKind::TensorList:
        v.tag = ValueTag::TensorList;  // the list itself in the second pass: needs every tensor
        break;
      case schema::ValueKind::OptionalTensorList:
        v.tag = ValueTag::OptionalTensorList;
        break;
    }
  }
  for (uoffset_t i = 0; i < num_values; ++i) {
    EValue& v = values[i];
    if (!v.is_tensor_list()) continue;
    // TensorList and OptionalTensorList: the same table layout (items: [int]).
    const flatbuffers::Vector<int32_t>* items =
        v.tag == ValueTag::OptionalTensorList
            ? static_cast<const schema::OptionalTensorList*>(values_->Get(i)->value())->items()
            : static_cast<const schema::TensorList*>(values_->Get(i)->value())->items();
    size_t n = items ? items->size() : 0;
    Tensor** list = take<Tensor*>(n == 0 ? 1 : n);
    if (list == nullptr) return oom("a tensor list");
    for (size_t k = 0; k < n; ++k) {
      int32_t ref = items->Get(static_cast<uoffset_t>(k));
      list[k] = ref < 0 ? nullptr : values[ref].as_tensor;
    }
    v.as_tensor_list = Span<Tensor* const>(list, n);
  }
  return Error::Ok;
}

// The planned storage of each tensor input and output, for set_input() and set_output_buffer().
Error Method::Init::build_io_tables() {
  for (int outputs = 0; outputs < 2; ++outputs) {
    const flatbuffers::Vector<uint32_t>* list = outputs ? method_->outputs() : method_->inputs();
    Io& io = outputs ? m_.outputs_ : m_.inputs_;
    const size_t n = list ? list->size() : 0;
    io.num = n;
    io.indices = list ? list->data() : nullptr;
    // Both tables have the same size: when the second fits, so did the first.
    io.planned_data = take<void*>(n + 1);
    io.planned_capacity = take<size_t>(n + 1);
    if (io.planned_capacity == nullptr) return oom(outputs ? "input/output tables" : "input tables");
    for (size_t i = 0; i < n; ++i) {
      const EValue& v = m_.values_[io.indices[i]];
      io.planned_data[i] = v.is_tensor() ? v.as_tensor->data : nullptr;
      io.planned_capacity[i] = v.is_tensor() ? v.as_tensor->capacity_bytes : 0;
    }
  }
  return Error::Ok;
}

Error Method::Init::build_state_table() {
  // Mutable state: the tensors reset_state() restores.
  size_t count = 0;
  for (int fill = 0; fill < 2; ++fill) {
    if (fill == 1) {
      m_.num_state_values_ = count;
      m_.state_values_ = take<uint32_t>(count + 1);
      m_.state_tensors_ = take<Tensor*>(count + 1);
      if (m_.state_values_ == nullptr || m_.state_tensors_ == nullptr) return oom("the state table");
      count = 0;
    }
    for (uoffset_t i = 0; i < m_.num_values_; ++i) {
      if (m_.values_[i].is_tensor() &&
          static_cast<const schema::Tensor*>(values_->Get(i)->value())->location() ==
              schema::DataLocation::MutableState) {
        if (fill == 1) {
          m_.state_values_[count] = i;
          m_.state_tensors_[count] = m_.values_[i].as_tensor;
        }
        ++count;
      }
    }
  }
  return Error::Ok;
}

Error Method::Init::build_delegates(ThreadPool* thread_pool, InitObserver* observer) {
  const flatbuffers::Vector<flatbuffers::Offset<schema::Delegate>>* delegates = method_->delegates();
  const size_t num_delegates = delegates ? delegates->size() : 0;
  m_.delegate_backends_ = take<Backend*>(num_delegates + 1);
  m_.delegate_handles_ = take<void*>(num_delegates + 1);
  // "<backend>#<index>": the trace name of each delegate's init and calls.
  char* delegate_names = take<char>(num_delegates * kDelegateNameBytes + 1);
  if (!m_.delegate_backends_ || !m_.delegate_handles_ || !delegate_names) return oom("the delegate table");
  m_.delegate_names_ = delegate_names;
  for (size_t i = 0; i < num_delegates; ++i) {
    m_.delegate_backends_[i] = nullptr;
    m_.delegate_handles_[i] = nullptr;
  }
  m_.num_delegates_ = num_delegates;  // only now may the destructor walk the tables
  if (num_delegates == 0) return Error::Ok;
  return init_delegates(DelegateInitRequest{&program_, method_, &alloc_, thread_pool, diag_, observer,
                                            delegate_names, kDelegateNameBytes, m_.delegate_backends_,
                                            m_.delegate_handles_});
}

// Resolves every kernel now; reports all missing ones at once.
Error Method::Init::build_instructions() {
  const flatbuffers::Vector<flatbuffers::Offset<schema::Instruction>>* instructions = method_->instructions();
  const flatbuffers::Vector<flatbuffers::Offset<schema::Operator>>* operators = method_->operators();
  m_.num_instructions_ = instructions ? instructions->size() : 0;
  m_.instructions_ = take<Instruction>(m_.num_instructions_ + 1);
  if (m_.instructions_ == nullptr) return oom("the instruction table");
  char missing[300] = {0};
  for (uoffset_t i = 0; i < m_.num_instructions_; ++i) {
    const schema::Instruction* si = instructions->Get(i);
    const void* payload = si->kind();
    Instruction& ins = *new (&m_.instructions_[i]) Instruction();
    const flatbuffers::Vector<int32_t>* args = nullptr;
    const schema::Operator* op = nullptr;
    switch (si->kind_type()) {
      case schema::InstructionKind::KernelCall: {
        const schema::KernelCall* call = static_cast<const schema::KernelCall*>(payload);
        ins.kind = Instruction::Kind::Kernel;
        args = call->args();
        op = operators->Get(call->op_index());
        break;
      }
      case schema::InstructionKind::DelegateCall: {
        const schema::DelegateCall* call = static_cast<const schema::DelegateCall*>(payload);
        ins.kind = Instruction::Kind::Delegate;
        ins.a = call->delegate_index();
        args = call->args();
        break;
      }
      case schema::InstructionKind::Move:
        ins.kind = Instruction::Kind::Move;
        ins.a = static_cast<const schema::Move*>(payload)->from_value();
        ins.b = static_cast<const schema::Move*>(payload)->to_value();
        break;
      case schema::InstructionKind::JumpFalse:
        ins.kind = Instruction::Kind::JumpFalse;
        ins.a = static_cast<const schema::JumpFalse*>(payload)->condition_value();
        ins.b = static_cast<const schema::JumpFalse*>(payload)->destination();
        break;
      default:
        ins.kind = Instruction::Kind::Nop;  // Free: memory is planned ahead of time
        break;
    }
    if (args != nullptr) {
      ins.num_args = args->size();
      ins.args = take<EValue*>(ins.num_args + 1);
      if (ins.args == nullptr) return oom("kernel arguments");
      for (uoffset_t k = 0; k < ins.num_args; ++k) ins.args[k] = &m_.values_[args->Get(k)];
    }
    if (op != nullptr) {
      const flatbuffers::String* overload = op->overload();
      char key[160];
      ins.op_name = op->name()->c_str();
      std::snprintf(key, sizeof(key), "%s.%s", ins.op_name,
                    overload && overload->size() ? overload->c_str() : "default");
      ins.fn = find_kernel(key, first_tensor_dtype(ins.args, ins.num_args));
      if (ins.fn == nullptr) append_unique(missing, sizeof(missing), key);
    }
  }
  if (missing[0] != 0) {
    if (const char* selection = kernel_selection()) {
      return fail(diag_, Error::NotSupported,
                  "method '%s' uses operators not in this build: %s (kernels selected from %s); "
                  "rebuild with this program added to --ops-from", name_, missing, selection);
    }
    return fail(diag_, Error::NotSupported,
                "method '%s' uses operators with no registered kernel: %s; link the kernel "
                "library that provides them", name_, missing);
  }
  return Error::Ok;
}

Result<Method> Program::load_method(const char* name, MemoryManager* memory, Diagnostic* diag,
                                    ThreadPool* thread_pool) const {
  const schema::Method* method = find_method(name);
  if (method == nullptr) {
    return fail(diag, Error::NotFound, "the program has no method named '%s'", name ? name : "(null)");
  }
  return Method::init(*this, method, memory, diag, thread_pool);
}

Result<Method> Method::init_with(const Program& program, const schema::Method* method,
                                 MemoryManager* memory, Diagnostic* diag, ThreadPool* thread_pool,
                                 InitObserver* observer) {
  if (memory == nullptr || memory->method_allocator == nullptr) {
    return fail(diag, Error::InvalidArgument, "load_method: a MemoryManager with a method allocator is required");
  }
  Method m;
  Init init(m, program, method, memory, diag);
  EMBER_TRY(init.check_arenas());
  m.program_ = &program;
  m.method_ = method;
  m.memory_ = *memory;
  m.thread_pool_ = thread_pool;
  EMBER_TRY(init.build_values());
  EMBER_TRY(init.build_io_tables());
  EMBER_TRY(init.build_state_table());
  EMBER_TRY(init.build_delegates(thread_pool, observer));
  EMBER_TRY(init.build_instructions());
  m.initialized_ = true;
  return Result<Method>(static_cast<Method&&>(m));
}

Method::Method(Method&& other) noexcept
    : internal::MethodData(other), instructions_(other.instructions_) {
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
  if (index >= inputs_.num) {
    return fail(&diag_, Error::InvalidArgument, "input %zu does not exist: the method takes %zu inputs",
                index, inputs_.num);
  }
  EValue& slot = values_[inputs_.indices[index]];
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
  if (index < inputs_.num && initialized_ && !values_[inputs_.indices[index]].is_tensor()) {
    EValue& slot = values_[inputs_.indices[index]];
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
  void* planned = inputs_.planned_data[index];
  size_t bytes = value.as_tensor->nbytes();
  t->capacity_bytes = inputs_.planned_capacity[index];
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
  if (index >= outputs_.num || !values_[outputs_.indices[index]].is_tensor()) {
    return fail(&diag_, Error::InvalidArgument, "output %zu is not a tensor output", index);
  }
  Tensor& t = *values_[outputs_.indices[index]].as_tensor;
  if (data == nullptr) {
    t.data = outputs_.planned_data[index];
    t.capacity_bytes = outputs_.planned_capacity[index];
    return Error::Ok;
  }
  if (nbytes < outputs_.planned_capacity[index]) {
    return fail(&diag_, Error::OutOfMemory, "output %zu needs a buffer of %zu bytes, got %zu", index,
                outputs_.planned_capacity[index], nbytes);
  }
  t.data = data;
  t.capacity_bytes = nbytes;
  return Error::Ok;
}

const EValue& Method::input(size_t index) const { return values_[inputs_.indices[index]]; }
const EValue& Method::output(size_t index) const { return values_[outputs_.indices[index]]; }

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
  if (err == Error::OutOfMemory && (temp_needed > 0 || memory_.temp_allocator == nullptr)) {
    // Say how much scratch the instruction wanted (kernels only see a null pointer).
    char kernel_message[sizeof(diag_.message)];
    std::memcpy(kernel_message, diag_.message, sizeof(kernel_message));
    if (temp_needed > 0) {
      fail(&diag_, err, "%s; temp allocator: %zu bytes given, at least %zu needed", kernel_message,
           memory_.temp_allocator->size(), temp_needed);
    } else {
      fail(&diag_, err, "%s; the method has no temp allocator (MemoryManager::temp_allocator)", kernel_message);
    }
  }
  return err;
}

Error Method::reset_state() {
  if (!initialized_) return Error::InvalidState;
  for (size_t i = 0; i < num_state_values_; ++i) {
    const schema::Tensor* st = method_->values()->Get(state_values_[i])->value_as_Tensor();
    Result<Span<const uint8_t>> seg = program_->segment(st->segment_index());
    if (!seg.ok()) return Error::InvalidProgram;
    // The tensor built at init: a Move may have rebound the value since (to a constant, say).
    Tensor& t = *state_tensors_[i];
    values_[state_values_[i]].tag = ValueTag::Tensor;
    values_[state_values_[i]].as_tensor = &t;
    if (st->nbytes() > 0) std::memcpy(t.data, seg->data() + st->segment_offset(), st->nbytes());
    for (int d = 0; d < t.rank; ++d) t.sizes[d] = t.max_sizes[d];
  }
  // State a delegate keeps itself (a KV cache on the GPU).
  for (size_t i = 0; i < num_delegates_; ++i) {
    if (delegate_backends_[i] == nullptr) continue;
    const Error e = delegate_backends_[i]->reset_state(delegate_handles_[i], &diag_);
    if (e != Error::Ok) return e;
  }
  return Error::Ok;
}

}  // namespace ember
