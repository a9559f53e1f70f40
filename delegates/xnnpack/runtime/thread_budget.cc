// How many threads one invoke of a delegate's graph can use well.
//
// Why: XNNPACK splits every operator over the whole pool and waits for it; each operator then
// costs a wake-up and a join of every thread. For a small graph that costs more than the
// arithmetic: BERT-tiny (25 MFLOP in 43 operators) took 0.57 ms with 16 threads on the
// device machine against 0.25 ms with one, and 0.32-0.35 ms with three. So a compute-bound
// graph gets at most one thread per kFlopsPerThread of arithmetic. Memory-bound graphs (LLM decoding: about one
// multiply-add per weight) keep every thread: there more threads mean more memory bandwidth.
#include <algorithm>

#include "delegates/xnnpack/runtime/xnnpack_delegate.h"

namespace ember {
namespace xnnpack {
namespace {

constexpr double kFlopsPerThread = 16e6;       // ~120 us of one core's fp32 GEMM per thread
constexpr double kComputeBoundFlopsPerByte = 8;  // below: memory bound, every thread helps

// Floating-point operations of node i at the declared (compiled) shapes.
double node_flops(const XnnDelegate* d, uint32_t i) {
  const fb::Node* node = d->graph->nodes()->Get(i);
  const NodeAttrs& a = d->attrs[i];
  const double out = double(d->declared_dims[node->outputs()->Get(0)].numel());
  const auto dims_of = [&](uint32_t k) -> const Dims* {
    return k < node->inputs()->size() && node->inputs()->Get(k) < d->num_tensors
               ? &d->declared_dims[node->inputs()->Get(k)]
               : nullptr;
  };
  const Dims* x = dims_of(0);
  const Dims* w = dims_of(1);
  switch (a.op) {
    case fb::OpType::FullyConnected:  // filter [N, K]
      return w != nullptr && w->rank == 2 ? 2.0 * out * double(w->d[1]) : out;
    case fb::OpType::Convolution2d:  // filter [O, KH, KW, I / groups]
    case fb::OpType::Deconvolution2d:
      return w != nullptr && w->rank == 4 ? 2.0 * out * double(w->d[1] * w->d[2] * w->d[3]) : out;
    case fb::OpType::DepthwiseConvolution2d:  // filter [1, KH, KW, C]
      return w != nullptr && w->rank == 4 ? 2.0 * out * double(w->d[1] * w->d[2]) : out;
    case fb::OpType::BatchMatrixMultiply:  // [.., M, K] x [.., K, N] (or [.., N, K])
      return x != nullptr && x->rank >= 2 ? 2.0 * out * double(x->d[x->rank - 1]) : out;
    default:
      return out;  // elementwise, copies, reductions: about one operation per output
  }
}

}  // namespace

size_t useful_threads(const XnnDelegate* d, size_t threads) {
  if (threads <= 1) return threads;
  double flops = 0, weight_bytes = 0;
  for (uint32_t i = 0; i < d->num_nodes; ++i) flops += node_flops(d, i);
  for (uint32_t t = 0; t < d->num_tensors; ++t) {
    const fb::Tensor* tensor = d->graph->tensors()->Get(t);
    if (tensor->kind() == fb::TensorKind::Constant) {
      weight_bytes += double(storage_bytes(tensor->dtype(), d->declared_dims[t].numel()));
    }
  }
  if (flops < kComputeBoundFlopsPerByte * weight_bytes) return threads;
  const double useful = std::max(1.0, flops / kFlopsPerThread);
  return useful >= double(threads) ? threads : size_t(useful);
}

}  // namespace xnnpack
}  // namespace ember
