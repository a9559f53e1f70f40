// ember inspect PROGRAM.pte: header, methods, inputs/outputs (dtype, shape, bounds),
// operators with use counts, delegates, tensor table summary, planned arena sizes, and for
// quantized programs each quantized operator's dtypes, scales and zero points and the
// constant bytes by dtype (what int8 saved against float32).
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/backend/backend.h"
#include "runtime/core/scalar_type.h"
#include "runtime/program/file_header.h"
#include "schema/program_generated.h"
#include "tools/commands/command_registry.h"
#include "tools/commands/program_file.h"

namespace ember {
namespace tools {
namespace {

namespace sc = ::ember::schema;

std::string describe_value(const sc::Method* m, uint32_t index) {
  if (m->values() == nullptr || index >= m->values()->size()) return "<invalid>";
  const sc::Value* v = m->values()->Get(index);
  switch (v->value_type()) {
    case sc::ValueKind::Tensor: {
      const sc::Tensor* t = v->value_as_Tensor();
      std::string s = std::string(scalar_type_name(static_cast<ScalarType>(t->dtype()))) + "[";
      bool dyn = t->dynamism() == sc::ShapeDynamism::DynamicBounded;
      for (uint32_t i = 0; t->sizes() && i < t->sizes()->size(); ++i) {
        s += (i ? ", " : "") + std::string(dyn ? "<=" : "") + std::to_string(t->sizes()->Get(i));
      }
      s += "]";
      if (dyn) s += " (dynamic)";
      return s;
    }
    case sc::ValueKind::Int: return "int " + std::to_string(v->value_as_Int()->value());
    case sc::ValueKind::Double: return "double " + std::to_string(v->value_as_Double()->value());
    case sc::ValueKind::Bool: return std::string("bool ") + (v->value_as_Bool()->value() ? "true" : "false");
    default: return sc::EnumNameValueKind(v->value_type());
  }
}

const sc::Value* value_at(const sc::Method* m, int index) {
  if (m->values() == nullptr || index < 0 || static_cast<uint32_t>(index) >= m->values()->size()) return nullptr;
  return m->values()->Get(static_cast<uint32_t>(index));
}

// "scale 0.0039 zp -128" from the (scale, zero point) value indices of a quantized op.
std::string scale_zp(const sc::Method* m, int scale, int zp) {
  const sc::Value* s = value_at(m, scale);
  const sc::Value* z = value_at(m, zp);
  char buf[96];
  if (s != nullptr && s->value_type() == sc::ValueKind::Double && z != nullptr && z->value_type() == sc::ValueKind::Int) {
    std::snprintf(buf, sizeof(buf), "scale %.6g zp %lld", s->value_as_Double()->value(),
                  static_cast<long long>(z->value_as_Int()->value()));
    return buf;
  }
  return "per-tensor tensors";  // the .tensor overloads
}

// One line per quantized operator, and constants by dtype; nothing for a float program.
void print_quantization(const sc::Method* m) {
  std::vector<std::string> lines;
  for (uint32_t i = 0; m->instructions() && i < m->instructions()->size(); ++i) {
    const sc::Instruction* ins = m->instructions()->Get(i);
    if (ins->kind_type() != sc::InstructionKind::KernelCall || m->operators() == nullptr) continue;
    const sc::KernelCall* call = ins->kind_as_KernelCall();
    if (call->op_index() >= m->operators()->size() || call->args() == nullptr) continue;
    const std::string op = operator_key(m->operators()->Get(call->op_index()));
    const bool ember_q = op.rfind("ember_quantized::", 0) == 0;
    if (!ember_q && op.rfind("quantized_decomposed::", 0) != 0) continue;
    const auto* args = call->args();
    auto arg = [&](uint32_t k) { return k < args->size() ? args->Get(k) : -1; };
    std::string name = "#" + std::to_string(i);
    if (m->debug() && i < m->debug()->size() && m->debug()->Get(i)->name()) name = m->debug()->Get(i)->name()->str();
    std::string line = "    " + name + ": " + op + "  ";
    if (ember_q) {
      const bool conv = op.find("conv2d") != std::string::npos;
      const uint32_t out_first = conv ? 10 : 6;
      line += describe_value(m, arg(0)) + " " + scale_zp(m, arg(1), arg(2)) + ", weight " + describe_value(m, arg(3)) +
              " per channel -> " + describe_value(m, arg(args->size() - 1)) + " " + scale_zp(m, arg(out_first), arg(out_first + 1));
      // The output range: a fused relu starts it at the zero point; relu6/hardtanh/clamp end it
      // below the dtype's maximum too.
      const sc::Value* lo = value_at(m, arg(out_first + 2));
      const sc::Value* hi = value_at(m, arg(out_first + 3));
      const sc::Value* zp = value_at(m, arg(out_first + 1));
      const sc::Value* out = value_at(m, arg(args->size() - 1));
      if (lo && hi && zp && out && lo->value_type() == sc::ValueKind::Int && hi->value_type() == sc::ValueKind::Int &&
          zp->value_type() == sc::ValueKind::Int && out->value_type() == sc::ValueKind::Tensor) {
        const int64_t l = lo->value_as_Int()->value(), h = hi->value_as_Int()->value();
        const bool u8 = static_cast<ScalarType>(out->value_as_Tensor()->dtype()) == ScalarType::UInt8;
        const int64_t dmin = u8 ? 0 : -128, dmax = u8 ? 255 : 127;
        if (l == zp->value_as_Int()->value() && h == dmax) {
          line += " (relu fused)";
        } else if (l > dmin || h < dmax) {
          line += " (activation fused: output range [" + std::to_string(l) + ", " + std::to_string(h) + "])";
        }
      }
    } else if (op.find("per_channel") != std::string::npos) {
      line += describe_value(m, arg(0)) + " -> " + describe_value(m, arg(args->size() - 1)) + ", scales " +
              describe_value(m, arg(1));
    } else {
      line += describe_value(m, arg(0)) + " -> " + describe_value(m, arg(args->size() - 1)) + " " + scale_zp(m, arg(1), arg(2));
    }
    lines.push_back(line);
  }
  if (lines.empty()) return;
  std::printf("  quantized operators: %zu\n", lines.size());
  for (const std::string& l : lines) std::printf("%s\n", l.c_str());
  std::map<std::string, uint64_t> constant_bytes;
  uint64_t int8_bytes = 0;
  for (uint32_t i = 0; m->values() && i < m->values()->size(); ++i) {
    const sc::Value* v = m->values()->Get(i);
    if (v->value_type() != sc::ValueKind::Tensor) continue;
    const sc::Tensor* t = v->value_as_Tensor();
    if (t->location() != sc::DataLocation::Constant) continue;
    const ScalarType dt = static_cast<ScalarType>(t->dtype());
    constant_bytes[scalar_type_name(dt)] += t->nbytes();
    if (dt == ScalarType::Int8 || dt == ScalarType::UInt8) int8_bytes += t->nbytes();
  }
  std::string by_dtype;
  for (const auto& [dt, b] : constant_bytes) by_dtype += (by_dtype.empty() ? "" : ", ") + dt + " " + std::to_string(b);
  std::printf("  constants by dtype (bytes): %s; the 8-bit ones as float32 would take %llu more bytes\n",
              by_dtype.c_str(), static_cast<unsigned long long>(int8_bytes * 3));
}

// The program segment of each constant slot of a delegate, from its kConstantSegmentsSpec
// compile spec (4-byte little-endian indices); empty without one.
std::vector<uint32_t> constant_slot_segments(const sc::Delegate* d) {
  std::vector<uint32_t> segments;
  for (uint32_t k = 0; d->compile_specs() && k < d->compile_specs()->size(); ++k) {
    const sc::CompileSpec* cs = d->compile_specs()->Get(k);
    if (!cs->key() || cs->key()->str() != kConstantSegmentsSpec || !cs->value()) continue;
    for (uint32_t j = 0; j + 4 <= cs->value()->size(); j += 4) {
      uint32_t seg = 0;
      for (int b = 3; b >= 0; --b) seg = (seg << 8) | cs->value()->Get(j + uint32_t(b));
      segments.push_back(seg);
    }
  }
  return segments;
}

// The segments each method reads: its constant and state tensors', its delegate blobs and the
// weights its delegates read in place.
std::set<uint32_t> segments_of(const sc::Method* m) {
  std::set<uint32_t> used;
  for (uint32_t i = 0; m->values() && i < m->values()->size(); ++i) {
    const sc::Value* v = m->values()->Get(i);
    if (v->value_type() != sc::ValueKind::Tensor) continue;
    const sc::Tensor* t = v->value_as_Tensor();
    if (t->location() == sc::DataLocation::Constant || t->location() == sc::DataLocation::MutableState) {
      used.insert(t->segment_index());
    }
  }
  for (uint32_t i = 0; m->delegates() && i < m->delegates()->size(); ++i) {
    const sc::Delegate* d = m->delegates()->Get(i);
    if (d->blob_segment() >= 0) used.insert(uint32_t(d->blob_segment()));
    for (uint32_t seg : constant_slot_segments(d)) used.insert(seg);
  }
  return used;
}

// Weights kept in a data file (`ember export --external-weights`) and state the methods share.
void print_external_data(const sc::Program* p) {
  size_t n = 0;
  uint64_t bytes = 0;
  for (uint32_t i = 0; p->segments() && i < p->segments()->size(); ++i) {
    if (p->segments()->Get(i)->external() == nullptr) continue;
    ++n;
    bytes += p->segments()->Get(i)->size();
  }
  if (n > 0) {
    const char* file = p->data_files() && p->data_files()->size() > 0 ? p->data_files()->Get(0)->c_str() : "a data file";
    std::printf("weights in %s: %zu tensors, %llu bytes (run with --data FILE.ptd)\n", file, n,
                static_cast<unsigned long long>(bytes));
  }
  for (uint32_t i = 0; p->shared_state() && i < p->shared_state()->size(); ++i) {
    const sc::SharedState* s = p->shared_state()->Get(i);
    std::printf("state shared by the methods: %s, %llu bytes\n", s->name() ? s->name()->c_str() : "",
                static_cast<unsigned long long>(s->nbytes()));
  }
}

// Programs of several methods: the segments (weights, blobs) two or more methods read, stored
// once (`ember export --method NAME=IN.pt2 ...` keeps identical bytes once).
void print_shared_segments(const sc::Program* p) {
  if (!p->methods() || p->methods()->size() < 2 || !p->segments()) return;
  std::map<uint32_t, std::vector<std::string>> readers;
  for (uint32_t mi = 0; mi < p->methods()->size(); ++mi) {
    const sc::Method* m = p->methods()->Get(mi);
    for (uint32_t seg : segments_of(m)) readers[seg].push_back(m->name() ? m->name()->str() : "");
  }
  std::map<std::string, std::pair<size_t, uint64_t>> by_methods;  // "a, b" -> (segments, bytes)
  for (const auto& [seg, names] : readers) {
    if (names.size() < 2 || seg >= p->segments()->size()) continue;
    std::string key;
    for (const std::string& n : names) key += (key.empty() ? "" : ", ") + n;
    by_methods[key].first += 1;
    by_methods[key].second += p->segments()->Get(seg)->size();
  }
  std::printf("\nshared by several methods:%s\n", by_methods.empty() ? " nothing" : "");
  for (const auto& [names, totals] : by_methods) {
    std::printf("  %zu segments (%llu bytes) read by %s\n", totals.first,
                static_cast<unsigned long long>(totals.second), names.c_str());
  }
}

int inspect_command(int argc, char** argv) {
  if (argc != 2 || std::strcmp(argv[1], "--help") == 0) {
    std::printf("usage: ember inspect PROGRAM.pte\n");
    return argc == 2 ? 0 : 2;
  }
  ProgramFile file;
  const std::string error = read_program_file(argv[1], &file);
  if (!error.empty()) {
    std::fprintf(stderr, "ember inspect: %s\n", error.c_str());
    return 1;
  }
  const FileHeader& h = file.header;
  const std::vector<uint8_t>& bytes = file.bytes;
  const sc::Program* p = file.program;
  std::printf("%s: format version %u, %zu bytes (program %llu bytes, segments %llu bytes in %u)\n", argv[1],
              h.format_version, bytes.size(), static_cast<unsigned long long>(h.flatbuffer_size),
              static_cast<unsigned long long>(h.segment_area_size), p->segments() ? p->segments()->size() : 0);
  print_external_data(p);
  for (uint32_t mi = 0; p->methods() && mi < p->methods()->size(); ++mi) {
    const sc::Method* m = p->methods()->Get(mi);
    std::printf("\nmethod '%s'\n", m->name() ? m->name()->c_str() : "");
    for (uint32_t i = 0; m->inputs() && i < m->inputs()->size(); ++i) {
      bool writes = false;  // the method mutates this input in the caller's memory
      if (m->mutable_inputs() != nullptr) {
        for (uint32_t v : *m->mutable_inputs()) writes = writes || v == m->inputs()->Get(i);
      }
      std::printf("  input %u: %s%s\n", i, describe_value(m, m->inputs()->Get(i)).c_str(),
                  writes ? " (mutated in place by the method)" : "");
    }
    for (uint32_t i = 0; m->outputs() && i < m->outputs()->size(); ++i) {
      std::printf("  output %u: %s\n", i, describe_value(m, m->outputs()->Get(i)).c_str());
    }
    std::map<uint32_t, int> op_uses;
    size_t delegate_calls = 0;
    for (uint32_t i = 0; m->instructions() && i < m->instructions()->size(); ++i) {
      const sc::Instruction* ins = m->instructions()->Get(i);
      if (ins->kind_type() == sc::InstructionKind::KernelCall) op_uses[ins->kind_as_KernelCall()->op_index()]++;
      if (ins->kind_type() == sc::InstructionKind::DelegateCall) delegate_calls++;
    }
    std::printf("  instructions: %u (%zu delegate calls)%s\n", m->instructions() ? m->instructions()->size() : 0,
                delegate_calls, m->debug() ? ", with debug names (ember profile)" : "");
    std::printf("  operators: %u\n", m->operators() ? m->operators()->size() : 0);
    for (uint32_t i = 0; m->operators() && i < m->operators()->size(); ++i) {
      const sc::Operator* op = m->operators()->Get(i);
      std::printf("    %5d x %s\n", op_uses[i], operator_key(op).c_str());
    }
    print_quantization(m);
    std::printf("  delegates: %u\n", m->delegates() ? m->delegates()->size() : 0);
    for (uint32_t i = 0; m->delegates() && i < m->delegates()->size(); ++i) {
      const sc::Delegate* d = m->delegates()->Get(i);
      uint64_t blob_bytes = d->inline_blob() ? d->inline_blob()->size() : 0;
      if (d->blob_segment() >= 0 && p->segments() && uint32_t(d->blob_segment()) < p->segments()->size()) {
        blob_bytes = p->segments()->Get(uint32_t(d->blob_segment()))->size();
      }
      // Weights the delegate reads in place (constant slots) and their bytes.
      size_t slots = 0;
      uint64_t weight_bytes = 0;
      std::string summary;
      std::vector<std::string> other_specs;
      for (uint32_t k = 0; d->compile_specs() && k < d->compile_specs()->size(); ++k) {
        const sc::CompileSpec* cs = d->compile_specs()->Get(k);
        const std::string key = cs->key() ? cs->key()->str() : "";
        const size_t n = cs->value() ? cs->value()->size() : 0;
        if (key == kConstantSegmentsSpec) {
          const std::vector<uint32_t> segments = constant_slot_segments(d);
          slots = segments.size();
          for (uint32_t seg : segments) {
            if (p->segments() && seg < p->segments()->size()) weight_bytes += p->segments()->Get(seg)->size();
          }
        } else if (key == "ember.summary") {
          summary.assign(cs->value()->begin(), cs->value()->end());
        } else {
          other_specs.push_back(key + " (" + std::to_string(n) + " bytes)");
        }
      }
      std::printf("    %u: %s, blob %llu bytes (segment %d), %zu weights in place (%llu bytes)\n", i,
                  d->backend_id() ? d->backend_id()->c_str() : "?", static_cast<unsigned long long>(blob_bytes),
                  d->blob_segment(), slots, static_cast<unsigned long long>(weight_bytes));
      if (!summary.empty()) std::printf("       ops: %s\n", summary.c_str());
      for (const std::string& spec : other_specs) std::printf("       compile spec %s\n", spec.c_str());
    }
    std::map<std::string, std::pair<size_t, uint64_t>> by_loc;  // location -> (count, bytes)
    size_t dynamic = 0, kinds[16] = {0};
    for (uint32_t i = 0; m->values() && i < m->values()->size(); ++i) {
      const sc::Value* v = m->values()->Get(i);
      kinds[static_cast<int>(v->value_type()) & 15]++;
      if (v->value_type() != sc::ValueKind::Tensor) continue;
      const sc::Tensor* t = v->value_as_Tensor();
      auto& e = by_loc[sc::EnumNameDataLocation(t->location())];
      e.first++;
      e.second += t->nbytes();
      if (t->dynamism() == sc::ShapeDynamism::DynamicBounded) dynamic++;
    }
    std::printf("  values: %u (", m->values() ? m->values()->size() : 0);
    bool first = true;
    for (int k = 1; k < 16; ++k) {
      if (!kinds[k]) continue;
      std::printf("%s%zu %s", first ? "" : ", ", kinds[k], sc::EnumNameValueKind(static_cast<sc::ValueKind>(k)));
      first = false;
    }
    std::printf(")\n  tensors: %zu dynamic\n", dynamic);
    for (const auto& [loc, e] : by_loc) std::printf("    %-12s %6zu tensors %12llu bytes\n", loc.c_str(), e.first, static_cast<unsigned long long>(e.second));
    for (uint32_t i = 0; m->arena_sizes() && i < m->arena_sizes()->size(); ++i) {
      std::printf("  arena %u: %llu bytes planned\n", i, static_cast<unsigned long long>(m->arena_sizes()->Get(i)));
    }
  }
  print_shared_segments(p);
  if (const auto* entries = p->metadata()) {
    std::printf("\nmetadata: %u entries\n", entries->size());
    for (uint32_t i = 0; i < entries->size(); ++i) {
      const sc::MetadataEntry* e = entries->Get(i);
      std::printf("  %s = %s\n", e->key() ? e->key()->c_str() : "", e->value() ? e->value()->c_str() : "");
    }
  }
  if (const auto* cases = p->bundled_cases()) {
    std::printf("\nbundled test cases: %u (check with ember verify)\n", cases->size());
    for (uint32_t i = 0; i < cases->size(); ++i) {
      const sc::BundledCase* c = cases->Get(i);
      std::printf("  %s: method '%s', %u inputs, %u expected outputs\n", c->name() ? c->name()->c_str() : "",
                  c->method() ? c->method()->c_str() : "", c->inputs() ? c->inputs()->size() : 0,
                  c->expected_outputs() ? c->expected_outputs()->size() : 0);
    }
  }
  return 0;
}

}  // namespace
}  // namespace tools
}  // namespace ember

EMBER_REGISTER_COMMAND(inspect, "describe a .pte program (methods, I/O, ops, memory)", ember::tools::inspect_command);
