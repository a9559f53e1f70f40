#include "runtime/program/program_validator.h"

#include <cstdint>
#include <cstring>

#include "runtime/core/scalar_type.h"
#include "runtime/core/tensor.h"
#include "runtime/program/file_header.h"
#include "schema/program_generated.h"

namespace ember {
namespace {

using flatbuffers::uoffset_t;

// The FlatBuffer verifier (flatbuffers 2.0.8) checks a vector's alignment for its 4-byte
// length only, not for its elements: 8-byte elements may sit at 4 mod 8 and reading them
// would be a misaligned access. The program buffer itself is 8-byte aligned (checked).
template <typename T>
bool elements_aligned(const flatbuffers::Vector<T>* v) {
  // An empty vector has no elements to misread (FlatBuffers does not pad those).
  return v == nullptr || v->size() == 0 || reinterpret_cast<uintptr_t>(v->data()) % alignof(T) == 0;
}

// a + b <= limit, without overflow.
bool fits(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

class MethodValidator {
 public:
  MethodValidator(const schema::Program* program, const schema::Method* method, size_t index,
                  Diagnostic* diag)
      : program_(program), method_(method), index_(index), diag_(diag) {}

  Error run() {
    if (method_->name() == nullptr) return bad("method %zu has no name", index_);
    name_ = method_->name()->c_str();
    if (method_->values() == nullptr) return bad("method '%s' has no value table", name_);
    num_values_ = method_->values()->size();
    if (!elements_aligned(method_->arena_sizes())) return bad("method '%s' has a misaligned arena_sizes vector", name_);
    for (uoffset_t i = 0; i < num_values_; ++i) EMBER_TRY(check_value(i));
    EMBER_TRY(check_index_list(method_->inputs(), "input"));
    EMBER_TRY(check_index_list(method_->outputs(), "output"));
    EMBER_TRY(check_mutable_inputs());
    if (method_->operators() != nullptr) {
      for (uoffset_t i = 0; i < method_->operators()->size(); ++i) {
        const schema::Operator* op = method_->operators()->Get(i);
        if (op->name() == nullptr) return bad("operator %u of method '%s' has no name", i, name_);
      }
    }
    if (method_->delegates() != nullptr) {
      for (uoffset_t i = 0; i < method_->delegates()->size(); ++i) EMBER_TRY(check_delegate(i));
    }
    if (method_->instructions() != nullptr) {
      for (uoffset_t i = 0; i < method_->instructions()->size(); ++i) {
        EMBER_TRY(check_instruction(i));
      }
    }
    return check_debug();
  }

 private:
  Error bad(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    char text[300];
    va_list args;
    va_start(args, format);
    std::vsnprintf(text, sizeof(text), format, args);
    va_end(args);
    return fail(diag_, Error::InvalidProgram, "invalid program: %s; re-export the model", text);
  }

  schema::ValueKind kind(int64_t value) const {
    return method_->values()->Get(static_cast<uoffset_t>(value))->value_type();
  }
  bool valid_index(int64_t value) const { return value >= 0 && value < num_values_; }

  Error check_index_list(const flatbuffers::Vector<uint32_t>* list, const char* what) {
    if (list == nullptr) return Error::Ok;
    for (uoffset_t i = 0; i < list->size(); ++i) {
      if (!valid_index(list->Get(i))) {
        return bad("%s %u of method '%s' refers to value %u of %lld", what, i, name_,
                   list->Get(i), static_cast<long long>(num_values_));
      }
    }
    return Error::Ok;
  }

  Error check_arena(uint32_t arena, uint64_t offset, uint64_t nbytes, uoffset_t value) {
    const auto* arenas = method_->arena_sizes();
    if (arenas == nullptr || arena >= arenas->size()) {
      return bad("tensor %u uses arena %u, which does not exist", value, arena);
    }
    if (!fits(offset, nbytes, arenas->Get(arena))) {
      return bad("tensor %u (%llu bytes at %llu) overruns arena %u of %llu bytes", value,
                 static_cast<unsigned long long>(nbytes), static_cast<unsigned long long>(offset),
                 arena, static_cast<unsigned long long>(arenas->Get(arena)));
    }
    return Error::Ok;
  }

  Error check_segment(uint32_t segment, uint64_t offset, uint64_t nbytes, uoffset_t value) {
    const auto* segments = program_->segments();
    if (segments == nullptr || segment >= segments->size()) {
      return bad("tensor %u refers to data segment %u, which does not exist", value, segment);
    }
    if (!fits(offset, nbytes, segments->Get(segment)->size())) {
      return bad("tensor %u reads past the end of data segment %u", value, segment);
    }
    return Error::Ok;
  }

  Error check_tensor(const schema::Tensor* t, uoffset_t i) {
    if (!is_valid_scalar_type(static_cast<int>(t->dtype()))) {
      return bad("tensor %u has unknown dtype %d", i, static_cast<int>(t->dtype()));
    }
    if (!elements_aligned(t->sizes())) return bad("tensor %u has a misaligned sizes vector", i);
    uint32_t rank = t->sizes() ? t->sizes()->size() : 0;
    if (rank > static_cast<uint32_t>(kMaxRank)) return bad("tensor %u has rank %u > %d", i, rank, kMaxRank);
    // The product of the non-zero dims is bounded too: a zero dim makes the tensor empty, but
    // kernels still compute strides from the other dims (a fuzzer-found int64 overflow).
    uint64_t numel = 1, extent = 1;
    for (uint32_t d = 0; d < rank; ++d) {
      int64_t s = t->sizes()->Get(d);
      if (s < 0 || s > (int64_t{1} << 40)) return bad("tensor %u has invalid size %lld", i, static_cast<long long>(s));
      if (s != 0 && extent > (uint64_t{1} << 48) / static_cast<uint64_t>(s)) {
        return bad("tensor %u is too large", i);
      }
      if (s != 0) extent *= static_cast<uint64_t>(s);
      numel *= static_cast<uint64_t>(s);
    }
    if (t->dim_order() != nullptr && t->dim_order()->size() != 0) {
      if (t->dim_order()->size() != rank) return bad("tensor %u dim_order length != rank", i);
      uint32_t seen = 0;
      for (uint32_t d = 0; d < rank; ++d) {
        uint8_t dim = t->dim_order()->Get(d);
        if (dim >= rank || (seen & (1u << dim))) return bad("tensor %u dim_order is not a permutation", i);
        seen |= 1u << dim;
      }
    }
    if (t->dynamism() != schema::ShapeDynamism::Static &&
        t->dynamism() != schema::ShapeDynamism::DynamicBounded) {
      return bad("tensor %u has unknown shape dynamism", i);
    }
    const uint64_t esize = element_size(static_cast<ScalarType>(t->dtype()));
    uint64_t needed = numel * esize;
    // Kernels access elements as their type: data must be aligned to the element size
    // (arenas, segments and the program itself are at least 8-byte aligned).
    bool in_arena = t->location() == schema::DataLocation::Arena ||
                    t->location() == schema::DataLocation::CallerInput ||
                    t->location() == schema::DataLocation::MutableState;
    bool in_segment = t->location() == schema::DataLocation::Constant ||
                      t->location() == schema::DataLocation::MutableState;
    if ((in_arena && t->arena_offset() % esize != 0) || (in_segment && t->segment_offset() % esize != 0)) {
      return bad("tensor %u is misaligned: its offset is not a multiple of its %llu-byte element size", i,
                 static_cast<unsigned long long>(esize));
    }
    switch (t->location()) {
      case schema::DataLocation::Unplanned:
        return Error::Ok;
      case schema::DataLocation::Arena:
      case schema::DataLocation::CallerInput:
        if (t->nbytes() < needed) return bad("tensor %u capacity is smaller than its sizes", i);
        return check_arena(t->arena_id(), t->arena_offset(), t->nbytes(), i);
      case schema::DataLocation::Constant:
        if (t->nbytes() < needed) return bad("tensor %u capacity is smaller than its sizes", i);
        return check_segment(t->segment_index(), t->segment_offset(), t->nbytes(), i);
      case schema::DataLocation::MutableState:
        if (t->nbytes() < needed) return bad("tensor %u capacity is smaller than its sizes", i);
        EMBER_TRY(check_arena(t->arena_id(), t->arena_offset(), t->nbytes(), i));
        return check_segment(t->segment_index(), t->segment_offset(), t->nbytes(), i);
    }
    return bad("tensor %u has unknown data location %d", i, static_cast<int>(t->location()));
  }

  Error check_value(uoffset_t i) {
    const schema::Value* value = method_->values()->Get(i);
    // The FlatBuffer verifier accepts a union whose type is set but whose table is absent.
    if (value->value_type() != schema::ValueKind::NONE && value->value_type() != schema::ValueKind::None &&
        value->value() == nullptr) {
      return bad("value %u has a kind but no payload", i);
    }
    switch (value->value_type()) {
      case schema::ValueKind::NONE:
      case schema::ValueKind::None:
      case schema::ValueKind::Int:
      case schema::ValueKind::Double:
      case schema::ValueKind::Bool:
        return Error::Ok;
      case schema::ValueKind::String:
        return value->value_as_String()->value() ? Error::Ok : bad("string %u is null", i);
      case schema::ValueKind::Tensor:
        return check_tensor(value->value_as_Tensor(), i);
      case schema::ValueKind::IntList: {
        const schema::IntList* list = value->value_as_IntList();
        if (list->items() == nullptr) return bad("int list %u has no items", i);
        if (!elements_aligned(list->items())) return bad("int list %u is misaligned", i);
        if (list->value_refs() != nullptr) {
          if (list->value_refs()->size() != list->items()->size()) {
            return bad("int list %u: value_refs and items differ in length", i);
          }
          for (uoffset_t k = 0; k < list->value_refs()->size(); ++k) {
            int32_t ref = list->value_refs()->Get(k);
            if (ref < 0) continue;
            if (!valid_index(ref) || kind(ref) != schema::ValueKind::Int) {
              return bad("int list %u refers to value %d, which is not an int", i, ref);
            }
          }
        }
        return Error::Ok;
      }
      case schema::ValueKind::DoubleList:
        if (!elements_aligned(value->value_as_DoubleList()->items())) return bad("double list %u is misaligned", i);
        return value->value_as_DoubleList()->items() ? Error::Ok : bad("double list %u is null", i);
      case schema::ValueKind::BoolList:
        return value->value_as_BoolList()->items() ? Error::Ok : bad("bool list %u is null", i);
      case schema::ValueKind::TensorList:
      case schema::ValueKind::OptionalTensorList: {
        bool optional = value->value_type() == schema::ValueKind::OptionalTensorList;
        const flatbuffers::Vector<int32_t>* items =
            optional ? value->value_as_OptionalTensorList()->items()
                     : value->value_as_TensorList()->items();
        if (items == nullptr) return bad("tensor list %u is null", i);
        for (uoffset_t k = 0; k < items->size(); ++k) {
          int32_t ref = items->Get(k);
          if (optional && ref == -1) continue;
          if (!valid_index(ref) || kind(ref) != schema::ValueKind::Tensor) {
            return bad("tensor list %u refers to value %d, which is not a tensor", i, ref);
          }
        }
        return Error::Ok;
      }
    }
    return bad("value %u has unknown kind %d", i, static_cast<int>(value->value_type()));
  }

  Error check_args(const flatbuffers::Vector<int32_t>* args, uoffset_t instr) {
    if (args == nullptr) return Error::Ok;
    for (uoffset_t k = 0; k < args->size(); ++k) {
      if (!valid_index(args->Get(k))) {
        return bad("instruction %u argument %u refers to value %d of %lld", instr, k, args->Get(k),
                   static_cast<long long>(num_values_));
      }
    }
    return Error::Ok;
  }

  Error check_instruction(uoffset_t i) {
    const schema::Instruction* instr = method_->instructions()->Get(i);
    uint32_t num_ops = method_->operators() ? method_->operators()->size() : 0;
    uint32_t num_delegates = method_->delegates() ? method_->delegates()->size() : 0;
    if (instr->kind() == nullptr) return bad("instruction %u has no payload", i);
    switch (instr->kind_type()) {
      case schema::InstructionKind::KernelCall: {
        const auto* call = instr->kind_as_KernelCall();
        if (call->op_index() >= num_ops) return bad("instruction %u calls operator %u of %u", i, call->op_index(), num_ops);
        EMBER_TRY(check_args(call->args(), i));
        return check_call_outputs(call->args(), call->num_outputs(), i);
      }
      case schema::InstructionKind::DelegateCall: {
        const auto* call = instr->kind_as_DelegateCall();
        if (call->delegate_index() >= num_delegates) return bad("instruction %u calls delegate %u of %u", i, call->delegate_index(), num_delegates);
        EMBER_TRY(check_args(call->args(), i));
        return check_call_outputs(call->args(), call->num_outputs(), i);
      }
      case schema::InstructionKind::Move: {
        const auto* move = instr->kind_as_Move();
        if (!valid_index(move->from_value()) || !valid_index(move->to_value())) return bad("instruction %u moves an invalid value", i);
        if (kind(move->from_value()) != kind(move->to_value())) return bad("instruction %u moves between different kinds", i);
        return check_writable(move->to_value(), i);
      }
      case schema::InstructionKind::JumpFalse: {
        const auto* jump = instr->kind_as_JumpFalse();
        if (!valid_index(jump->condition_value()) || kind(jump->condition_value()) != schema::ValueKind::Bool) {
          return bad("instruction %u jumps on a value that is not a bool", i);
        }
        if (jump->destination() > method_->instructions()->size()) return bad("instruction %u jumps out of the method", i);
        return Error::Ok;
      }
      case schema::InstructionKind::Free:
        return valid_index(instr->kind_as_Free()->value()) ? Error::Ok : bad("instruction %u frees an invalid value", i);
      default:
        return bad("instruction %u has unknown kind", i);
    }
  }

  // The optional debug table is read by index of instruction: it must match them one to one.
  Error check_debug() {
    const auto* debug = method_->debug();
    if (debug == nullptr) return Error::Ok;
    const uoffset_t n = method_->instructions() ? method_->instructions()->size() : 0;
    if (debug->size() != n) {
      return bad("method '%s' has %u debug entries for %u instructions", name_, debug->size(), n);
    }
    for (uoffset_t i = 0; i < n; ++i) {
      if (debug->Get(i) == nullptr) return bad("debug entry %u of method '%s' is missing", i, name_);
    }
    return Error::Ok;
  }

  // Inputs a method may write must be tensor inputs in caller memory.
  Error check_mutable_inputs() {
    const auto* mutable_inputs = method_->mutable_inputs();
    if (mutable_inputs == nullptr) return Error::Ok;
    for (uoffset_t k = 0; k < mutable_inputs->size(); ++k) {
      uint32_t v = mutable_inputs->Get(k);
      bool is_input = false;
      if (method_->inputs() != nullptr) {
        for (uoffset_t j = 0; j < method_->inputs()->size(); ++j) is_input = is_input || method_->inputs()->Get(j) == v;
      }
      if (!is_input || !valid_index(v) || kind(v) != schema::ValueKind::Tensor ||
          method_->values()->Get(v)->value_as_Tensor()->location() != schema::DataLocation::CallerInput) {
        return bad("mutable input %u of method '%s' (value %u) is not a tensor input", k, name_, v);
      }
    }
    return Error::Ok;
  }

  bool is_mutable_input(uint32_t value) const {
    const auto* mutable_inputs = method_->mutable_inputs();
    if (mutable_inputs == nullptr) return false;
    for (uoffset_t k = 0; k < mutable_inputs->size(); ++k) {
      if (mutable_inputs->Get(k) == value) return true;
    }
    return false;
  }

  // A value an instruction writes: no constant (read-only, possibly a read-only mapping of
  // the file) and no caller input the method does not declare mutable.
  // `inputs_known`: false for calls of programs from before outputs were declared, where
  // only the constant rule applies (such a call's last argument may be an input it reads).
  Error check_writable(uint32_t value, uoffset_t instr, bool inputs_known = true) {
    schema::ValueKind k = kind(value);
    if (k == schema::ValueKind::TensorList) {
      const auto* items = method_->values()->Get(value)->value_as_TensorList()->items();
      for (uoffset_t j = 0; j < items->size(); ++j) {
        EMBER_TRY(check_writable(static_cast<uint32_t>(items->Get(j)), instr, inputs_known));
      }
      return Error::Ok;
    }
    if (k != schema::ValueKind::Tensor) return Error::Ok;
    schema::DataLocation loc = method_->values()->Get(value)->value_as_Tensor()->location();
    if (loc == schema::DataLocation::Constant) {
      return bad("instruction %u writes tensor %u, a constant", instr, value);
    }
    if (inputs_known && loc == schema::DataLocation::CallerInput && !is_mutable_input(value)) {
      return bad("instruction %u writes tensor %u, an input the method does not declare mutable", instr, value);
    }
    return Error::Ok;
  }

  // The trailing `num_outputs` arguments of a call are written. Programs from before calls
  // declared their outputs are checked on their last argument (an exporter-written call
  // always ends with an output).
  Error check_call_outputs(const flatbuffers::Vector<int32_t>* args, uint32_t num_outputs, uoffset_t instr) {
    uint32_t n = args ? args->size() : 0;
    const bool declared = method_->calls_declare_outputs();
    if (!declared) num_outputs = n > 0 ? 1 : 0;
    if (num_outputs > n) return bad("instruction %u declares %u outputs but has %u arguments", instr, num_outputs, n);
    for (uint32_t k = n - num_outputs; k < n; ++k) {
      EMBER_TRY(check_writable(static_cast<uint32_t>(args->Get(k)), instr, declared));
    }
    return Error::Ok;
  }

  Error check_delegate(uoffset_t i) {
    const schema::Delegate* d = method_->delegates()->Get(i);
    if (d->backend_id() == nullptr) return bad("delegate %u has no backend id", i);
    int32_t seg = d->blob_segment();
    uint32_t num_segments = program_->segments() ? program_->segments()->size() : 0;
    if (seg < -1 || (seg >= 0 && static_cast<uint32_t>(seg) >= num_segments)) {
      return bad("delegate %u refers to data segment %d of %u", i, seg, num_segments);
    }
    if (d->compile_specs() != nullptr) {
      for (uoffset_t k = 0; k < d->compile_specs()->size(); ++k) {
        if (d->compile_specs()->Get(k)->key() == nullptr) return bad("delegate %u compile spec %u has no key", i, k);
      }
    }
    return Error::Ok;
  }

  const schema::Program* program_;
  const schema::Method* method_;
  size_t index_;
  Diagnostic* diag_;
  const char* name_ = "";
  int64_t num_values_ = 0;
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
  if (program->segments() != nullptr) {
    for (uoffset_t i = 0; i < program->segments()->size(); ++i) {
      const schema::Segment* s = program->segments()->Get(i);
      if (s->offset() % kSegmentAlignment != 0) {
        return fail(diag, Error::InvalidProgram,
                    "invalid program: data segment %u is not %zu-byte aligned; re-export the model", i,
                    kSegmentAlignment);
      }
      if (!fits(s->offset(), s->size(), segment_area_size)) {
        return fail(diag, Error::InvalidProgram,
                    "invalid program: data segment %u lies outside the file (truncated?)", i);
      }
    }
  }
  if (program->methods() == nullptr || program->methods()->size() == 0) {
    return fail(diag, Error::InvalidProgram, "invalid program: it has no methods");
  }
  for (uoffset_t i = 0; i < program->methods()->size(); ++i) {
    MethodValidator validator(program, program->methods()->Get(i), i, diag);
    EMBER_TRY(validator.run());
    for (uoffset_t j = 0; j < i; ++j) {
      // Length + bytes, not strcmp on c_str() (GCC 12 -Wstringop-overread false positive).
      const flatbuffers::String* a = program->methods()->Get(j)->name();
      const flatbuffers::String* b = program->methods()->Get(i)->name();
      if (a->size() == b->size() && std::memcmp(a->data(), b->data(), a->size()) == 0) {
        return fail(diag, Error::InvalidProgram, "invalid program: two methods are named '%s'",
                    program->methods()->Get(i)->name()->c_str());
      }
    }
  }
  // Program.bundled_cases is read only by //extension/bundled, which validates it there.
  return validate_metadata(program, diag);
}

}  // namespace ember
