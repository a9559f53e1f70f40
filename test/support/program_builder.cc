#include "test/support/program_builder.h"

#include <cstring>

#include "flatbuffers/flatbuffers.h"
#include "runtime/backend/backend.h"
#include "runtime/program/file_header.h"
#include "schema/program_generated.h"

namespace ember {
namespace testing {
namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

size_t tensor_nbytes(ScalarType dtype, const std::vector<int64_t>& sizes) {
  size_t n = 1;
  for (int64_t s : sizes) n *= static_cast<size_t>(s);
  return n * element_size(dtype);
}

// ---------------------------------------------------------------------------------------
// MethodBuilder

uint32_t MethodBuilder::push(Value v) {
  values_.push_back(std::move(v));
  return static_cast<uint32_t>(values_.size() - 1);
}

uint32_t MethodBuilder::push_ins(Ins ins) {
  instructions_.push_back(std::move(ins));
  return static_cast<uint32_t>(instructions_.size() - 1);
}

uint64_t MethodBuilder::reserve(uint32_t arena, uint64_t nbytes) {
  if (arena_used_.size() <= arena) arena_used_.resize(arena + 1, 0);
  uint64_t offset = align_up(arena_used_[arena], 64);
  arena_used_[arena] = offset + nbytes;
  return offset;
}

std::vector<uint64_t> MethodBuilder::arena_sizes() const {
  if (has_arena_override_) return arena_override_;
  std::vector<uint64_t> sizes;
  for (uint64_t used : arena_used_) sizes.push_back(align_up(used, 64));
  return sizes;
}

uint32_t MethodBuilder::add_tensor(const TensorDesc& desc) {
  Value v;
  v.kind = Kind::Tensor;
  v.tensor = desc;
  if (v.tensor.nbytes < 0) v.tensor.nbytes = static_cast<int64_t>(tensor_nbytes(desc.dtype, desc.sizes));
  if (desc.location == Location::Arena || desc.location == Location::CallerInput ||
      desc.location == Location::MutableState) {
    // Keep computed arena sizes covering explicitly placed tensors too.
    if (arena_used_.size() <= desc.arena_id) arena_used_.resize(desc.arena_id + 1, 0);
    uint64_t end = desc.arena_offset + static_cast<uint64_t>(v.tensor.nbytes);
    if (end > arena_used_[desc.arena_id]) arena_used_[desc.arena_id] = end;
  }
  return push(std::move(v));
}

uint32_t MethodBuilder::planned_tensor(ScalarType dtype, std::vector<int64_t> sizes, bool dynamic,
                                       uint32_t arena) {
  TensorDesc d;
  d.dtype = dtype;
  d.dynamic = dynamic;
  d.location = Location::Arena;
  d.arena_id = arena;
  d.nbytes = static_cast<int64_t>(tensor_nbytes(dtype, sizes));
  d.arena_offset = reserve(arena, static_cast<uint64_t>(d.nbytes));
  d.sizes = std::move(sizes);
  return add_tensor(d);
}

uint32_t MethodBuilder::input_tensor(ScalarType dtype, std::vector<int64_t> sizes, bool dynamic,
                                     uint32_t arena) {
  TensorDesc d;
  d.dtype = dtype;
  d.dynamic = dynamic;
  d.location = Location::CallerInput;
  d.arena_id = arena;
  d.nbytes = static_cast<int64_t>(tensor_nbytes(dtype, sizes));
  d.arena_offset = reserve(arena, static_cast<uint64_t>(d.nbytes));
  d.sizes = std::move(sizes);
  return add_tensor(d);
}

uint32_t MethodBuilder::constant_tensor(ScalarType dtype, std::vector<int64_t> sizes, const void* data,
                                        size_t data_bytes) {
  TensorDesc d;
  d.dtype = dtype;
  d.location = Location::Constant;
  d.segment_index = program_->add_segment(data, data_bytes);
  d.nbytes = static_cast<int64_t>(tensor_nbytes(dtype, sizes));
  d.sizes = std::move(sizes);
  return add_tensor(d);
}

uint32_t MethodBuilder::state_tensor(ScalarType dtype, std::vector<int64_t> sizes, const void* initial,
                                     size_t initial_bytes, uint32_t arena) {
  TensorDesc d;
  d.dtype = dtype;
  d.location = Location::MutableState;
  d.arena_id = arena;
  d.segment_index = program_->add_segment(initial, initial_bytes);
  d.nbytes = static_cast<int64_t>(tensor_nbytes(dtype, sizes));
  d.arena_offset = reserve(arena, static_cast<uint64_t>(d.nbytes));
  d.sizes = std::move(sizes);
  return add_tensor(d);
}

uint32_t MethodBuilder::unplanned_tensor(ScalarType dtype, std::vector<int64_t> sizes) {
  TensorDesc d;
  d.dtype = dtype;
  d.location = Location::Unplanned;
  d.nbytes = 0;
  d.sizes = std::move(sizes);
  return add_tensor(d);
}

uint32_t MethodBuilder::none() { return push(Value{}); }

uint32_t MethodBuilder::int_value(int64_t x) {
  Value v;
  v.kind = Kind::Int;
  v.i = x;
  return push(std::move(v));
}

uint32_t MethodBuilder::double_value(double x) {
  Value v;
  v.kind = Kind::Double;
  v.d = x;
  return push(std::move(v));
}

uint32_t MethodBuilder::bool_value(bool x) {
  Value v;
  v.kind = Kind::Bool;
  v.i = x ? 1 : 0;
  return push(std::move(v));
}

uint32_t MethodBuilder::string_value(const std::string& x) {
  Value v;
  v.kind = Kind::String;
  v.s = x;
  return push(std::move(v));
}

uint32_t MethodBuilder::int_list(std::vector<int64_t> items, std::vector<int32_t> refs) {
  Value v;
  v.kind = Kind::IntList;
  v.ints = std::move(items);
  v.refs = std::move(refs);
  return push(std::move(v));
}

uint32_t MethodBuilder::double_list(std::vector<double> items) {
  Value v;
  v.kind = Kind::DoubleList;
  v.doubles = std::move(items);
  return push(std::move(v));
}

uint32_t MethodBuilder::bool_list(std::vector<bool> items) {
  Value v;
  v.kind = Kind::BoolList;
  for (bool b : items) v.bools.push_back(b ? 1 : 0);
  return push(std::move(v));
}

uint32_t MethodBuilder::tensor_list(std::vector<int32_t> items) {
  Value v;
  v.kind = Kind::TensorList;
  v.refs = std::move(items);
  return push(std::move(v));
}

uint32_t MethodBuilder::optional_tensor_list(std::vector<int32_t> items) {
  Value v;
  v.kind = Kind::OptionalTensorList;
  v.refs = std::move(items);
  return push(std::move(v));
}

uint32_t MethodBuilder::value_without_payload(uint8_t kind) {
  Value v;
  v.raw_kind = kind;
  return push(std::move(v));
}

uint32_t MethodBuilder::instruction_without_payload(uint8_t kind) {
  Ins ins{InsKind::Free, 0, 0, {}};
  ins.raw_kind = kind;
  return push_ins(std::move(ins));
}

uint32_t MethodBuilder::op(const std::string& name, const std::string& overload) {
  for (size_t i = 0; i < operators_.size(); ++i) {
    if (operators_[i].first == name && operators_[i].second == overload) return static_cast<uint32_t>(i);
  }
  operators_.emplace_back(name, overload);
  return static_cast<uint32_t>(operators_.size() - 1);
}

uint32_t MethodBuilder::kernel(uint32_t op_index, std::vector<int32_t> args) {
  return push_ins(Ins{InsKind::Kernel, op_index, 0, std::move(args)});
}

uint32_t MethodBuilder::delegate(const std::string& backend_id, int32_t blob_segment,
                                 std::vector<uint8_t> inline_blob,
                                 std::vector<std::pair<std::string, std::vector<uint8_t>>> compile_specs) {
  delegates_.push_back(Delegate{backend_id, blob_segment, std::move(inline_blob), std::move(compile_specs)});
  return static_cast<uint32_t>(delegates_.size() - 1);
}

uint32_t MethodBuilder::delegate_call(uint32_t delegate_index, std::vector<int32_t> args) {
  return push_ins(Ins{InsKind::Delegate, delegate_index, 0, std::move(args)});
}

uint32_t MethodBuilder::move(uint32_t from, uint32_t to) { return push_ins(Ins{InsKind::Move, from, to, {}}); }

uint32_t MethodBuilder::jump_false(uint32_t condition, uint32_t destination) {
  return push_ins(Ins{InsKind::JumpFalse, condition, destination, {}});
}

uint32_t MethodBuilder::free_value(uint32_t value) { return push_ins(Ins{InsKind::Free, value, 0, {}}); }

void MethodBuilder::patch_jump(uint32_t instruction, uint32_t destination) {
  instructions_.at(instruction).b = destination;
}

// ---------------------------------------------------------------------------------------
// ProgramBuilder

ProgramBuilder::ProgramBuilder() : format_version_(kFormatVersion) {}
ProgramBuilder::~ProgramBuilder() = default;

MethodBuilder& ProgramBuilder::method(const std::string& name) {
  methods_.emplace_back(new MethodBuilder(this, name));
  return *methods_.back();
}

uint32_t ProgramBuilder::add_segment(const void* data, size_t size) {
  Segment s;
  s.bytes.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + size);
  segments_.push_back(std::move(s));
  return static_cast<uint32_t>(segments_.size() - 1);
}

uint32_t ProgramBuilder::add_raw_segment_entry(uint64_t offset, uint64_t size) {
  Segment s;
  s.raw = true;
  s.offset = offset;
  s.size = size;
  segments_.push_back(std::move(s));
  return static_cast<uint32_t>(segments_.size() - 1);
}

PteBytes ProgramBuilder::build() const {
  namespace fb = flatbuffers;
  fb::FlatBufferBuilder b(1024);

  std::vector<fb::Offset<schema::Method>> methods;
  for (const auto& mp : methods_) {
    const MethodBuilder& m = *mp;
    std::vector<fb::Offset<schema::Value>> values;
    for (const MethodBuilder::Value& v : m.values_) {
      if (v.raw_kind >= 0) {
        values.push_back(schema::CreateValue(b, static_cast<schema::ValueKind>(v.raw_kind), 0));
        continue;
      }
      schema::ValueKind kind = schema::ValueKind::None;
      fb::Offset<void> off;
      switch (v.kind) {
        case MethodBuilder::Kind::None:
          kind = schema::ValueKind::None;
          off = schema::CreateNone(b).Union();
          break;
        case MethodBuilder::Kind::Int:
          kind = schema::ValueKind::Int;
          off = schema::CreateInt(b, v.i).Union();
          break;
        case MethodBuilder::Kind::Double:
          kind = schema::ValueKind::Double;
          off = schema::CreateDouble(b, v.d).Union();
          break;
        case MethodBuilder::Kind::Bool:
          kind = schema::ValueKind::Bool;
          off = schema::CreateBool(b, v.i != 0).Union();
          break;
        case MethodBuilder::Kind::String:
          kind = schema::ValueKind::String;
          off = schema::CreateStringDirect(b, v.s.c_str()).Union();
          break;
        case MethodBuilder::Kind::Tensor: {
          const TensorDesc& t = v.tensor;
          kind = schema::ValueKind::Tensor;
          auto sizes = b.CreateVector(t.sizes);
          auto dim_order = t.dim_order.empty() ? 0 : b.CreateVector(t.dim_order);
          off = schema::CreateTensor(b, static_cast<schema::ScalarType>(t.dtype), sizes, dim_order,
                                     t.dynamic ? schema::ShapeDynamism::DynamicBounded
                                               : schema::ShapeDynamism::Static,
                                     static_cast<schema::DataLocation>(t.location), t.arena_id,
                                     t.arena_offset, t.segment_index, t.segment_offset,
                                     static_cast<uint64_t>(t.nbytes))
                    .Union();
          break;
        }
        case MethodBuilder::Kind::IntList: {
          kind = schema::ValueKind::IntList;
          auto items = b.CreateVector(v.ints);
          auto refs = v.refs.empty() ? 0 : b.CreateVector(v.refs);
          off = schema::CreateIntList(b, items, refs).Union();
          break;
        }
        case MethodBuilder::Kind::DoubleList:
          kind = schema::ValueKind::DoubleList;
          off = schema::CreateDoubleList(b, b.CreateVector(v.doubles)).Union();
          break;
        case MethodBuilder::Kind::BoolList:
          kind = schema::ValueKind::BoolList;
          off = schema::CreateBoolList(b, b.CreateVector(v.bools)).Union();
          break;
        case MethodBuilder::Kind::TensorList:
          kind = schema::ValueKind::TensorList;
          off = schema::CreateTensorList(b, b.CreateVector(v.refs)).Union();
          break;
        case MethodBuilder::Kind::OptionalTensorList:
          kind = schema::ValueKind::OptionalTensorList;
          off = schema::CreateOptionalTensorList(b, b.CreateVector(v.refs)).Union();
          break;
      }
      values.push_back(schema::CreateValue(b, kind, off));
    }
    std::vector<fb::Offset<schema::Operator>> ops;
    for (const auto& op : m.operators_) {
      ops.push_back(schema::CreateOperatorDirect(b, op.first.c_str(), op.second.c_str()));
    }
    std::vector<fb::Offset<schema::Instruction>> instructions;
    for (const MethodBuilder::Ins& ins : m.instructions_) {
      if (ins.raw_kind >= 0) {
        instructions.push_back(schema::CreateInstruction(b, static_cast<schema::InstructionKind>(ins.raw_kind), 0));
        continue;
      }
      schema::InstructionKind kind = schema::InstructionKind::NONE;
      fb::Offset<void> off;
      switch (ins.kind) {
        case MethodBuilder::InsKind::Kernel:
          kind = schema::InstructionKind::KernelCall;
          off = schema::CreateKernelCallDirect(b, ins.a, &ins.args, ins.b).Union();
          break;
        case MethodBuilder::InsKind::Delegate:
          kind = schema::InstructionKind::DelegateCall;
          off = schema::CreateDelegateCallDirect(b, ins.a, &ins.args, ins.b).Union();
          break;
        case MethodBuilder::InsKind::Move:
          kind = schema::InstructionKind::Move;
          off = schema::CreateMove(b, ins.a, ins.b).Union();
          break;
        case MethodBuilder::InsKind::JumpFalse:
          kind = schema::InstructionKind::JumpFalse;
          off = schema::CreateJumpFalse(b, ins.a, ins.b).Union();
          break;
        case MethodBuilder::InsKind::Free:
          kind = schema::InstructionKind::Free;
          off = schema::CreateFree(b, ins.a).Union();
          break;
      }
      instructions.push_back(schema::CreateInstruction(b, kind, off));
    }
    std::vector<fb::Offset<schema::Delegate>> delegates;
    for (const MethodBuilder::Delegate& d : m.delegates_) {
      std::vector<fb::Offset<schema::CompileSpec>> specs;
      for (const auto& spec : d.specs) {
        specs.push_back(schema::CreateCompileSpecDirect(b, spec.first.c_str(), &spec.second));
      }
      // An inline blob is aligned as the runtime requires (kDelegateBlobAlignment).
      fb::Offset<fb::Vector<uint8_t>> blob = 0;
      if (d.blob_segment < 0) {
        b.ForceVectorAlignment(d.inline_blob.size(), sizeof(uint8_t), kDelegateBlobAlignment);
        blob = b.CreateVector(d.inline_blob);
      }
      delegates.push_back(schema::CreateDelegate(b, b.CreateString(d.backend_id), b.CreateVector(specs),
                                                 d.blob_segment, blob));
    }
    std::vector<uint64_t> arenas = m.arena_sizes();
    std::vector<fb::Offset<schema::InstructionDebug>> debug;
    for (const auto& [name, source] : m.debug_) {
      debug.push_back(schema::CreateInstructionDebug(b, name.empty() ? 0 : b.CreateString(name),
                                                     source.empty() ? 0 : b.CreateString(source)));
    }
    methods.push_back(schema::CreateMethodDirect(b, m.name_.c_str(), &values, &m.inputs_, &m.outputs_, &ops,
                                                 &instructions, &delegates, &arenas, &m.mutable_inputs_,
                                                 m.declares_outputs_, m.has_debug_ ? &debug : nullptr));
  }

  // Segment layout: each segment at a 64-byte aligned offset inside the area.
  std::vector<fb::Offset<schema::Segment>> segments;
  std::vector<uint64_t> placed(segments_.size(), 0);
  uint64_t area_size = 0;
  for (size_t i = 0; i < segments_.size(); ++i) {
    const Segment& s = segments_[i];
    if (s.raw) {
      segments.push_back(schema::CreateSegment(b, s.offset, s.size));
      continue;
    }
    uint64_t offset = align_up(area_size, kSegmentAlignment);
    placed[i] = offset;
    area_size = offset + s.bytes.size();
    segments.push_back(schema::CreateSegment(b, offset, s.bytes.size()));
  }
  auto program = schema::CreateProgramDirect(b, program_version_, &methods, &segments);
  b.Finish(program, identifier_.c_str());

  FileHeader h;
  h.format_version = format_version_;
  h.header_size = kFileHeaderSize;
  h.flatbuffer_offset = kFileHeaderSize;
  h.flatbuffer_size = b.GetSize();
  bool has_area = area_size > 0;
  h.segment_area_offset = has_area ? align_up(kFileHeaderSize + b.GetSize(), kSegmentAlignment) : 0;
  h.segment_area_size = area_size;
  size_t total = has_area ? h.segment_area_offset + area_size : kFileHeaderSize + b.GetSize();

  PteBytes out(total, 0);
  write_file_header(h, out.data());
  std::memcpy(out.data() + kFileHeaderSize, b.GetBufferPointer(), b.GetSize());
  for (size_t i = 0; i < segments_.size(); ++i) {
    if (segments_[i].raw || segments_[i].bytes.empty()) continue;
    std::memcpy(out.data() + h.segment_area_offset + placed[i], segments_[i].bytes.data(),
                segments_[i].bytes.size());
  }
  return out;
}

}  // namespace testing
}  // namespace ember
