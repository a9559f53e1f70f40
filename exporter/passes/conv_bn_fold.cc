#include <cmath>
#include <cstring>

#include "exporter/passes/passes.h"

namespace ember {
namespace exporter {
namespace {

const Constant* constant_of(const Graph& g, const Arg& a) {
  if (a.kind != Arg::Kind::Tensor) return nullptr;
  const Value& v = g.values[a.ref];
  if (v.role != ValueRole::Constant || v.constant < 0 || v.dtype != ScalarType::Float32) return nullptr;
  return &g.constants[v.constant];
}

std::vector<float> floats(const Constant& c) {
  std::vector<float> out(c.data.size() / sizeof(float));
  if (!out.empty()) std::memcpy(out.data(), c.data.data(), c.data.size());
  return out;
}

int add_constant(Graph& g, const std::string& name, const std::vector<int64_t>& sizes,
                 const std::vector<float>& data) {
  Constant c;
  c.name = name;
  c.dtype = ScalarType::Float32;
  c.sizes = sizes;
  c.data.resize(data.size() * sizeof(float));
  std::memcpy(c.data.data(), data.data(), c.data.size());
  g.constants.push_back(std::move(c));
  Value v;
  v.name = name;
  v.role = ValueRole::Constant;
  v.dtype = ScalarType::Float32;
  v.sizes = sizes;
  v.dynamic_dims.assign(sizes.size(), false);
  v.constant = static_cast<int>(g.constants.size()) - 1;
  return g.add_value(std::move(v));
}

}  // namespace

absl::StatusOr<int> fold_conv_batch_norm(Graph& g) {
  int folded = 0;
  std::vector<int> uses = g.use_counts();
  for (Node& bn : g.nodes) {
    if (bn.erased) continue;
    bool legit = bn.op == "aten::_native_batch_norm_legit_no_training";
    bool plain = bn.op == "aten::batch_norm";
    if (!legit && !plain) continue;
    if (plain && (bn.args.size() != 9 || bn.args[5].kind != Arg::Kind::Bool || bn.args[5].b)) continue;
    if (legit && bn.args.size() != 7) continue;
    const Arg& in = bn.args[0];
    if (in.kind != Arg::Kind::Tensor || uses[in.ref] != 1) continue;
    int producer = g.values[in.ref].producer;
    if (producer < 0) continue;
    Node& conv = g.nodes[producer];
    bool is_conv = conv.op == "aten::conv2d" || conv.op == "aten::conv1d" || conv.op == "aten::conv3d" ||
                   (conv.op == "aten::convolution" && conv.args.size() == 9 &&
                    conv.args[6].kind == Arg::Kind::Bool && !conv.args[6].b);
    if (!is_conv || conv.erased || conv.overload != "default" || conv.outputs.size() != 1) continue;
    if (legit) {  // only the normalised output may be used
      bool extra = false;
      for (size_t k = 1; k < bn.outputs.size(); ++k) for (int r : bn.outputs[k].value_refs()) extra |= uses[r] > 0;
      if (extra) continue;
    }
    const Constant* w = constant_of(g, conv.args[1]);
    const Constant* b = conv.args[2].kind == Arg::Kind::None ? nullptr : constant_of(g, conv.args[2]);
    const Constant* gamma = bn.args[1].kind == Arg::Kind::None ? nullptr : constant_of(g, bn.args[1]);
    const Constant* beta = bn.args[2].kind == Arg::Kind::None ? nullptr : constant_of(g, bn.args[2]);
    const Constant* mean = constant_of(g, bn.args[3]);
    const Constant* var = constant_of(g, bn.args[4]);
    int eps_idx = plain ? 7 : 6;
    if (w == nullptr || mean == nullptr || var == nullptr || w->sizes.empty()) continue;
    if ((conv.args[2].kind != Arg::Kind::None && b == nullptr) ||
        (bn.args[1].kind != Arg::Kind::None && gamma == nullptr) ||
        (bn.args[2].kind != Arg::Kind::None && beta == nullptr)) {
      continue;
    }
    double eps = bn.args[eps_idx].kind == Arg::Kind::Double ? bn.args[eps_idx].d : 1e-5;
    int64_t oc = w->sizes[0];
    std::vector<float> wf = floats(*w), mf = floats(*mean), vf = floats(*var);
    std::vector<float> gf = gamma ? floats(*gamma) : std::vector<float>(oc, 1.f);
    std::vector<float> bf = beta ? floats(*beta) : std::vector<float>(oc, 0.f);
    std::vector<float> cb = b ? floats(*b) : std::vector<float>(oc, 0.f);
    if (static_cast<int64_t>(mf.size()) != oc || static_cast<int64_t>(vf.size()) != oc ||
        static_cast<int64_t>(gf.size()) != oc || static_cast<int64_t>(bf.size()) != oc ||
        static_cast<int64_t>(cb.size()) != oc) {
      continue;
    }
    size_t per = wf.size() / oc;
    std::vector<float> new_b(oc);
    for (int64_t o = 0; o < oc; ++o) {
      double scale = gf[o] / std::sqrt(static_cast<double>(vf[o]) + eps);
      for (size_t k = 0; k < per; ++k) wf[o * per + k] = static_cast<float>(wf[o * per + k] * scale);
      new_b[o] = static_cast<float>((cb[o] - mf[o]) * scale + bf[o]);
    }
    std::string base = g.values[conv.outputs[0].ref].name;
    std::vector<int64_t> wsizes = w->sizes;
    int wid = add_constant(g, base + "_folded_weight", wsizes, wf);
    int bid = add_constant(g, base + "_folded_bias", {oc}, new_b);
    conv.args[1] = Arg::tensor(wid);
    conv.args[2] = Arg::tensor(bid);
    int bn_out = bn.outputs[0].kind == Arg::Kind::Tensor ? bn.outputs[0].ref : -1;
    bn.erased = true;
    if (bn_out >= 0) g.replace_uses(bn_out, conv.outputs[0].ref);
    uses = g.use_counts();
    ++folded;
  }
  g.compact();
  return folded;
}

}  // namespace exporter
}  // namespace ember
