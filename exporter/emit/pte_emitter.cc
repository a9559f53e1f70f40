#include "exporter/emit/pte_emitter.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>
#include <map>

#include "exporter/emit/file_layout.h"
#include "flatbuffers/flatbuffers.h"
#include "runtime/backend/backend.h"
#include "runtime/core/content_digest.h"
#include "runtime/program/file_header.h"
#include "schema/program_generated.h"

namespace ember {
namespace exporter {
namespace {

namespace fb = ::flatbuffers;
namespace sc = ::ember::schema;


// Builds one program: its methods one after another (each method's values, instructions and
// delegates), over one segment area. Segments are stored by content: a constant, state
// initialiser or blob whose bytes equal an earlier segment's (in this method or another) refers
// to that segment instead of adding a copy, so methods exported from archives with the same
// weights share them.
class Emitter {
 public:
  explicit Emitter(const EmitOptions& options) : options_(options) {}
  // Emits `m` as the next method; its Method table is kept for finish().
  absl::Status add_method(const MethodToEmit& m);
  absl::StatusOr<std::vector<uint8_t>> finish(EmitStats* stats, const std::vector<BundledCaseData>& bundled_cases,
                                              const ProgramMetadata& metadata);

 private:
  int add(sc::ValueKind kind, fb::Offset<void> v) {
    values_.push_back(sc::CreateValue(fbb_, kind, v));
    return static_cast<int>(values_.size()) - 1;
  }
  // A weight (a constant tensor, a delegate's constant) goes to the data file when there is
  // one; a state initialiser (`weight` false) always stays in the program.
  int segment_for_constant(int constant, bool weight) {
    auto it = constant_segment_.find(constant);
    if (it != constant_segment_.end()) return it->second;
    const Constant& c = g_->constants[constant];
    int idx = weight && options_.external_weights != nullptr ? add_external_segment(c) : add_segment(c.data);
    constant_segment_[constant] = idx;
    return idx;
  }
  int add_external_segment(const Constant& c) {
    DataFileRef ref = options_.external_weights->add(c.name, c.dtype, c.sizes, c.data);
    auto it = external_segment_.find(ref.key);
    if (it != external_segment_.end()) {
      ++stats_.deduplicated_segments;
      stats_.deduplicated_bytes += c.data.size();
      return it->second;
    }
    segments_.emplace_back(0, c.data.size());
    external_.push_back(External{static_cast<int>(segments_.size()) - 1, ref, c.name, c.dtype, c.sizes});
    ++stats_.external_segments;
    stats_.external_bytes += c.data.size();
    external_segment_[ref.key] = static_cast<int>(segments_.size()) - 1;
    return static_cast<int>(segments_.size()) - 1;
  }
  int add_segment(const std::vector<uint8_t>& data) {
    const uint64_t key = content_digest(data.data(), data.size()).lo ^ data.size();
    for (int existing : by_content_[key]) {
      const auto& [off, size] = segments_[existing];
      if (size == data.size() && (size == 0 || std::memcmp(segment_bytes_.data() + off, data.data(), size) == 0)) {
        ++stats_.deduplicated_segments;
        stats_.deduplicated_bytes += size;
        return existing;
      }
    }
    size_t off = align_to_segment(segment_bytes_.size());
    segment_bytes_.resize(off + data.size(), 0);
    if (!data.empty()) std::memcpy(segment_bytes_.data() + off, data.data(), data.size());
    segments_.emplace_back(off, data.size());
    by_content_[key].push_back(static_cast<int>(segments_.size()) - 1);
    return static_cast<int>(segments_.size()) - 1;
  }
  absl::StatusOr<int> value(int id);
  absl::StatusOr<int> arg(const Arg& a);
  // The program's shared state entry of `v` (Value::shared_state), added on first use with
  // `segment` as its initial value; every method's tensor of that name must have its size.
  absl::StatusOr<int32_t> shared_state_index(const Value& v, uint32_t segment) {
    for (size_t i = 0; i < shared_state_.size(); ++i) {
      if (shared_state_[i].name != v.shared_state) continue;
      if (shared_state_[i].nbytes != v.nbytes()) {
        return absl::InvalidArgumentError("shared state '" + v.shared_state + "' has " + std::to_string(v.nbytes()) +
                                          " bytes in one method and " + std::to_string(shared_state_[i].nbytes) +
                                          " in another; give the buffers one shape or export with --separate-state");
      }
      return static_cast<int32_t>(i);
    }
    shared_state_.push_back(SharedStateEntry{v.shared_state, v.nbytes(), segment});
    return static_cast<int32_t>(shared_state_.size() - 1);
  }

  // The method being emitted.
  const Graph* g_ = nullptr;
  const MemoryPlan* plan_ = nullptr;
  std::vector<fb::Offset<sc::Value>> values_;
  std::map<int, int> value_index_;  // IR value id -> emitted index
  std::map<int, int> constant_segment_;
  // The program.
  const EmitOptions options_;
  struct External {  // a segment kept in the data file
    int segment;
    DataFileRef ref;
    std::string name;
    ScalarType dtype;
    std::vector<int64_t> sizes;
  };
  std::vector<External> external_;
  struct SharedStateEntry {
    std::string name;
    size_t nbytes;
    uint32_t segment;
  };
  std::vector<SharedStateEntry> shared_state_;  // Program.shared_state, in first-use order
  std::map<std::string, int> external_segment_;  // data file key -> segment
  fb::FlatBufferBuilder fbb_{1 << 16};
  std::vector<fb::Offset<sc::Method>> methods_;
  std::vector<std::string> method_names_;
  size_t num_instructions_ = 0, num_values_ = 0;
  std::vector<uint8_t> segment_bytes_;
  std::vector<std::pair<size_t, size_t>> segments_;
  std::map<uint64_t, std::vector<int>> by_content_;  // digest ^ size -> segments with it
  EmitStats stats_;
};

absl::StatusOr<int> Emitter::value(int id) {
  auto it = value_index_.find(id);
  if (it != value_index_.end()) return it->second;
  const Value& v = g_->values[id];
  int index = -1;
  if (v.type == ValueType::SymInt) {
    index = add(sc::ValueKind::Int, sc::CreateInt(fbb_, v.sym_upper).Union());
  } else if (v.type == ValueType::SymBool) {
    index = add(sc::ValueKind::Bool, sc::CreateBool(fbb_, true).Union());
  } else {
    sc::DataLocation loc = sc::DataLocation::Arena;
    uint64_t arena_offset = 0;
    uint32_t segment = 0;
    switch (v.role) {
      case ValueRole::Activation: loc = sc::DataLocation::Arena; break;
      case ValueRole::UserInput: loc = sc::DataLocation::CallerInput; break;
      case ValueRole::MutableState: loc = sc::DataLocation::MutableState; break;
      case ValueRole::Constant: loc = sc::DataLocation::Constant; break;
    }
    if (v.role == ValueRole::Constant || v.role == ValueRole::MutableState) {
      if (v.constant < 0) return absl::InternalError("constant tensor " + v.name + " has no data");
      segment = static_cast<uint32_t>(segment_for_constant(v.constant, v.role == ValueRole::Constant));
    }
    int32_t shared = -1;
    if (v.role == ValueRole::MutableState && !v.shared_state.empty()) {
      auto s = shared_state_index(v, segment);
      if (!s.ok()) return s.status();
      shared = *s;
    } else if (v.role != ValueRole::Constant) {
      if (plan_->offset[id] < 0) return absl::InternalError("tensor " + v.name + " was not planned");
      arena_offset = static_cast<uint64_t>(plan_->offset[id]);
    }
    auto sizes = fbb_.CreateVector<int64_t>(v.sizes);
    auto t = sc::CreateTensor(fbb_, static_cast<sc::ScalarType>(v.dtype), sizes, 0,
                              v.is_dynamic() ? sc::ShapeDynamism::DynamicBounded : sc::ShapeDynamism::Static,
                              loc, 0, arena_offset, segment, 0, v.nbytes(), shared);
    index = add(sc::ValueKind::Tensor, t.Union());
  }
  value_index_[id] = index;
  return index;
}

absl::StatusOr<int> Emitter::arg(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::None: return add(sc::ValueKind::None, sc::CreateNone(fbb_).Union());
    case Arg::Kind::Int: return add(sc::ValueKind::Int, sc::CreateInt(fbb_, a.i).Union());
    case Arg::Kind::Double: return add(sc::ValueKind::Double, sc::CreateDouble(fbb_, a.d).Union());
    case Arg::Kind::Bool: return add(sc::ValueKind::Bool, sc::CreateBool(fbb_, a.b).Union());
    case Arg::Kind::String:
      return add(sc::ValueKind::String, sc::CreateString(fbb_, fbb_.CreateString(a.s)).Union());
    case Arg::Kind::Tensor:
    case Arg::Kind::SymInt:
    case Arg::Kind::SymBool:
      return value(a.ref);
    case Arg::Kind::Ints:
      return add(sc::ValueKind::IntList, sc::CreateIntList(fbb_, fbb_.CreateVector<int64_t>(a.ints)).Union());
    case Arg::Kind::SymInts: {
      std::vector<int32_t> refs;
      for (int r : a.refs) {
        if (r < 0) { refs.push_back(-1); continue; }
        auto idx = value(r);
        if (!idx.ok()) return idx.status();
        refs.push_back(*idx);
      }
      auto items = fbb_.CreateVector<int64_t>(a.ints);
      auto vr = fbb_.CreateVector<int32_t>(refs);
      return add(sc::ValueKind::IntList, sc::CreateIntList(fbb_, items, vr).Union());
    }
    case Arg::Kind::Doubles:
      return add(sc::ValueKind::DoubleList, sc::CreateDoubleList(fbb_, fbb_.CreateVector<double>(a.doubles)).Union());
    case Arg::Kind::Bools: {
      std::vector<uint8_t> b(a.bools.begin(), a.bools.end());
      return add(sc::ValueKind::BoolList, sc::CreateBoolList(fbb_, fbb_.CreateVector<uint8_t>(b)).Union());
    }
    case Arg::Kind::Tensors:
    case Arg::Kind::OptionalTensors: {
      std::vector<int32_t> items;
      for (int r : a.refs) {
        if (r < 0) { items.push_back(-1); continue; }
        auto idx = value(r);
        if (!idx.ok()) return idx.status();
        items.push_back(*idx);
      }
      auto vec = fbb_.CreateVector<int32_t>(items);
      if (a.kind == Arg::Kind::Tensors) return add(sc::ValueKind::TensorList, sc::CreateTensorList(fbb_, vec).Union());
      return add(sc::ValueKind::OptionalTensorList, sc::CreateOptionalTensorList(fbb_, vec).Union());
    }
  }
  return absl::InternalError("unknown argument kind");
}

absl::Status Emitter::add_method(const MethodToEmit& m) {
  for (const std::string& name : method_names_) {
    if (name == m.name) return absl::InvalidArgumentError("two methods are named '" + m.name + "'; name each once");
  }
  if (m.name.empty()) return absl::InvalidArgumentError("a method needs a name");
  g_ = m.graph;
  plan_ = m.plan;
  const std::vector<DelegateRecord>& delegates = *m.delegates;
  const std::string& method_name = m.name;
  values_.clear();
  value_index_.clear();
  constant_segment_.clear();
  std::vector<uint32_t> inputs, outputs;
  for (int id : g_->inputs) {
    auto idx = value(id);
    if (!idx.ok()) return idx.status();
    inputs.push_back(static_cast<uint32_t>(*idx));
  }
  std::vector<uint32_t> mutable_inputs;
  for (int id : g_->inputs) {
    if (g_->mutable_inputs.count(id)) mutable_inputs.push_back(static_cast<uint32_t>(*value(id)));
  }
  std::map<std::pair<std::string, std::string>, uint32_t> op_index;
  std::vector<fb::Offset<sc::Operator>> operators;
  std::vector<fb::Offset<sc::Instruction>> instructions;
  std::vector<fb::Offset<sc::InstructionDebug>> debug;  // one per instruction (devtools)
  auto add_debug = [&](const Node& n) {
    debug.push_back(sc::CreateInstructionDebug(fbb_, n.name.empty() ? 0 : fbb_.CreateSharedString(n.name),
                                               n.source.empty() ? 0 : fbb_.CreateSharedString(n.source)));
  };
  for (const Node& n : g_->nodes) {
    if (n.erased) continue;
    // A program the exporter writes never lets a call write a constant or a read-only input
    // (the runtime's verification rejects such a program; failing here names the node).
    for (int r : n.output_values()) {
      const Value& v = g_->values[r];
      if (v.role == ValueRole::Constant || (v.role == ValueRole::UserInput && !g_->mutable_inputs.count(r))) {
        return absl::InternalError("node " + n.op + " (" + n.source + ") writes " +
                                   (v.role == ValueRole::Constant ? "the constant " : "the read-only input ") +
                                   v.name + "; an exporter pass produced an invalid graph");
      }
    }
    std::vector<int32_t> args;
    for (const Arg& a : n.args) {
      auto idx = arg(a);
      if (!idx.ok()) return idx.status();
      args.push_back(*idx);
    }
    const size_t num_inputs = args.size();
    for (const Arg& a : n.outputs) {
      if (a.kind == Arg::Kind::Tensors) {
        // A Tensor[] result is one output tensor per element (kernels count them).
        for (int r : a.refs) {
          auto idx = value(r);
          if (!idx.ok()) return idx.status();
          args.push_back(*idx);
        }
        continue;
      }
      auto idx = arg(a);
      if (!idx.ok()) return idx.status();
      args.push_back(*idx);
    }
    if (n.op.rfind(kDelegateOpPrefix, 0) == 0) {
      // Delegate call: inputs (flattened from the TensorList) then outputs.
      std::vector<int32_t> dargs;
      for (int r : n.args[0].refs) dargs.push_back(*value(r));
      for (int r : n.output_values()) dargs.push_back(*value(r));
      uint32_t d = static_cast<uint32_t>(std::stoul(n.op.substr(std::strlen(kDelegateOpPrefix))));
      auto call = sc::CreateDelegateCall(fbb_, d, fbb_.CreateVector<int32_t>(dargs),
                                         static_cast<uint32_t>(n.output_values().size()));
      instructions.push_back(sc::CreateInstruction(fbb_, sc::InstructionKind::DelegateCall, call.Union()));
      add_debug(n);
      continue;
    }
    auto key = std::make_pair(n.op, n.overload);
    auto it = op_index.find(key);
    if (it == op_index.end()) {
      it = op_index.emplace(key, static_cast<uint32_t>(operators.size())).first;
      operators.push_back(sc::CreateOperator(fbb_, fbb_.CreateString(n.op), fbb_.CreateString(n.overload)));
    }
    auto call = sc::CreateKernelCall(fbb_, it->second, fbb_.CreateVector<int32_t>(args),
                                     static_cast<uint32_t>(args.size() - num_inputs));
    instructions.push_back(sc::CreateInstruction(fbb_, sc::InstructionKind::KernelCall, call.Union()));
    add_debug(n);
  }
  for (const GraphOutput& o : g_->outputs) {
    if (o.is_int) {
      outputs.push_back(static_cast<uint32_t>(add(sc::ValueKind::Int, sc::CreateInt(fbb_, o.int_value).Union())));
      continue;
    }
    auto idx = value(o.value);
    if (!idx.ok()) return idx.status();
    outputs.push_back(static_cast<uint32_t>(*idx));
  }
  // Every blob before any delegate constant: a runtime reads all blobs at init, but may never
  // read the constants (a delegate with its packed weights cached maps them from elsewhere),
  // so the blobs share pages (and the kernel's read-around) with each other, not with weights.
  std::vector<int> blob_segments;
  for (const DelegateRecord& d : delegates) blob_segments.push_back(add_segment(d.blob.data));
  // Then what the runtime also reads at every init (scales it validates), still apart from weights.
  for (const DelegateRecord& d : delegates) {
    for (uint32_t slot : d.blob.read_at_init) {
      if (slot < d.blob.constants.size() && d.blob.constants[slot] >= 0 &&
          d.blob.constants[slot] < static_cast<int>(g_->constants.size())) {
        segment_for_constant(d.blob.constants[slot], /*weight=*/true);
      }
    }
  }
  std::vector<fb::Offset<sc::Delegate>> dels;
  for (size_t di = 0; di < delegates.size(); ++di) {
    const DelegateRecord& d = delegates[di];
    std::vector<fb::Offset<sc::CompileSpec>> specs;
    for (const auto& [k, v] : d.blob.compile_specs) {
      specs.push_back(sc::CreateCompileSpec(fbb_, fbb_.CreateString(k), fbb_.CreateVector<uint8_t>(v)));
    }
    if (!d.blob.constants.empty()) {
      std::vector<uint8_t> slots;
      for (int c : d.blob.constants) {
        if (c < 0 || c >= static_cast<int>(g_->constants.size())) {
          return absl::InternalError("delegate refers to constant " + std::to_string(c) + ", which does not exist");
        }
        uint32_t seg = static_cast<uint32_t>(segment_for_constant(c, /*weight=*/true));
        for (int b = 0; b < 4; ++b) slots.push_back(static_cast<uint8_t>(seg >> (8 * b)));
      }
      specs.push_back(sc::CreateCompileSpec(fbb_, fbb_.CreateString(kConstantSegmentsSpec),
                                            fbb_.CreateVector<uint8_t>(slots)));
    }
    dels.push_back(sc::CreateDelegate(fbb_, fbb_.CreateString(d.backend_id), fbb_.CreateVector(specs),
                                      blob_segments[di]));
  }
  std::vector<uint64_t> arenas = {plan_->arena_size};
  auto method = sc::CreateMethod(fbb_, fbb_.CreateString(method_name), fbb_.CreateVector(values_),
                                 fbb_.CreateVector<uint32_t>(inputs), fbb_.CreateVector<uint32_t>(outputs),
                                 fbb_.CreateVector(operators), fbb_.CreateVector(instructions),
                                 fbb_.CreateVector(dels), fbb_.CreateVector<uint64_t>(arenas),
                                 fbb_.CreateVector<uint32_t>(mutable_inputs), /*calls_declare_outputs=*/true,
                                 fbb_.CreateVector(debug));
  methods_.push_back(method);
  method_names_.push_back(method_name);
  num_instructions_ += instructions.size();
  num_values_ += values_.size();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint8_t>> Emitter::finish(EmitStats* stats, const std::vector<BundledCaseData>& bundled_cases,
                                                     const ProgramMetadata& metadata) {
  if (methods_.empty()) return absl::InvalidArgumentError("a program needs at least one method");
  std::vector<fb::Offset<sc::ExternalData>> external(segments_.size());
  for (const External& e : external_) {
    external[e.segment] = sc::CreateExternalData(fbb_, fbb_.CreateString(e.ref.key), static_cast<sc::ScalarType>(e.dtype),
                                                 fbb_.CreateVector<int64_t>(e.sizes), e.ref.digest.lo, e.ref.digest.hi,
                                                 fbb_.CreateString(e.name));
  }
  std::vector<fb::Offset<sc::Segment>> segs;
  for (size_t i = 0; i < segments_.size(); ++i) {
    segs.push_back(sc::CreateSegment(fbb_, segments_[i].first, segments_[i].second, external[i]));
  }
  // The lowest version that has every feature the program uses.
  const uint32_t version = !shared_state_.empty() ? kFormatVersionSharedState
                           : !external_.empty()   ? kFormatVersionExternalData
                                                  : kFormatVersionInline;
  std::vector<fb::Offset<sc::SharedState>> shared_state;
  for (const SharedStateEntry& s : shared_state_) {
    shared_state.push_back(sc::CreateSharedState(fbb_, fbb_.CreateString(s.name), s.nbytes, s.segment));
  }
  fb::Offset<fb::Vector<fb::Offset<fb::String>>> data_files = 0;
  if (!external_.empty() && !options_.data_file_name.empty()) {
    data_files = fbb_.CreateVector(std::vector<fb::Offset<fb::String>>{fbb_.CreateString(options_.data_file_name)});
  }
  std::vector<fb::Offset<sc::BundledCase>> cases;
  auto bundled_tensor = [&](const NpyArray& a) {
    return sc::CreateBundledTensor(fbb_, static_cast<sc::ScalarType>(a.dtype), fbb_.CreateVector<int64_t>(a.shape),
                                   fbb_.CreateVector<uint8_t>(a.data));
  };
  for (const BundledCaseData& c : bundled_cases) {
    std::vector<fb::Offset<sc::BundledTensor>> ins, outs;
    for (const NpyArray& a : c.inputs) ins.push_back(bundled_tensor(a));
    for (const NpyArray& a : c.expected_outputs) outs.push_back(bundled_tensor(a));
    const std::string& method_name = c.method.empty() ? method_names_.front() : c.method;
    if (std::find(method_names_.begin(), method_names_.end(), method_name) == method_names_.end()) {
      return absl::InvalidArgumentError("bundled case '" + c.name + "' is for method '" + method_name +
                                        "', which the program does not have");
    }
    cases.push_back(sc::CreateBundledCase(fbb_, fbb_.CreateString(c.name), fbb_.CreateString(method_name),
                                          fbb_.CreateVector(ins), fbb_.CreateVector(outs)));
  }
  std::vector<fb::Offset<sc::MetadataEntry>> entries;
  for (const auto& [key, value] : metadata) {
    entries.push_back(sc::CreateMetadataEntry(fbb_, fbb_.CreateString(key), fbb_.CreateString(value)));
  }
  auto program = sc::CreateProgram(fbb_, version, fbb_.CreateVector(methods_), fbb_.CreateVector(segs),
                                   cases.empty() ? 0 : fbb_.CreateVector(cases),
                                   entries.empty() ? 0 : fbb_.CreateVector(entries), data_files,
                                   shared_state.empty() ? 0 : fbb_.CreateVector(shared_state));
  fbb_.Finish(program, "EMB1");

  std::vector<uint8_t> file = assemble_file(kPteMagic, version, fbb_.GetBufferPointer(), fbb_.GetSize(),
                                            segment_bytes_, !segments_.empty());
  if (stats != nullptr) {
    *stats = stats_;
    stats->num_values = num_values_;
    stats->num_instructions = num_instructions_;
    stats->num_segments = segments_.size();
    stats->constant_bytes = segment_bytes_.size();
    stats->file_bytes = file.size();
  }
  return file;
}

}  // namespace

absl::StatusOr<std::vector<uint8_t>> emit_pte(const Graph& g, const MemoryPlan& plan,
                                              const std::vector<DelegateRecord>& delegates,
                                              const std::string& method_name, EmitStats* stats,
                                              const std::vector<BundledCaseData>& bundled_cases,
                                              const ProgramMetadata& metadata, const EmitOptions& options) {
  return emit_program({MethodToEmit{method_name, &g, &plan, &delegates}}, stats, bundled_cases, metadata, options);
}

absl::StatusOr<std::vector<uint8_t>> emit_program(const std::vector<MethodToEmit>& methods, EmitStats* stats,
                                                  const std::vector<BundledCaseData>& bundled_cases,
                                                  const ProgramMetadata& metadata, const EmitOptions& options) {
  absl::Status s = check_program_metadata(metadata);
  if (!s.ok()) return s;
  Emitter e(options);
  for (const MethodToEmit& m : methods) {
    if (m.graph == nullptr || m.plan == nullptr || m.delegates == nullptr) {
      return absl::InvalidArgumentError("method '" + m.name + "' has no graph, plan or delegate list");
    }
    if (auto added = e.add_method(m); !added.ok()) return added;
  }
  return e.finish(stats, bundled_cases, metadata);
}

absl::Status check_program_metadata(const ProgramMetadata& metadata) {
  std::set<std::string> seen;
  for (const auto& [key, value] : metadata) {
    if (key.empty()) return absl::InvalidArgumentError("metadata key is empty; write --metadata key=value");
    if (key.size() > 256) return absl::InvalidArgumentError("metadata key '" + key.substr(0, 32) + "...' is longer than 256 bytes");
    for (char c : key) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) {
        return absl::InvalidArgumentError("metadata key '" + key + "' may hold only letters, digits, '_', '.' and '-'");
      }
    }
    if (value.size() > (1u << 20)) return absl::InvalidArgumentError("metadata value of '" + key + "' is over 1 MiB; keep large data in a file beside the program");
    if (!seen.insert(key).second) return absl::InvalidArgumentError("metadata key '" + key + "' is given twice");
  }
  return absl::OkStatus();
}

}  // namespace exporter
}  // namespace ember
