// The hand-written part of the schema table: only what PyTorch's registry does not provide
// (Python operators on symbolic ints, removed ATen ops, Ember's own operators).
// Every aten:: schema comes from aten_schemas.txt (tools/schemas/dump_aten_schemas.py);
// //test/exporter:op_schemas_test fails when an entry here duplicates one there.
// Written in native_functions.yaml signature syntax; a name without a namespace is aten::.
#include "exporter/ops/op_schemas.h"

namespace ember {
namespace exporter {

const std::vector<const char*>& op_schema_strings() {
  static const std::vector<const char*> kSchemas = {
      // Python operators on symbolic ints, as torch.export records them (`_operator.add`).
      "_operator::add(SymInt a, SymInt b) -> SymInt",
      "_operator::sub(SymInt a, SymInt b) -> SymInt",
      "_operator::mul(SymInt a, SymInt b) -> SymInt",
      "_operator::floordiv(SymInt a, SymInt b) -> SymInt",
      "_operator::truediv(SymInt a, SymInt b) -> SymInt",
      "_operator::mod(SymInt a, SymInt b) -> SymInt",
      "_operator::neg(SymInt a) -> SymInt",
      "_operator::ge(SymInt a, SymInt b) -> bool",
      "_operator::le(SymInt a, SymInt b) -> bool",
      "_operator::gt(SymInt a, SymInt b) -> bool",
      "_operator::lt(SymInt a, SymInt b) -> bool",
      "_operator::eq(SymInt a, SymInt b) -> bool",
      "_operator::ne(SymInt a, SymInt b) -> bool",
      // Removed from PyTorch's registry after 2.11 (torch.linalg replaced them); archives
      // written by older releases still record them.
      "cholesky(Tensor self, bool upper=False) -> Tensor",
      "qr(Tensor self, bool some=True) -> (Tensor Q, Tensor R)",
      // Ember's quantized operators (kernels/portable/quantized/quantized_conv_linear.cc), what
      // exporter/passes/lower_quantized.cc makes of PT2E's Q/DQ chains (docs/pte-format.md).
      "ember_quantized::conv2d(Tensor input, float input_scale, int input_zero_point, Tensor weight, "
      "Tensor weight_scales, Tensor? bias, int[2] stride, int[2] padding, int[2] dilation, int groups, "
      "float output_scale, int output_zero_point, int output_min, int output_max) -> Tensor",
      "ember_quantized::linear(Tensor input, float input_scale, int input_zero_point, Tensor weight, "
      "Tensor weight_scales, Tensor? bias, float output_scale, int output_zero_point, int output_min, "
      "int output_max) -> Tensor",
      // Weight-only int8 / int4 (kernels/portable/quantized/weight_only_ops.cc), what
      // exporter/passes/lower_weight_only.cc makes of the quantizer's dequantize -> linear / embedding.
      "ember_quantized::linear_weight_only(Tensor input, Tensor weight, Tensor weight_scales, int group_size, "
      "int bits, Tensor? bias) -> Tensor",
      "ember_quantized::embedding_weight_only(Tensor weight, Tensor weight_scales, int group_size, int bits, "
      "Tensor indices) -> Tensor",
      // Ember's fused decoder operators (kernels/optimized/llm_kernels.cc), what
      // exporter/passes/fuse_llm_attention.cc makes of the Llama attention, RMSNorm, RoPE and
      // SwiGLU patterns. The caches are mutable state, written in place.
      "ember_llm::sdpa_with_kv_cache(Tensor query, Tensor key, Tensor value, Tensor(a!) key_cache, "
      "Tensor(b!) value_cache, Tensor input_pos, float? scale=None) -> (Tensor, Tensor(a!), Tensor(b!))",
      "ember_llm::rms_norm(Tensor input, Tensor weight, float eps) -> Tensor",
      "ember_llm::rope(Tensor input, Tensor cos, Tensor sin) -> Tensor",
      "ember_llm::silu_mul(Tensor gate, Tensor up) -> Tensor",
      // Hugging Face transformers' grouped matrix multiply of MoE experts
      // (kernels/portable/linalg/grouped_mm.cc).
      "transformers::grouped_mm_fallback(Tensor input, Tensor weight, Tensor offs) -> Tensor",
      // torch.nn.functional.linear_cross_entropy's chunked implementation (a Python custom op
      // of torch.nn, registered only once that module runs, so the schema dump cannot see
      // it); exporter/passes/decompose.cc lowers it to linear + log_softmax + nll_loss.
      "torch_nn::_linear_cross_entropy_batch_chunked(Tensor input, Tensor linear_weight, Tensor target, "
      "Tensor? linear_bias, Tensor? weight, str reduction, int ignore_index, float label_smoothing, "
      "int batch_chunk_size, str acc_policy, ScalarType acc_dtype, bool allow_retain_graph, "
      "bool compute_input_grad, bool compute_linear_weight_grad, bool compute_linear_bias_grad) "
      "-> (Tensor, Tensor, Tensor, Tensor)",
      "torch_nn::_linear_cross_entropy_batch_chunked_no_reduction(Tensor input, Tensor linear_weight, "
      "Tensor target, Tensor? linear_bias, Tensor? weight, int ignore_index, int batch_chunk_size, "
      "str acc_policy, ScalarType acc_dtype) -> Tensor",
  };
  return kSchemas;
}

}  // namespace exporter
}  // namespace ember
