// ProgramBuilder: assembles a .pte program in memory for tests (never linked into the
// runtime). It writes exactly what it is told — including out-of-range indices — so tests
// can build both valid programs and precisely broken ones.
//
//   ProgramBuilder pb;
//   MethodBuilder& m = pb.method("forward");
//   uint32_t x = m.input_tensor(ScalarType::Float32, {2, 3});
//   uint32_t y = m.planned_tensor(ScalarType::Float32, {2, 3});
//   m.kernel("test::copy", "default", {x, y});
//   m.set_inputs({x}).set_outputs({y});
//   PteBytes pte = pb.build();
//
// Layout of the result: 64-byte file header, the FlatBuffer at offset 64, then the segment
// area (64-byte aligned) with each segment at a 64-byte aligned offset inside it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "runtime/core/scalar_type.h"

namespace ember {
namespace testing {

// A std::allocator replacement whose storage is aligned to `Alignment` bytes, so a
// std::vector<uint8_t, AlignedAllocator<uint8_t>> can be handed to BufferDataLoader and its
// segments used in place.
template <typename T, size_t Alignment = 64>
struct AlignedAllocator {
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = AlignedAllocator<U, Alignment>;
  };
  AlignedAllocator() = default;
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U, Alignment>&) {}  // NOLINT: implicit
  T* allocate(size_t n) {
    void* p = nullptr;
    if (posix_memalign(&p, Alignment, n * sizeof(T) == 0 ? 1 : n * sizeof(T)) != 0) std::abort();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <typename U>
  bool operator==(const AlignedAllocator<U, Alignment>&) const { return true; }
  template <typename U>
  bool operator!=(const AlignedAllocator<U, Alignment>&) const { return false; }
};

// The bytes of a .pte program: a std::vector<uint8_t> with 64-byte aligned storage.
using PteBytes = std::vector<uint8_t, AlignedAllocator<uint8_t>>;

// Mirrors of the schema enums (numeric values match schema/program.fbs).
enum class Location : uint8_t { Arena = 0, Constant = 1, MutableState = 2, CallerInput = 3, Unplanned = 4 };

// Every field of a schema Tensor. nbytes < 0 means "numel(sizes) * element size".
struct TensorDesc {
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> dim_order;
  bool dynamic = false;
  Location location = Location::Arena;
  uint32_t arena_id = 0;
  uint64_t arena_offset = 0;
  uint32_t segment_index = 0;
  uint64_t segment_offset = 0;
  int64_t nbytes = -1;
};

// Bytes of a tensor of `dtype` with `sizes`.
size_t tensor_nbytes(ScalarType dtype, const std::vector<int64_t>& sizes);

class ProgramBuilder;

class MethodBuilder {
 public:
  // --- values (each returns its value index) ---
  uint32_t add_tensor(const TensorDesc& desc);  // written verbatim
  // Planned activation in `arena` at the next free 64-byte aligned offset.
  uint32_t planned_tensor(ScalarType dtype, std::vector<int64_t> sizes, bool dynamic = false,
                          uint32_t arena = 0);
  // Caller input that owns planned space (set_input copies into it).
  uint32_t input_tensor(ScalarType dtype, std::vector<int64_t> sizes, bool dynamic = false,
                        uint32_t arena = 0);
  // Read-only tensor whose bytes are a new data segment holding `data`.
  uint32_t constant_tensor(ScalarType dtype, std::vector<int64_t> sizes, const void* data,
                           size_t data_bytes);
  template <typename T>
  uint32_t constant_tensor(ScalarType dtype, std::vector<int64_t> sizes, const std::vector<T>& data) {
    return constant_tensor(dtype, std::move(sizes), data.data(), data.size() * sizeof(T));
  }
  // Mutable state in `arena`, initialised from a new segment holding `initial`.
  uint32_t state_tensor(ScalarType dtype, std::vector<int64_t> sizes, const void* initial,
                        size_t initial_bytes, uint32_t arena = 0);
  template <typename T>
  uint32_t state_tensor(ScalarType dtype, std::vector<int64_t> sizes, const std::vector<T>& initial,
                        uint32_t arena = 0) {
    return state_tensor(dtype, std::move(sizes), initial.data(), initial.size() * sizeof(T), arena);
  }
  uint32_t unplanned_tensor(ScalarType dtype, std::vector<int64_t> sizes);

  uint32_t none();
  uint32_t int_value(int64_t v);
  uint32_t double_value(double v);
  uint32_t bool_value(bool v);
  uint32_t string_value(const std::string& v);
  // `refs` empty, or one entry per item (-1: use the item; otherwise an Int value index).
  uint32_t int_list(std::vector<int64_t> items, std::vector<int32_t> refs = {});
  uint32_t double_list(std::vector<double> items);
  uint32_t bool_list(std::vector<bool> items);
  uint32_t tensor_list(std::vector<int32_t> items);
  uint32_t optional_tensor_list(std::vector<int32_t> items);
  // A value whose union type is `kind` (schema::ValueKind number) but whose table is absent.
  uint32_t value_without_payload(uint8_t kind);

  // --- operators and instructions ---
  // Index of operator (name, overload), added on first use.
  uint32_t op(const std::string& name, const std::string& overload = "default");
  // Each instruction adder returns the instruction's index.
  uint32_t kernel(uint32_t op_index, std::vector<int32_t> args);
  uint32_t kernel(const std::string& name, const std::string& overload, std::vector<int32_t> args) {
    return kernel(op(name, overload), std::move(args));
  }
  // Adds a delegate entry; blob_segment < 0 uses `inline_blob`.
  uint32_t delegate(const std::string& backend_id, int32_t blob_segment,
                    std::vector<uint8_t> inline_blob = {},
                    std::vector<std::pair<std::string, std::vector<uint8_t>>> compile_specs = {});
  uint32_t delegate_call(uint32_t delegate_index, std::vector<int32_t> args);
  uint32_t move(uint32_t from, uint32_t to);
  uint32_t jump_false(uint32_t condition, uint32_t destination);
  uint32_t free_value(uint32_t value);
  // An instruction whose union type is `kind` (schema::InstructionKind number), no table.
  uint32_t instruction_without_payload(uint8_t kind);
  // Index the next instruction will get (jump targets).
  uint32_t next_instruction() const { return static_cast<uint32_t>(instructions_.size()); }
  // Changes the destination of an already added jump_false.
  void patch_jump(uint32_t instruction, uint32_t destination);

  // Declares how many trailing args kernel/delegate call `instruction` writes, and marks
  // the method as declaring its calls' outputs (the exporter's programs do). Without it the
  // runtime treats the last argument of each call as its output.
  MethodBuilder& set_num_outputs(uint32_t instruction, uint32_t num_outputs) {
    instructions_[instruction].b = num_outputs;
    declares_outputs_ = true;
    return *this;
  }
  // Inputs (value indices) the method may write.
  MethodBuilder& set_mutable_inputs(std::vector<uint32_t> inputs) { mutable_inputs_ = std::move(inputs); return *this; }
  MethodBuilder& set_inputs(std::vector<uint32_t> inputs) { inputs_ = std::move(inputs); return *this; }
  MethodBuilder& set_outputs(std::vector<uint32_t> outputs) { outputs_ = std::move(outputs); return *this; }
  // Writes the optional per-instruction debug table: (name, source) per entry. Any length
  // (tests of the validator give a wrong one); empty names/sources are left out.
  MethodBuilder& set_debug(std::vector<std::pair<std::string, std::string>> entries) {
    debug_ = std::move(entries);
    has_debug_ = true;
    return *this;
  }
  // Overrides the arena sizes computed from the planned tensors.
  MethodBuilder& set_arena_sizes(std::vector<uint64_t> sizes) { arena_override_ = std::move(sizes); has_arena_override_ = true; return *this; }
  std::vector<uint64_t> arena_sizes() const;
  const std::string& name() const { return name_; }
  size_t num_values() const { return values_.size(); }

 private:
  friend class ProgramBuilder;
  enum class Kind { None, Int, Double, Bool, String, Tensor, IntList, DoubleList, BoolList, TensorList, OptionalTensorList };
  struct Value {
    Kind kind = Kind::None;
    int64_t i = 0;
    double d = 0;
    std::string s;
    TensorDesc tensor;
    std::vector<int64_t> ints;
    std::vector<int32_t> refs;
    std::vector<double> doubles;
    std::vector<uint8_t> bools;
    int raw_kind = -1;  // >= 0: write only this union type, no table
  };
  enum class InsKind { Kernel, Delegate, Move, JumpFalse, Free };
  struct Ins {
    InsKind kind;
    uint32_t a = 0, b = 0;
    std::vector<int32_t> args;
    int raw_kind = -1;
  };
  struct Delegate {
    std::string backend_id;
    int32_t blob_segment = -1;
    std::vector<uint8_t> inline_blob;
    std::vector<std::pair<std::string, std::vector<uint8_t>>> specs;
  };

  MethodBuilder(ProgramBuilder* program, std::string name) : program_(program), name_(std::move(name)) {}
  uint32_t push(Value v);
  uint32_t push_ins(Ins ins);
  uint64_t reserve(uint32_t arena, uint64_t nbytes);

  ProgramBuilder* program_;
  std::string name_;
  std::vector<Value> values_;
  std::vector<std::pair<std::string, std::string>> operators_;
  std::vector<Ins> instructions_;
  std::vector<std::pair<std::string, std::string>> debug_;
  bool has_debug_ = false;
  std::vector<Delegate> delegates_;
  std::vector<uint32_t> inputs_;
  std::vector<uint32_t> outputs_;
  std::vector<uint32_t> mutable_inputs_;
  bool declares_outputs_ = false;
  std::vector<uint64_t> arena_used_;
  std::vector<uint64_t> arena_override_;
  bool has_arena_override_ = false;
};

class ProgramBuilder {
 public:
  ProgramBuilder();
  ~ProgramBuilder();
  ProgramBuilder(const ProgramBuilder&) = delete;
  ProgramBuilder& operator=(const ProgramBuilder&) = delete;

  // Adds a method (names are written as given, duplicates included).
  MethodBuilder& method(const std::string& name);
  // Adds a data segment holding `data`; returns its index.
  uint32_t add_segment(const void* data, size_t size);
  template <typename T>
  uint32_t add_segment(const std::vector<T>& data) { return add_segment(data.data(), data.size() * sizeof(T)); }
  // Adds a segment table entry with an arbitrary offset/size (relative to the segment area)
  // and no bytes behind it (for corruption tests).
  uint32_t add_raw_segment_entry(uint64_t offset, uint64_t size);

  ProgramBuilder& set_program_version(uint32_t v) { program_version_ = v; return *this; }
  ProgramBuilder& set_format_version(uint32_t v) { format_version_ = v; return *this; }
  ProgramBuilder& set_file_identifier(const char id[5]) { identifier_ = id; return *this; }

  PteBytes build() const;

 private:
  struct Segment {
    bool raw = false;
    uint64_t offset = 0, size = 0;
    std::vector<uint8_t> bytes;
  };
  std::vector<std::unique_ptr<MethodBuilder>> methods_;
  std::vector<Segment> segments_;
  uint32_t program_version_ = 1;
  uint32_t format_version_;
  std::string identifier_ = "EMB1";
};

}  // namespace testing
}  // namespace ember
