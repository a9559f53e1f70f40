#include "runtime/program/method_meta.h"

#include "schema/program_generated.h"

namespace ember {
namespace {

ValueTag tag_of(const schema::Value* value) {
  switch (value->value_type()) {
    case schema::ValueKind::Int: return ValueTag::Int;
    case schema::ValueKind::Double: return ValueTag::Double;
    case schema::ValueKind::Bool: return ValueTag::Bool;
    case schema::ValueKind::String: return ValueTag::String;
    case schema::ValueKind::Tensor: return ValueTag::Tensor;
    case schema::ValueKind::IntList: return ValueTag::IntList;
    case schema::ValueKind::DoubleList: return ValueTag::DoubleList;
    case schema::ValueKind::BoolList: return ValueTag::BoolList;
    case schema::ValueKind::TensorList: return ValueTag::TensorList;
    case schema::ValueKind::OptionalTensorList: return ValueTag::OptionalTensorList;
    default: return ValueTag::None;
  }
}

const schema::Value* value_at(const schema::Method* m, const flatbuffers::Vector<uint32_t>* list,
                              size_t index) {
  if (list == nullptr || index >= list->size() || m->values() == nullptr) return nullptr;
  uint32_t v = list->Get(static_cast<flatbuffers::uoffset_t>(index));
  if (v >= m->values()->size()) return nullptr;
  return m->values()->Get(v);
}

Result<TensorInfo> tensor_info(const schema::Value* value) {
  if (value == nullptr || value->value_type() != schema::ValueKind::Tensor) {
    return Error::InvalidArgument;
  }
  const schema::Tensor* t = value->value_as_Tensor();
  TensorInfo info;
  info.dtype = static_cast<ScalarType>(t->dtype());
  if (t->sizes() != nullptr) {
    info.max_sizes = Span<const int64_t>(t->sizes()->data(), t->sizes()->size());
  }
  info.dynamic = t->dynamism() == schema::ShapeDynamism::DynamicBounded;
  info.nbytes = t->nbytes();
  return info;
}

}  // namespace

const char* MethodMeta::name() const {
  return method_->name() ? method_->name()->c_str() : "";
}
size_t MethodMeta::num_inputs() const { return method_->inputs() ? method_->inputs()->size() : 0; }
size_t MethodMeta::num_outputs() const {
  return method_->outputs() ? method_->outputs()->size() : 0;
}
ValueTag MethodMeta::input_tag(size_t index) const {
  const schema::Value* v = value_at(method_, method_->inputs(), index);
  return v ? tag_of(v) : ValueTag::None;
}
ValueTag MethodMeta::output_tag(size_t index) const {
  const schema::Value* v = value_at(method_, method_->outputs(), index);
  return v ? tag_of(v) : ValueTag::None;
}
Result<TensorInfo> MethodMeta::input_tensor_info(size_t index) const {
  return tensor_info(value_at(method_, method_->inputs(), index));
}
Result<TensorInfo> MethodMeta::output_tensor_info(size_t index) const {
  return tensor_info(value_at(method_, method_->outputs(), index));
}
size_t MethodMeta::num_arenas() const {
  return method_->arena_sizes() ? method_->arena_sizes()->size() : 0;
}
Result<size_t> MethodMeta::arena_size(size_t index) const {
  if (index >= num_arenas()) return Error::NotFound;
  return static_cast<size_t>(method_->arena_sizes()->Get(static_cast<flatbuffers::uoffset_t>(index)));
}
size_t MethodMeta::num_instructions() const {
  return method_->instructions() ? method_->instructions()->size() : 0;
}
size_t MethodMeta::num_delegates() const {
  return method_->delegates() ? method_->delegates()->size() : 0;
}

const char* MethodMeta::delegate_backend_id(size_t index) const {
  if (index >= num_delegates()) return "";
  const auto* delegate = method_->delegates()->Get(static_cast<flatbuffers::uoffset_t>(index));
  return delegate->backend_id() ? delegate->backend_id()->c_str() : "";
}

size_t MethodMeta::num_mutable_state_tensors() const {
  size_t count = 0;
  if (method_->values() == nullptr) return 0;
  for (const schema::Value* value : *method_->values()) {
    if (value->value_type() == schema::ValueKind::Tensor &&
        value->value_as_Tensor()->location() == schema::DataLocation::MutableState) {
      ++count;
    }
  }
  return count;
}

}  // namespace ember
