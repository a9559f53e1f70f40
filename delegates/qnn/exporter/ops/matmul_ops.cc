// Products of two quantized activations: MatMul for matmul / bmm of equal ranks (2-D, or
// batched with the same batch dims on both sides; broadcasting batches stays portable).
#include "delegates/qnn/exporter/qnn_lowering.h"

namespace ember {
namespace qnn {
namespace {

using exporter::Node;

std::string check_matmul(const QnnLowering& ctx, const Node& n) {
  if (std::string why = check_quantized_float_op(ctx, n); !why.empty()) return why;
  const exporter::Value *a = ctx.arg(n, 0), *b = ctx.arg(n, 1);
  if (a == nullptr || b == nullptr) return "operand not a tensor";
  if (a->sizes.size() < 2 || a->sizes.size() != b->sizes.size()) return "operands of rank < 2 or of different ranks";
  for (size_t d = 0; d + 2 < a->sizes.size(); ++d) {
    if (a->sizes[d] != b->sizes[d]) return "broadcast batch dims";
  }
  return "";
}

std::string lower_matmul(QnnLowering& ctx, const Node& n) {
  // Rank 4 stays in Ember's order: the product is over the last two dims, not over channels.
  const int a = ctx.input(ctx.arg_value(n, 0), Layout::Ember);
  const int b = ctx.input(ctx.arg_value(n, 1), Layout::Ember);
  ctx.b->add_node("MatMul", {a, b}, {ctx.output(ctx.out_value(n), Layout::Ember)},
                  {scalar_bool("transpose_in0", false), scalar_bool("transpose_in1", false)});
  return ctx.b->ok() ? "" : ctx.b->error();
}

}  // namespace

void add_matmul_ops(QnnOpTable& table) {
  table.add({"aten::matmul.default", "aten::bmm.default", "aten::mm.default"}, check_matmul, lower_matmul);
}

}  // namespace qnn
}  // namespace ember
