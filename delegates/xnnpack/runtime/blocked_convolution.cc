// Convolutions defined as output-channel blocks whose filters stay in a core's L2 cache.
//
// Why: XNNPACK's convolution walks output-row tiles (mr = 7 rows on AVX-512) outermost and,
// on one thread, all output channels inside each, so every tile streams the whole filter.
// Where the filter is larger than L2 and the output has few pixels (ResNet18's last stage:
// 9.4 MB of filters, 49 output pixels, 7 tiles) that is 7 passes over 9.4 MB from L3 or
// memory per convolution. A block of output channels whose filter fits L2 is read from memory
// once and then from L2 by every tile. The blocks write one temporary each and a concatenate
// (x32 copies) joins them: 64 output channels x 49 pixels is 12.5 KB, noise against the
// convolution. With T threads each thread streams about 1/T of the filter, so the split
// happens only when that share is over the budget: more blocks would only add operator
// dispatches (each wakes the thread pool).
#include <xnnpack.h>

#include <algorithm>

#include "delegates/xnnpack/runtime/xnnpack_delegate.h"

namespace ember {
namespace xnnpack {
namespace {

constexpr size_t kBlockAlignment = 64;  // XNNPACK's widest fp32 tile is 32 channels (AVX-512)
constexpr size_t kMaxBlocks = 25;       // two levels of xnn_define_concatenate5

}  // namespace

size_t conv_block_channels(size_t out_channels, size_t filter_bytes_per_channel, size_t threads,
                           uint64_t block_bytes) {
  if (block_bytes == 0 || filter_bytes_per_channel == 0 || out_channels <= kBlockAlignment) return out_channels;
  const uint64_t total = uint64_t(out_channels) * filter_bytes_per_channel;
  if (total <= block_bytes * std::max<size_t>(threads, 1)) return out_channels;
  size_t block = size_t(block_bytes / filter_bytes_per_channel) / kBlockAlignment * kBlockAlignment;
  block = std::max(block, kBlockAlignment);
  // At most kMaxBlocks blocks: wider ones for very wide layers.
  const size_t widest = (out_channels + kMaxBlocks - 1) / kMaxBlocks;
  block = std::max(block, (widest + kBlockAlignment - 1) / kBlockAlignment * kBlockAlignment);
  return std::min(block, out_channels);
}

xnn_status define_blocked_convolution(const XnnDelegate* d, xnn_subgraph_t sg, const NodeAttrs& a,
                                      const fb::Node& node, size_t block, const char** api) {
  *api = "xnn_define_convolution_2d (output-channel blocks)";
  const uint32_t in = node.inputs()->Get(0), filter = node.inputs()->Get(1), out = node.outputs()->Get(0);
  const uint32_t bias = node.inputs()->size() > 2 ? node.inputs()->Get(2) : XNN_INVALID_VALUE_ID;
  const Dims& fd = d->work_dims[filter];  // [O, KH, KW, I], checked by infer_shapes
  const size_t out_channels = fd.d[0], per_channel = fd.d[1] * fd.d[2] * fd.d[3];
  const float* weights = static_cast<const float*>(d->constant_data[filter]);
  const float* biases = bias != XNN_INVALID_VALUE_ID ? static_cast<const float*>(d->constant_data[bias]) : nullptr;
  if (weights == nullptr || (bias != XNN_INVALID_VALUE_ID && biases == nullptr) || block == 0 ||
      block >= out_channels) {
    return xnn_status_invalid_parameter;
  }
  uint32_t parts[kMaxBlocks];
  size_t part_channels[kMaxBlocks];
  size_t num_parts = 0;
  for (size_t o0 = 0; o0 < out_channels; o0 += block) {
    if (num_parts == kMaxBlocks) return xnn_status_invalid_parameter;
    const size_t oc = std::min(block, out_channels - o0);
    Dims filter_dims = fd, bias_dims, out_dims = d->work_dims[out];
    filter_dims.d[0] = oc;
    bias_dims.rank = 1;
    bias_dims.d[0] = oc;
    out_dims.d[3] = oc;
    uint32_t filter_id = XNN_INVALID_VALUE_ID, bias_id = XNN_INVALID_VALUE_ID, out_id = XNN_INVALID_VALUE_ID;
    xnn_status s = xnn_define_tensor_value(sg, xnn_datatype_fp32, filter_dims.rank, filter_dims.d,
                                           weights + o0 * per_channel, XNN_INVALID_VALUE_ID, 0, &filter_id);
    if (s == xnn_status_success && biases != nullptr) {
      s = xnn_define_tensor_value(sg, xnn_datatype_fp32, 1, bias_dims.d, biases + o0, XNN_INVALID_VALUE_ID, 0,
                                  &bias_id);
    }
    if (s == xnn_status_success) {
      s = xnn_define_tensor_value(sg, xnn_datatype_fp32, out_dims.rank, out_dims.d, nullptr, XNN_INVALID_VALUE_ID, 0,
                                  &out_id);
    }
    if (s == xnn_status_success) {
      s = xnn_define_convolution_2d(sg, a.padding[0], a.padding[1], a.padding[2], a.padding[3], a.kernel[0],
                                    a.kernel[1], a.stride[0], a.stride[1], a.dilation[0], a.dilation[1], 1, fd.d[3],
                                    oc, a.output_min, a.output_max, in, filter_id, bias_id, out_id, 0);
    }
    if (s != xnn_status_success) return s;
    parts[num_parts] = out_id;
    part_channels[num_parts++] = oc;
  }
  // Join along channels (NHWC axis 3), five at a time; the last join writes the node's output.
  while (num_parts > 1) {
    size_t joined = 0;
    for (size_t i = 0; i < num_parts; i += 5) {
      const size_t n = std::min<size_t>(5, num_parts - i);
      if (n == 1) {
        parts[joined] = parts[i];
        part_channels[joined++] = part_channels[i];
        continue;
      }
      size_t channels = 0;
      for (size_t k = 0; k < n; ++k) channels += part_channels[i + k];
      uint32_t target = out;
      if (num_parts > 5) {
        Dims dims = d->work_dims[out];
        dims.d[3] = channels;
        const xnn_status s =
            xnn_define_tensor_value(sg, xnn_datatype_fp32, dims.rank, dims.d, nullptr, XNN_INVALID_VALUE_ID, 0, &target);
        if (s != xnn_status_success) return s;
      }
      const uint32_t* p = parts + i;
      xnn_status s = xnn_status_success;
      switch (n) {
        case 2: s = xnn_define_concatenate2(sg, 3, p[0], p[1], target, 0); break;
        case 3: s = xnn_define_concatenate3(sg, 3, p[0], p[1], p[2], target, 0); break;
        case 4: s = xnn_define_concatenate4(sg, 3, p[0], p[1], p[2], p[3], target, 0); break;
        default: s = xnn_define_concatenate5(sg, 3, p[0], p[1], p[2], p[3], p[4], target, 0); break;
      }
      if (s != xnn_status_success) return s;
      parts[joined] = target;
      part_channels[joined++] = channels;
    }
    num_parts = joined;
  }
  return xnn_status_success;
}

}  // namespace xnnpack
}  // namespace ember
