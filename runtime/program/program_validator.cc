#include "runtime/program/program_validator.h"

#include <cstdint>
#include <cstring>

#include "runtime/core/flatbuffer_alignment.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/tensor.h"
#include "runtime/program/file_header.h"
#include "schema/program_generated.h"

namespace ember {
namespace {

using flatbuffers::uoffset_t;

// a + b <= limit, without overflow.
bool fits(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

// "invalid program: <what>; re-export the model": every structural error of a method.
Error invalid(Diagnostic* diag, const char* format, ...) __attribute__((format(printf, 2, 3)));
Error invalid(Diagnostic* diag, const char* format, ...) {
  char text[300];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  return fail(diag, Error::InvalidProgram, "invalid program: %s; re-export the model", text);
}

using Values = flatbuffers::Vector<flatbuffers::Offset<schema::Value>>;

class MethodValidator {
 public:
  MethodValidator(const schema::Program* program, const schema::Method* method, Diagnostic* diag)
      : program_(program), method_(method), diag_(diag) {}

  Error run(size_t index) {
    const flatbuffers::String* name = method_->name();
    if (name == nullptr) return invalid(diag_, "method %zu has no name", index);
    name_ = name->c_str();
    values_ = method_->values();
    if (values_ == nullptr) return invalid(diag_, "method '%s' has no value table", name_);
    num_values_ = values_->size();
    if (!elements_aligned(method_->arena_sizes())) {
      return invalid(diag_, "method '%s' has a misaligned arena_sizes vector", name_);
    }
    for (uoffset_t i = 0; i < num_values_; ++i) EMBER_TRY(check_value(i));
    EMBER_TRY(check_index_list(method_->inputs(), "input"));
    EMBER_TRY(check_index_list(method_->outputs(), "output"));
    EMBER_TRY(check_mutable_inputs());
    const auto* operators = method_->operators();
    num_operators_ = operators ? operators->size() : 0;
    for (uoffset_t i = 0; i < num_operators_; ++i) {
      if (operators->Get(i)->name() == nullptr) {
        return invalid(diag_, "operator %u of method '%s' has no name", i, name_);
      }
    }
    const auto* delegates = method_->delegates();
    num_delegates_ = delegates ? delegates->size() : 0;
    for (uoffset_t i = 0; i < num_delegates_; ++i) EMBER_TRY(check_delegate(delegates->Get(i), i));
    const auto* instructions = method_->instructions();
    num_instructions_ = instructions ? instructions->size() : 0;
    for (uoffset_t i = 0; i < num_instructions_; ++i) EMBER_TRY(check_instruction(instructions->Get(i), i));
    return check_debug();
  }

 private:
  const schema::Value* value(int64_t index) const { return values_->Get(static_cast<uoffset_t>(index)); }
  schema::ValueKind kind(int64_t index) const { return value(index)->value_type(); }
  bool valid_index(int64_t index) const { return index >= 0 && index < num_values_; }
  bool is_valid(int64_t index, schema::ValueKind want) const {
    return valid_index(index) && kind(index) == want;
  }

  Error check_index_list(const flatbuffers::Vector<uint32_t>* list, const char* what) {
    const uoffset_t n = list ? list->size() : 0;
    for (uoffset_t i = 0; i < n; ++i) {
      if (!valid_index(list->Get(i))) {
        return invalid(diag_, "%s %u of method '%s' refers to value %u of %lld", what, i, name_, list->Get(i),
                       static_cast<long long>(num_values_));
      }
    }
    return Error::Ok;
  }

  Error check_tensor(const schema::Tensor* t, uoffset_t i) {
    const int dtype = static_cast<int>(t->dtype());
    if (!is_valid_scalar_type(dtype)) return invalid(diag_, "tensor %u has unknown dtype %d", i, dtype);
    const flatbuffers::Vector<int64_t>* sizes = t->sizes();
    if (!elements_aligned(sizes)) return invalid(diag_, "tensor %u has a misaligned sizes vector", i);
    const uint32_t rank = sizes ? sizes->size() : 0;
    if (rank > static_cast<uint32_t>(kMaxRank)) return invalid(diag_, "tensor %u has rank %u > %d", i, rank, kMaxRank);
    // The product of the non-zero dims is bounded too: a zero dim makes the tensor empty, but
    // kernels still compute strides from the other dims (a fuzzer-found int64 overflow).
    uint64_t numel = 1, extent = 1;
    for (uint32_t d = 0; d < rank; ++d) {
      int64_t s = sizes->Get(d);
      if (s < 0 || s > (int64_t{1} << 40)) {
        return invalid(diag_, "tensor %u has invalid size %lld", i, static_cast<long long>(s));
      }
      if (s != 0 && extent > (uint64_t{1} << 48) / static_cast<uint64_t>(s)) {
        return invalid(diag_, "tensor %u is too large", i);
      }
      if (s != 0) extent *= static_cast<uint64_t>(s);
      numel *= static_cast<uint64_t>(s);
    }
    const flatbuffers::Vector<uint8_t>* dim_order = t->dim_order();
    if (dim_order != nullptr && dim_order->size() != 0) {
      if (dim_order->size() != rank) return invalid(diag_, "tensor %u dim_order length != rank", i);
      uint32_t seen = 0;
      for (uint32_t d = 0; d < rank; ++d) {
        uint8_t dim = dim_order->Get(d);
        if (dim >= rank || (seen & (1u << dim))) return invalid(diag_, "tensor %u dim_order is not a permutation", i);
        seen |= 1u << dim;
      }
    }
    if (t->dynamism() != schema::ShapeDynamism::Static &&
        t->dynamism() != schema::ShapeDynamism::DynamicBounded) {
      return invalid(diag_, "tensor %u has unknown shape dynamism", i);
    }
    const uint64_t esize = element_size(static_cast<ScalarType>(dtype));
    // Kernels access elements as their type: data must be aligned to the element size
    // (arenas, segments and the program itself are at least 8-byte aligned).
    const schema::DataLocation location = t->location();
    const bool in_arena = location == schema::DataLocation::Arena ||
                          location == schema::DataLocation::CallerInput ||
                          location == schema::DataLocation::MutableState;
    const bool in_segment = location == schema::DataLocation::Constant ||
                            location == schema::DataLocation::MutableState;
    const uint64_t arena_offset = t->arena_offset();
    const uint64_t segment_offset = t->segment_offset();
    if ((in_arena && arena_offset % esize != 0) || (in_segment && segment_offset % esize != 0)) {
      return invalid(diag_, "tensor %u is misaligned: its offset is not a multiple of its %llu-byte element size", i,
                     static_cast<unsigned long long>(esize));
    }
    if (location == schema::DataLocation::Unplanned) return Error::Ok;
    if (!in_arena && !in_segment) {
      return invalid(diag_, "tensor %u has unknown data location %d", i, static_cast<int>(location));
    }
    const uint64_t nbytes = t->nbytes();
    if (nbytes < numel * esize) return invalid(diag_, "tensor %u capacity is smaller than its sizes", i);
    const int32_t shared = t->shared_state();
    if (shared != -1) {
      // Its bytes are the caller's shared buffer (MemoryManager::shared_state), not the arena.
      const auto* states = program_->shared_state();
      if (location != schema::DataLocation::MutableState || shared < 0 || states == nullptr ||
          static_cast<uoffset_t>(shared) >= states->size() ||
          nbytes > states->Get(static_cast<uoffset_t>(shared))->nbytes()) {
        return invalid(diag_, "tensor %u: bad shared state %d (missing, too small or not mutable state)", i, shared);
      }
    }
    if (in_arena && shared == -1) {
      const uint32_t arena = t->arena_id();
      const auto* arenas = method_->arena_sizes();
      if (arenas == nullptr || arena >= arenas->size()) {
        return invalid(diag_, "tensor %u uses arena %u, which does not exist", i, arena);
      }
      if (!fits(arena_offset, nbytes, arenas->Get(arena))) {
        return invalid(diag_, "tensor %u (%llu bytes at %llu) overruns arena %u of %llu bytes", i,
                       static_cast<unsigned long long>(nbytes), static_cast<unsigned long long>(arena_offset),
                       arena, static_cast<unsigned long long>(arenas->Get(arena)));
      }
    }
    if (in_segment) {
      const uint32_t segment = t->segment_index();
      const auto* segments = program_->segments();
      if (segments == nullptr || segment >= segments->size()) {
        return invalid(diag_, "tensor %u refers to data segment %u, which does not exist", i, segment);
      }
      if (!fits(segment_offset, nbytes, segments->Get(segment)->size())) {
        return invalid(diag_, "tensor %u reads past the end of data segment %u", i, segment);
      }
    }
    return Error::Ok;
  }

  Error check_value(uoffset_t i) {
    const schema::Value* v = value(i);
    const schema::ValueKind type = v->value_type();
    const void* payload = v->value();
    // The FlatBuffer verifier accepts a union whose type is set but whose table is absent.
    if (type != schema::ValueKind::NONE && type != schema::ValueKind::None && payload == nullptr) {
      return invalid(diag_, "value %u has a kind but no payload", i);
    }
    switch (type) {
      case schema::ValueKind::NONE:
      case schema::ValueKind::None:
      case schema::ValueKind::Int:
      case schema::ValueKind::Double:
      case schema::ValueKind::Bool:
        return Error::Ok;
      case schema::ValueKind::String:
        return static_cast<const schema::String*>(payload)->value() ? Error::Ok
                                                                    : invalid(diag_, "string %u is null", i);
      case schema::ValueKind::Tensor:
        return check_tensor(static_cast<const schema::Tensor*>(payload), i);
      case schema::ValueKind::IntList: {
        const schema::IntList* list = static_cast<const schema::IntList*>(payload);
        const flatbuffers::Vector<int64_t>* items = list->items();
        const flatbuffers::Vector<int32_t>* refs = list->value_refs();
        if (items == nullptr) return invalid(diag_, "int list %u has no items", i);
        if (!elements_aligned(items)) return invalid(diag_, "int list %u is misaligned", i);
        if (refs != nullptr) {
          if (refs->size() != items->size()) {
            return invalid(diag_, "int list %u: value_refs and items differ in length", i);
          }
          for (uoffset_t k = 0; k < refs->size(); ++k) {
            int32_t ref = refs->Get(k);
            if (ref >= 0 && !is_valid(ref, schema::ValueKind::Int)) {
              return invalid(diag_, "int list %u refers to value %d, which is not an int", i, ref);
            }
          }
        }
        return Error::Ok;
      }
      case schema::ValueKind::DoubleList: {
        const flatbuffers::Vector<double>* items = static_cast<const schema::DoubleList*>(payload)->items();
        if (!elements_aligned(items)) return invalid(diag_, "double list %u is misaligned", i);
        return items ? Error::Ok : invalid(diag_, "double list %u is null", i);
      }
      case schema::ValueKind::BoolList:
        return static_cast<const schema::BoolList*>(payload)->items() ? Error::Ok
                                                                      : invalid(diag_, "bool list %u is null", i);
      case schema::ValueKind::TensorList:
      case schema::ValueKind::OptionalTensorList: {
        const bool optional = type == schema::ValueKind::OptionalTensorList;
        // The same table layout (items: [int]).
        const flatbuffers::Vector<int32_t>* items =
            optional ? static_cast<const schema::OptionalTensorList*>(payload)->items()
                     : static_cast<const schema::TensorList*>(payload)->items();
        if (items == nullptr) return invalid(diag_, "tensor list %u is null", i);
        for (uoffset_t k = 0; k < items->size(); ++k) {
          int32_t ref = items->Get(k);
          if (optional && ref == -1) continue;
          if (!is_valid(ref, schema::ValueKind::Tensor)) {
            return invalid(diag_, "tensor list %u refers to value %d, which is not a tensor", i, ref);
          }
        }
        return Error::Ok;
      }
    }
    return invalid(diag_, "value %u has unknown kind %d", i, static_cast<int>(type));
  }

  Error check_instruction(const schema::Instruction* instr, uoffset_t i) {
    const void* payload = instr->kind();
    if (payload == nullptr) return invalid(diag_, "instruction %u has no payload", i);
    switch (instr->kind_type()) {
      case schema::InstructionKind::KernelCall:
      case schema::InstructionKind::DelegateCall: {
        // The same table layout (index, args, num_outputs).
        const bool kernel = instr->kind_type() == schema::InstructionKind::KernelCall;
        const auto* kernel_call = static_cast<const schema::KernelCall*>(payload);
        const auto* delegate_call = static_cast<const schema::DelegateCall*>(payload);
        const uint32_t callee = kernel ? kernel_call->op_index() : delegate_call->delegate_index();
        const uint32_t limit = kernel ? num_operators_ : num_delegates_;
        if (callee >= limit) {
          return invalid(diag_, kernel ? "instruction %u calls operator %u of %u" : "instruction %u calls delegate %u of %u",
                         i, callee, limit);
        }
        return check_call(kernel ? kernel_call->args() : delegate_call->args(),
                          kernel ? kernel_call->num_outputs() : delegate_call->num_outputs(), i);
      }
      case schema::InstructionKind::Move: {
        const auto* move = static_cast<const schema::Move*>(payload);
        const uint32_t from = move->from_value(), to = move->to_value();
        if (!valid_index(from) || !valid_index(to)) return invalid(diag_, "instruction %u moves an invalid value", i);
        if (kind(from) != kind(to)) return invalid(diag_, "instruction %u moves between different kinds", i);
        return check_writable(to, i, true);
      }
      case schema::InstructionKind::JumpFalse: {
        const auto* jump = static_cast<const schema::JumpFalse*>(payload);
        if (!is_valid(jump->condition_value(), schema::ValueKind::Bool)) {
          return invalid(diag_, "instruction %u jumps on a value that is not a bool", i);
        }
        if (jump->destination() > num_instructions_) return invalid(diag_, "instruction %u jumps out of the method", i);
        return Error::Ok;
      }
      case schema::InstructionKind::Free:
        return valid_index(static_cast<const schema::Free*>(payload)->value())
                   ? Error::Ok : invalid(diag_, "instruction %u frees an invalid value", i);
      default:
        return invalid(diag_, "instruction %u has unknown kind", i);
    }
  }

  // The optional debug table is read by index of instruction: it must match them one to one.
  Error check_debug() {
    const auto* debug = method_->debug();
    if (debug == nullptr) return Error::Ok;
    if (debug->size() != num_instructions_) {
      return invalid(diag_, "method '%s' has %u debug entries for %u instructions", name_, debug->size(),
                     num_instructions_);
    }
    for (uoffset_t i = 0; i < num_instructions_; ++i) {
      if (debug->Get(i) == nullptr) return invalid(diag_, "debug entry %u of method '%s' is missing", i, name_);
    }
    return Error::Ok;
  }

  // Inputs a method may write must be tensor inputs in caller memory.
  Error check_mutable_inputs() {
    const auto* mutable_inputs = method_->mutable_inputs();
    if (mutable_inputs == nullptr) return Error::Ok;
    const auto* inputs = method_->inputs();
    for (uoffset_t k = 0; k < mutable_inputs->size(); ++k) {
      uint32_t v = mutable_inputs->Get(k);
      bool is_input = false;
      if (inputs != nullptr) {
        for (uoffset_t j = 0; j < inputs->size(); ++j) is_input = is_input || inputs->Get(j) == v;
      }
      if (!is_input || !is_valid(v, schema::ValueKind::Tensor) ||
          static_cast<const schema::Tensor*>(value(v)->value())->location() != schema::DataLocation::CallerInput) {
        return invalid(diag_, "mutable input %u of method '%s' (value %u) is not a tensor input", k, name_, v);
      }
    }
    return Error::Ok;
  }

  bool is_mutable_input(uint32_t v) const {
    const auto* mutable_inputs = method_->mutable_inputs();
    if (mutable_inputs == nullptr) return false;
    for (uoffset_t k = 0; k < mutable_inputs->size(); ++k) {
      if (mutable_inputs->Get(k) == v) return true;
    }
    return false;
  }

  // A value an instruction writes: no constant (read-only, possibly a read-only mapping of
  // the file) and no caller input the method does not declare mutable.
  // `inputs_known`: false for calls of programs from before outputs were declared, where
  // only the constant rule applies (such a call's last argument may be an input it reads).
  Error check_writable(uint32_t v, uoffset_t instr, bool inputs_known) {
    const schema::Value* written = value(v);
    schema::ValueKind k = written->value_type();
    if (k == schema::ValueKind::TensorList) {
      const auto* items = static_cast<const schema::TensorList*>(written->value())->items();
      for (uoffset_t j = 0; j < items->size(); ++j) {
        EMBER_TRY(check_writable(static_cast<uint32_t>(items->Get(j)), instr, inputs_known));
      }
      return Error::Ok;
    }
    if (k != schema::ValueKind::Tensor) return Error::Ok;
    schema::DataLocation loc = static_cast<const schema::Tensor*>(written->value())->location();
    if (loc == schema::DataLocation::Constant) {
      return invalid(diag_, "instruction %u writes tensor %u, a constant", instr, v);
    }
    if (inputs_known && loc == schema::DataLocation::CallerInput && !is_mutable_input(v)) {
      return invalid(diag_, "instruction %u writes tensor %u, an input the method does not declare mutable", instr, v);
    }
    return Error::Ok;
  }

  // A call's arguments are values. The trailing `num_outputs` are written. Programs from
  // before calls declared their outputs are checked on their last argument (an
  // exporter-written call always ends with an output).
  Error check_call(const flatbuffers::Vector<int32_t>* args, uint32_t num_outputs, uoffset_t instr) {
    const uint32_t n = args ? args->size() : 0;
    for (uoffset_t k = 0; k < n; ++k) {
      if (!valid_index(args->Get(k))) {
        return invalid(diag_, "instruction %u argument %u refers to value %d of %lld", instr, k, args->Get(k),
                       static_cast<long long>(num_values_));
      }
    }
    const bool declared = method_->calls_declare_outputs();
    if (!declared) num_outputs = n > 0 ? 1 : 0;
    if (num_outputs > n) {
      return invalid(diag_, "instruction %u declares %u outputs but has %u arguments", instr, num_outputs, n);
    }
    for (uint32_t k = n - num_outputs; k < n; ++k) {
      EMBER_TRY(check_writable(static_cast<uint32_t>(args->Get(k)), instr, declared));
    }
    return Error::Ok;
  }

  Error check_delegate(const schema::Delegate* d, uoffset_t i) {
    if (d->backend_id() == nullptr) return invalid(diag_, "delegate %u has no backend id", i);
    int32_t seg = d->blob_segment();
    uint32_t num_segments = program_->segments() ? program_->segments()->size() : 0;
    if (seg < -1 || (seg >= 0 && static_cast<uint32_t>(seg) >= num_segments)) {
      return invalid(diag_, "delegate %u refers to data segment %d of %u", i, seg, num_segments);
    }
    const auto* specs = d->compile_specs();
    const uoffset_t num_specs = specs ? specs->size() : 0;
    for (uoffset_t k = 0; k < num_specs; ++k) {
      if (specs->Get(k)->key() == nullptr) return invalid(diag_, "delegate %u compile spec %u has no key", i, k);
    }
    return Error::Ok;
  }

  const schema::Program* program_;
  const schema::Method* method_;
  Diagnostic* diag_;
  const char* name_ = "";
  const Values* values_ = nullptr;
  int64_t num_values_ = 0;
  uint32_t num_operators_ = 0;
  uint32_t num_delegates_ = 0;
  uint32_t num_instructions_ = 0;
};

// Metadata keys are unique (the FlatBuffer verifier already checked both strings are present).
Error validate_metadata(const schema::Program* program, Diagnostic* diag) {
  const auto* entries = program->metadata();
  if (entries == nullptr) return Error::Ok;
  for (uoffset_t i = 0; i < entries->size(); ++i) {
    const flatbuffers::String* a = entries->Get(i)->key();
    if (a == nullptr || entries->Get(i)->value() == nullptr || a->size() == 0) {
      return fail(diag, Error::InvalidProgram, "invalid program: metadata entry %u has no key or value; re-export with --metadata key=value", i);
    }
    for (uoffset_t j = 0; j < i; ++j) {
      const flatbuffers::String* b = entries->Get(j)->key();
      if (a->size() == b->size() && std::memcmp(a->data(), b->data(), a->size()) == 0) {
        return fail(diag, Error::InvalidProgram, "invalid program: metadata key '%s' appears twice", a->c_str());
      }
    }
  }
  return Error::Ok;
}

}  // namespace

Error validate_program(const schema::Program* program, size_t segment_area_size, Diagnostic* diag) {
  const auto* segments = program->segments();
  const uoffset_t num_segments = segments ? segments->size() : 0;
  for (uoffset_t i = 0; i < num_segments; ++i) {
    const schema::Segment* s = segments->Get(i);
    if (const schema::ExternalData* ext = s->external()) {
      // Its bytes are in a data file: checked against the entry when the program is bound to
      // it (Program::bind_external_data), not against this file's segment area.
      if (!elements_aligned(ext->sizes()) || !is_valid_scalar_type(static_cast<int>(ext->dtype()))) {
        return invalid(diag, "external segment %u has a misaligned sizes vector or an unknown dtype", i);
      }
      continue;
    }
    if (s->offset() % kSegmentAlignment != 0) {
      return invalid(diag, "data segment %u is not %zu-byte aligned", i, kSegmentAlignment);
    }
    if (!fits(s->offset(), s->size(), segment_area_size)) {
      return fail(diag, Error::InvalidProgram,
                  "invalid program: data segment %u lies outside the file (truncated?)", i);
    }
  }
  const auto* states = program->shared_state();
  for (uoffset_t i = 0; states != nullptr && i < states->size(); ++i) {
    const schema::SharedState* s = states->Get(i);
    if (s->segment_index() >= num_segments || s->nbytes() > segments->Get(s->segment_index())->size()) {
      return invalid(diag, "shared state %u has no initial value of its %llu bytes", i,
                     static_cast<unsigned long long>(s->nbytes()));
    }
  }
  const auto* methods = program->methods();
  const uoffset_t num_methods = methods ? methods->size() : 0;
  if (num_methods == 0) return fail(diag, Error::InvalidProgram, "invalid program: it has no methods");
  for (uoffset_t i = 0; i < num_methods; ++i) {
    EMBER_TRY(MethodValidator(program, methods->Get(i), diag).run(i));
    const flatbuffers::String* b = methods->Get(i)->name();
    for (uoffset_t j = 0; j < i; ++j) {
      // Length + bytes, not strcmp on c_str() (GCC 12 -Wstringop-overread false positive).
      const flatbuffers::String* a = methods->Get(j)->name();
      if (a->size() == b->size() && std::memcmp(a->data(), b->data(), a->size()) == 0) {
        return fail(diag, Error::InvalidProgram, "invalid program: two methods are named '%s'", b->c_str());
      }
    }
  }
  // Program.bundled_cases is read only by //extension/bundled, which validates it there.
  return validate_metadata(program, diag);
}

}  // namespace ember
