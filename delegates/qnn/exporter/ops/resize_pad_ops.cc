// Spatial ops that move quantized values without new arithmetic on their grid: Pad (constant
// padding; the pad value quantized on the input's grid) and ResizeNearestNeighbor /
// ResizeBilinear (NHWC inside the HTP, PyTorch's coordinate rules mapped onto QNN's
// align_corners / half_pixel_centers).
#include <cmath>

#include "delegates/qnn/exporter/qnn_lowering.h"

namespace ember {
namespace qnn {
namespace {

using exporter::Arg;
using exporter::Node;

// aten::pad(self, pad[], mode="constant", value=None): pads pair up from the last dim backwards.
std::string check_pad(const QnnLowering& ctx, const Node& n) {
  if (std::string why = check_quantized_float_op(ctx, n); !why.empty()) return why;
  const exporter::Value* x = ctx.arg(n, 0);
  if (x == nullptr) return "input not a tensor";
  if (n.args.size() > 2 && n.args[2].kind == Arg::Kind::String && n.args[2].s != "constant") {
    return "padding mode " + n.args[2].s;
  }
  const std::vector<int64_t> pad = int_list(n, 1, 1, 0);
  if (pad.empty() || pad.size() % 2 != 0 || pad.size() > 2 * x->sizes.size()) return "pad list of another length";
  for (int64_t p : pad) {
    if (p < 0) return "negative padding (a crop)";
  }
  return "";
}

std::string lower_pad(QnnLowering& ctx, const Node& n) {
  const int xv = ctx.arg_value(n, 0);
  const size_t rank = ctx.g.values[xv].sizes.size();
  const std::vector<int64_t> pad = int_list(n, 1, 1, 0);
  // before / after for Ember dim d.
  auto amount = [&](size_t d, size_t side) -> uint32_t {
    const size_t k = 2 * (rank - 1 - d) + side;
    return k < pad.size() ? static_cast<uint32_t>(pad[k]) : 0;
  };
  const Layout layout = rank == 4 ? ctx.current_layout(xv) : Layout::Ember;
  std::vector<uint32_t> amounts;
  for (size_t j = 0; j < rank; ++j) {
    static const size_t from_nhwc[4] = {0, 2, 3, 1};  // NHWC position -> Ember dim
    const size_t d = layout == Layout::Nhwc ? from_nhwc[j] : j;
    amounts.push_back(amount(d, 0));
    amounts.push_back(amount(d, 1));
  }
  // The pad value on the input's grid (QNN takes it quantized), clamped to the grid's range; as
  // it is in an fp16 graph.
  const double value = n.args.size() > 3 && n.args[3].kind != Arg::Kind::None ? number_arg(n, 3, 0) : 0;
  ParamSpec pad_value = scalar_f32("pad_constant_value", static_cast<float>(value));
  if (!ctx.float_graph) {
    const QRep& r = ctx.quant.rep(xv);
    int64_t lo = 0, hi = 0;
    grid_limits(r.dtype, &lo, &hi);
    const double q = std::fmin(double(hi), std::fmax(double(lo), std::nearbyint(value / r.scale) + double(r.zero_point)));
    pad_value = scalar_i32("pad_constant_value", static_cast<int32_t>(q));
  }
  const int in = ctx.input(xv, layout);
  ctx.b->add_node("Pad", {in}, {ctx.output(ctx.out_value(n), layout)},
                  {scalar_u32("scheme", 0), tensor_u32("pad_amount", amounts, {static_cast<uint32_t>(rank), 2}),
                   pad_value});
  return ctx.b->ok() ? "" : ctx.b->error();
}

bool is_bilinear(const Node& n) { return n.kernel_name().rfind("aten::upsample_bilinear2d", 0) == 0; }

// The scale factors a call names ({} when it gives an output size): .vec's scale_factors list,
// or .default's scales_h / scales_w.
std::vector<double> scale_factors(const Node& n) {
  const bool vec = n.kernel_name().find(".vec") != std::string::npos;
  const size_t first = is_bilinear(n) ? 3 : 2;  // bilinear has align_corners before the scales
  std::vector<double> s;
  if (vec) {
    if (first < n.args.size() && n.args[first].kind == Arg::Kind::Doubles) s = n.args[first].doubles;
  } else {
    for (size_t i = first; i < first + 2 && i < n.args.size(); ++i) {
      if (n.args[i].kind == Arg::Kind::Double) s.push_back(n.args[i].d);
    }
    if (s.size() != 2) s.clear();
  }
  return s;
}

std::string check_resize(const QnnLowering& ctx, const Node& n) {
  if (std::string why = check_quantized_float_op(ctx, n); !why.empty()) return why;
  const exporter::Value* x = ctx.arg(n, 0);
  const int out = ctx.out_value(n);
  if (x == nullptr || x->sizes.size() != 4) return "input not 4-D";
  const std::vector<int64_t>& o = ctx.g.values[out].sizes;
  const bool align = is_bilinear(n) && bool_arg(n, 2, false);
  const std::vector<double> s = scale_factors(n);
  // PyTorch maps coordinates with 1 / scale when a scale is given, QNN with in / out: the same
  // only when out = in * scale exactly (align_corners uses neither).
  if (!align && !s.empty()) {
    for (size_t i = 0; i < 2; ++i) {
      if (static_cast<double>(x->sizes[2 + i]) * s[i] != static_cast<double>(o[2 + i])) {
        return "a scale factor that does not give the output size exactly";
      }
    }
  }
  return "";
}

std::string lower_resize(QnnLowering& ctx, const Node& n) {
  const bool bilinear = is_bilinear(n);
  const bool align = bilinear && bool_arg(n, 2, false);
  const int in = ctx.input(ctx.arg_value(n, 0), Layout::Nhwc);
  // PyTorch's nearest is floor(dst * in / out) (QNN's asymmetric rule: neither flag); its
  // bilinear without align_corners samples at half-pixel centres.
  ctx.b->add_node(bilinear ? "ResizeBilinear" : "ResizeNearestNeighbor", {in},
                  {ctx.output(ctx.out_value(n), Layout::Nhwc)},
                  {scalar_bool("align_corners", align), scalar_bool("half_pixel_centers", bilinear && !align)});
  return ctx.b->ok() ? "" : ctx.b->error();
}

}  // namespace

void add_resize_pad_ops(QnnOpTable& table) {
  table.add({"aten::pad.default", "aten::constant_pad_nd.default"}, check_pad, lower_pad);
  table.add({"aten::upsample_nearest2d.vec", "aten::upsample_nearest2d.default", "aten::upsample_bilinear2d.vec",
             "aten::upsample_bilinear2d.default"},
            check_resize, lower_resize);
}

}  // namespace qnn
}  // namespace ember
