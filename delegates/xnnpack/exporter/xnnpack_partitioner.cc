#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"

#include <algorithm>
#include <map>
#include <set>

#include "delegates/xnnpack/exporter/graph_access.h"
#include "delegates/xnnpack/exporter/xnnpack_lowering.h"
#include "delegates/xnnpack/exporter/xnnpack_quantized.h"
#include "delegates/xnnpack/exporter/xnnpack_weight_only.h"
#include "delegates/xnnpack/xnnpack_blob_builder.h"

// Every op XNNPACK takes is one entry of xnnpack_op_table() (xnnpack_lowering.h, family files
// in ops/): its check, its lowering and its traits. This file holds what is common to all of
// them: float32 / static-shape operands, layouts per partition, clamp folding, the loops.
namespace ember {
namespace xnnpack {
namespace {

// Whether XNNPACK can follow a bounded shape change of n at run time (see ShapeSupport).
bool reshapable(const Graph& g, const Node& n, ShapeSupport shapes) {
  if (shapes == ShapeSupport::kBounded) return true;
  if (shapes == ShapeSupport::kStaticOnly) return false;
  const Value* x = tensor_arg(g, n, 0);
  return x && !x->dynamic_dims.empty() && !x->dynamic_dims.back();
}

// What every float op needs: float32 tensors, of static shape unless XNNPACK reshapes the op
// at run time; one output; no symbolic or tensor-list arguments (but cat's list). "" if met.
std::string float_operand_reason(const Graph& g, const Node& n, const XnnOpTraits& traits) {
  const bool bounded = reshapable(g, n, traits.shapes);
  auto usable = [&](const Value& v) { return bounded ? f32_tensor(v) : f32_static(v); };
  for (int v : n.output_values()) {
    if (!usable(g.values[v])) return "output is not a float32 tensor of static shape (or of a reshapable op)";
  }
  if (n.output_values().size() != 1 && !traits.several_outputs) return "not a single-output op";
  for (const Arg& a : n.args) {
    if (a.kind == Arg::Kind::Tensor && !usable(g.values[a.ref])) {
      return "input is not a float32 tensor of static shape (or of a reshapable op)";
    }
    if (a.kind == Arg::Kind::Tensors && traits.tensor_list_input) {
      for (int v : a.refs) {
        if (v < 0 || !f32_static(g.values[v])) return "input is not a static-shape float32 tensor";
      }
      continue;
    }
    if (a.kind == Arg::Kind::Tensors || a.kind == Arg::Kind::SymInt) return "tensor-list or symbolic argument";
  }
  return "";
}

// The layout node `index` needs inside a partition (LayoutNeed): only a node that reads or
// writes a 4D tensor has one; its entry's rule decides (no rule: it indexes dims).
LayoutNeed layout_need(const Graph& g, int index) {
  const Node& n = g.nodes[index];
  bool any4d = false;
  for (const Arg& a : n.args) {
    for (int v : a.value_refs()) any4d |= g.values[v].type == ValueType::Tensor && g.values[v].sizes.size() == 4;
  }
  for (int v : n.output_values()) any4d |= g.values[v].sizes.size() == 4;
  if (!any4d) return kAnyLayout;
  const LayoutRule rule = op_traits(n).layout;
  return rule ? rule(g, n) : kLogicalLayout;
}

// True when node n reads or writes an activation that no layout transpose can carry: one
// neither float32 nor int8 (preprocess transposes those, int8 keeping its quantization).
// Such tensors keep the layout they are made in.
bool touches_fixed_layout(const Graph& g, const Node& n) {
  auto fixed = [&](int v) {
    const Value& val = g.values[v];
    return val.type == ValueType::Tensor && !is_const(&val) && val.dtype != ScalarType::Float32 &&
           val.dtype != ScalarType::Int8;
  };
  for (const Arg& a : n.args) {
    for (int v : a.value_refs()) {
      if (fixed(v)) return true;
    }
  }
  for (int v : n.output_values()) {
    if (fixed(v)) return true;
  }
  return false;
}

// Points value ids at other blob tensors (an input read through a layout transpose) for the
// lowering of one node, and restores them when it goes out of scope.
class InputSwap {
 public:
  explicit InputSwap(std::map<int, uint32_t>* id) : id_(id) {}
  ~InputSwap() {
    for (const auto& [v, original] : saved_) (*id_)[v] = original;
  }
  InputSwap(const InputSwap&) = delete;
  InputSwap& operator=(const InputSwap&) = delete;
  bool swapped(int v) const { return saved_.count(v) > 0; }
  void set(int v, uint32_t tensor) {
    saved_.emplace(v, (*id_)[v]);
    (*id_)[v] = tensor;
  }

 private:
  std::map<int, uint32_t>* id_;
  std::map<int, uint32_t> saved_;
};

}  // namespace

std::string XnnpackPartitioner::unsupported_reason(const Graph& g, int index) {
  const Node& n = g.nodes[index];
  if (n.erased) return "erased";
  const XnnOpEntry* entry = xnnpack_op_table().find(n.kernel_name());
  const XnnLowering checking(g);
  if (entry != nullptr && entry->traits.quantized) return entry->check(checking, n);  // checks its own dtypes
  const std::string reason = float_operand_reason(g, n, entry ? entry->traits : XnnOpTraits());
  if (!reason.empty()) return reason;
  if (entry == nullptr) return "op not supported by XNNPACK";
  return entry->check(checking, n);
}

std::vector<std::vector<int>> XnnpackPartitioner::claim(const Graph& g) {
  const int num = int(g.nodes.size());
  std::vector<int> group(num, -1);
  std::vector<std::vector<char>> reach;  // reach[grp][node]: node depends on group grp
  std::vector<std::vector<int>> groups;
  std::vector<bool> supported(num);
  std::vector<int> need(num, kAnyLayout);
  std::vector<int> kind;      // per group: the LayoutNeed bits of its members
  std::vector<char> fixed;    // per group: has an activation of a fixed layout
  std::vector<char> fixed_op(num, 0);
  for (int i = 0; i < num; ++i) {
    supported[i] = unsupported_reason(g, i).empty();
    if (supported[i]) need[i] = layout_need(g, i);
    fixed_op[i] = supported[i] && touches_fixed_layout(g, g.nodes[i]);
  }
  for (int i = 0; i < num; ++i) {
    const Node& n = g.nodes[i];
    if (n.erased) continue;
    std::vector<int> producers;
    for (const Arg& a : n.args) {
      for (int v : a.value_refs()) {
        if (v >= 0 && g.values[v].producer >= 0) producers.push_back(g.values[v].producer);
      }
    }
    for (size_t grp = 0; grp < groups.size(); ++grp) {
      for (int p : producers) {
        if (group[p] == int(grp) || reach[grp][p]) reach[grp][i] = 1;
      }
    }
    if (!supported[i]) continue;
    int chosen = -1;
    for (int p : producers) {
      const int grp = group[p];
      // Groups mix layouts: preprocess transposes where they meet, int8 tensors included (the
      // transpose keeps their quantization), so an int8 ViT's patch-embedding convolution (NHWC)
      // and its transformer (PyTorch order) are one delegate call, as in fp32. Other dtypes
      // keep one layout.
      if (grp < 0 || ((fixed[grp] || fixed_op[i]) && (kind[grp] | need[i]) == (kNhwcLayout | kLogicalLayout))) {
        continue;
      }
      bool convex = true;  // no path leaves grp and comes back through another producer
      for (int q : producers) {
        if (group[q] != grp && reach[grp][q]) convex = false;
      }
      if (convex) {
        chosen = grp;
        break;
      }
    }
    if (chosen < 0) {
      chosen = int(groups.size());
      groups.emplace_back();
      reach.emplace_back(num, 0);
      kind.push_back(kAnyLayout);
      fixed.push_back(0);
    }
    kind[chosen] |= need[i];
    fixed[chosen] |= fixed_op[i];
    group[i] = chosen;
    groups[chosen].push_back(i);
    reach[chosen][i] = 0;
  }
  std::vector<std::vector<int>> out;
  for (auto& grp : groups) {
    bool useful = false;  // a group of reshapes alone is not worth a delegate call
    for (int i : grp) useful |= !op_traits(g.nodes[i]).reshape;
    if (useful) out.push_back(grp);
  }
  return out;
}

absl::StatusOr<exporter::DelegateBlob> XnnpackPartitioner::preprocess(const Graph& g, const exporter::Partition& p) {
  XnnBlobBuilder b;
  exporter::ConstantSlots slots(g);
  XnnLowering ctx(g);
  ctx.winograd = winograd_;
  ctx.b = &b;
  ctx.slots = &slots;
  std::map<int, uint32_t>& id = ctx.id;
  // Layouts: each 4D activation is stored NHWC (made by or for spatial ops: XNNPACK's
  // conventions) or in PyTorch's order (for ops that index dims: matmul, permute, softmax,
  // ...). A node runs in the layout it needs, or, when any does (elementwise ops), in the
  // layout of its 4D inputs; an input stored the other way is transposed once (cached) in the
  // blob. ctx.nhwc is the layout of the node being lowered.
  std::set<int>& stored_nhwc = ctx.stored_nhwc;
  auto layout_of = [&](const Value& v) {
    return stored_nhwc.count(v.id) && v.sizes.size() == 4 ? fb::Layout::NchwToNhwc : fb::Layout::AsIs;
  };
  std::map<int, int> need_of;  // node -> its LayoutNeed
  for (int i : p.nodes) need_of[i] = layout_need(g, i);
  {
    std::set<int> needs_nhwc, needs_logical;  // partition inputs by what their consumers need
    std::set<int> pin(p.inputs.begin(), p.inputs.end());
    bool any_nhwc = false;
    for (int i : p.nodes) {
      const int need = need_of[i];
      any_nhwc |= need == kNhwcLayout;
      for (const Arg& a : g.nodes[i].args) {
        for (int v : a.value_refs()) {
          if (!pin.count(v)) continue;
          if (need == kNhwcLayout) needs_nhwc.insert(v);
          if (need == kLogicalLayout) needs_logical.insert(v);
        }
      }
    }
    for (int v : p.inputs) {
      // NHWC when a consumer needs it, or when the partition works in NHWC and none objects.
      if (g.values[v].sizes.size() == 4 && (needs_nhwc.count(v) || (any_nhwc && !needs_logical.count(v)))) {
        stored_nhwc.insert(v);
      }
    }
  }
  for (int v : p.inputs) {
    const Value& val = g.values[v];
    if (is_const(&val)) continue;  // weights come through constant slots, not as arguments
    id[v] = b.input(ctx.dims(val, stored_nhwc.count(v) > 0), layout_of(val));
    if (val.dtype == ScalarType::Int8) {  // an int8 activation of a quantized program
      float scale = 0;
      int32_t zero_point = 0;
      if (!int8_value_params(g, v, &scale, &zero_point)) {
        return absl::InvalidArgumentError("xnnpack preprocess: no quantization parameters for int8 input " + val.name);
      }
      b.set_qint8(id[v], scale, zero_point);
    }
  }
  // Clamp fusion: clamp node -> producer it folds into.
  std::set<int> in_partition(p.nodes.begin(), p.nodes.end());
  std::set<int> outputs(p.outputs.begin(), p.outputs.end());
  const std::vector<int> uses = g.use_counts();
  std::map<int, int> fused_into;  // producer node -> clamp node
  std::set<int> folded;           // clamp nodes folded away
  for (int i : p.nodes) {
    const Node& n = g.nodes[i];
    if (op_traits(n).clamp == nullptr) continue;
    const int x = n.args[0].ref;
    const int prod = g.values[x].producer;
    if (prod >= 0 && in_partition.count(prod) && op_traits(g.nodes[prod]).takes_fused_clamp && uses[x] == 1 &&
        !outputs.count(x) && !fused_into.count(prod)) {
      fused_into[prod] = i;
      folded.insert(i);
    }
  }
  // dequantize -> op -> [clamp] -> quantize chains run as the op's int8 kernel: the Q/DQ
  // nodes alias their inputs, the op reads and writes the int8 tensors.
  const QuantizedFusion quantized = plan_quantized_fusion(g, p, fused_into, folded);
  for (int i : p.nodes) {
    const Node& n = g.nodes[i];
    if (folded.count(i)) continue;
    // This node's layout; 4D inputs stored the other way are read through a transpose.
    const int need = need_of[i];
    std::vector<int> activations;  // mapped 4D activation inputs
    for (const Arg& a : n.args) {
      for (int v : a.value_refs()) {
        if (id.count(v) && !is_const(&g.values[v]) && g.values[v].sizes.size() == 4) activations.push_back(v);
      }
    }
    bool nhwc = need == kNhwcLayout;
    if (need == kAnyLayout) {
      for (int v : activations) nhwc |= stored_nhwc.count(v) > 0;
    }
    ctx.nhwc = nhwc;
    InputSwap swap(&id);
    for (int v : activations) {
      if ((stored_nhwc.count(v) > 0) == nhwc || swap.swapped(v)) continue;
      auto it = ctx.converted.find({v, nhwc});
      if (it == ctx.converted.end()) {
        if (g.values[v].dtype != ScalarType::Float32 && g.values[v].dtype != ScalarType::Int8) {
          return absl::InternalError("xnnpack preprocess: a " + std::string(scalar_type_name(g.values[v].dtype)) +
                                     " tensor needs a layout change: " + g.values[v].name);
        }
        XnnNodeParams perm;
        perm.axes = nhwc ? std::vector<uint64_t>{0, 2, 3, 1} : std::vector<uint64_t>{0, 3, 1, 2};
        it = ctx.converted.emplace(std::make_pair(v, nhwc), b.node(fb::OpType::StaticTranspose, {id[v]}, perm)).first;
      }
      swap.set(v, it->second);
    }
    for (int v : n.output_values()) {
      if (nhwc && g.values[v].sizes.size() == 4) stored_nhwc.insert(v);
    }
    if (fused_into.count(i) && nhwc) stored_nhwc.insert(g.nodes[fused_into[i]].output_values()[0]);
    // Nodes folded into others emit nothing: their outputs alias their inputs.
    std::string folding_error;
    if (fold_dynamic_activation(ctx, n, &folding_error)) {  // PT2E's dynamic quantization (weight-only)
      if (!folding_error.empty()) return absl::InternalError(folding_error);
      continue;
    }
    if (quantized.aliases.count(i)) {
      folding_error = alias_folded_qdq(ctx, n);
      if (!folding_error.empty()) return absl::InternalError(folding_error);
      continue;
    }
    b.set_node_name(n.name);  // every blob node lowered from n (composites: several) carries it
    ctx.params = XnnNodeParams();
    if (fused_into.count(i)) clamp_output_range(g.nodes[fused_into[i]], &ctx.params);
    ctx.result = kInvalidId;
    const std::string failure = xnnpack_op_table().lower(ctx, n);
    if (!failure.empty()) return absl::InvalidArgumentError(failure);
    if (!b.ok()) {
      std::string detail;
      for (const Arg& a : n.args) {
        for (int v : a.value_refs()) {
          const int prod = g.values[v].producer;
          detail += " [" + g.values[v].name + ": producer " + std::to_string(prod) +
                    (in_partition.count(prod) ? " (in partition)" : "") + (id.count(v) ? ", mapped" : ", unmapped") +
                    (folded.count(prod) ? ", folded" : "") + "]";
        }
      }
      return absl::InvalidArgumentError("xnnpack preprocess: node " + std::to_string(i) + " (" + n.kernel_name() +
                                        "): " + b.error() + "; inputs:" + detail);
    }
    id[n.output_values()[0]] = ctx.result;
    if (fused_into.count(i)) id[g.nodes[fused_into[i]].output_values()[0]] = ctx.result;
  }
  for (int v : p.outputs) {
    if (!id.count(v)) return absl::InternalError("xnnpack preprocess: partition output not produced");
    b.mark_output(id[v], layout_of(g.values[v]));
  }
  if (!b.ok()) return absl::InvalidArgumentError("xnnpack preprocess: " + b.error());
  exporter::DelegateBlob blob;
  blob.data = b.build();
  slots.finish(&blob);
  std::string summary = exporter::summarize_partition(g, p);
  if (!folded.empty()) summary += " (" + std::to_string(folded.size()) + " activations fused)";
  if (quantized.fused_ops > 0) summary += " (" + std::to_string(quantized.fused_ops) + " ops in int8)";
  blob.compile_specs.push_back({exporter::kSummarySpec, std::vector<uint8_t>(summary.begin(), summary.end())});
  CompileOptions options;
  options.num_threads = uint32_t(std::max(0, num_threads_));
  options.fp16 = fp16_;
  options.has_conv_block_bytes = conv_block_bytes_ >= 0;
  if (options.has_conv_block_bytes) options.conv_block_bytes = uint64_t(conv_block_bytes_);
  EncodedSpec specs[kMaxCompileSpecs];
  const size_t n = encode_compile_options(options, specs);
  for (size_t k = 0; k < n; ++k) {
    blob.compile_specs.push_back({specs[k].key, std::vector<uint8_t>(specs[k].bytes, specs[k].bytes + specs[k].size)});
  }
  return blob;
}

}  // namespace xnnpack
}  // namespace ember
