// Quantized blobs at init: every quantization field of a hand-written (or mutated) blob is
// checked before XNNPACK sees it, and a bad one is an error naming the tensor or node, never a
// crash inside XNNPACK.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "delegates/xnnpack/xnnpack_blob_builder.h"
#include "test/delegates/xnnpack/xnnpack_test_util.h"

namespace ember {
namespace xnnpack {
namespace testing {
namespace {

struct Init {
  Error error;
  std::string message;
};

Init init(const XnnBlobBuilder& b) {
  EXPECT_TRUE(b.ok()) << b.error();
  Runner r(4 << 20);
  Init out;
  out.error = r.init(b.build());
  out.message = r.message();
  return out;
}

// QInt8 input [1, 6, 6, 4] (NHWC) -> conv 3x3 (QCInt8 filter, QCInt32 bias) -> QInt8 -> Convert
// -> Fp32 output; `mutate` changes one field before the conv node is added.
struct ConvBlob {
  float in_scale = 0.02f;
  int32_t in_zp = -3;
  std::vector<float> w_scales = std::vector<float>(8, 0.01f);
  uint32_t w_channel_dim = 0;
  fb::DataType w_dtype = fb::DataType::QCInt8;
  std::vector<float> b_scales = std::vector<float>(8, 0.0002f);
  float out_scale = 0.05f;
  int32_t out_zp = 4;
  bool depthwise_op = false;

  XnnBlobBuilder build() const {
    XnnBlobBuilder b;
    const uint32_t x = b.input({1, 6, 6, 4});
    b.set_qint8(x, in_scale, in_zp);
    std::vector<int8_t> w(8 * 3 * 3 * 4, 1);
    std::vector<int32_t> bias(8, 5);
    XnnQuant wq;
    wq.channel_scales = w_scales;
    wq.channel_dim = w_channel_dim;
    XnnQuant bq;
    bq.channel_scales = b_scales;
    const uint32_t f = b.quantized_constant(w_dtype, {8, 3, 3, 4}, w.data(), wq);
    const uint32_t bc = b.quantized_constant(fb::DataType::QCInt32, {8}, bias.data(), bq);
    XnnNodeParams p;
    p.kernel = {{3, 3}};
    p.padding = {{1, 1, 1, 1}};
    const uint32_t y = b.node(fb::OpType::Convolution2d, {x, f, bc}, p);
    b.set_qint8(y, out_scale, out_zp);
    b.mark_output(b.node(fb::OpType::Convert, {y}));
    return b;
  }
};

TEST(XnnpackQuantizedBlob, ValidConvolutionInitialises) {
  const Init r = init(ConvBlob().build());
  EXPECT_EQ(r.error, Error::Ok) << r.message;
}

TEST(XnnpackQuantizedBlob, BadScalesAndZeroPointsAreInvalidProgram) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (float s : {0.0f, -0.5f, nan, inf}) {
    ConvBlob c;
    c.in_scale = s;
    Init r = init(c.build());
    EXPECT_EQ(r.error, Error::InvalidProgram) << s;
    EXPECT_NE(r.message.find("tensor 0 has scale"), std::string::npos) << r.message;
    c = ConvBlob();
    c.w_scales[5] = s;
    r = init(c.build());
    EXPECT_EQ(r.error, Error::InvalidProgram) << s;
    EXPECT_NE(r.message.find("channel 5 has scale"), std::string::npos) << r.message;
    c = ConvBlob();
    c.b_scales[0] = s;
    EXPECT_EQ(init(c.build()).error, Error::InvalidProgram) << s;
    c = ConvBlob();
    c.out_scale = s;
    EXPECT_EQ(init(c.build()).error, Error::InvalidProgram) << s;
  }
  for (int32_t zp : {-129, 128, 1000}) {
    ConvBlob c;
    c.in_zp = zp;
    const Init r = init(c.build());
    EXPECT_EQ(r.error, Error::InvalidProgram) << zp;
    EXPECT_NE(r.message.find("zero point"), std::string::npos) << r.message;
    c = ConvBlob();
    c.out_zp = zp;
    EXPECT_EQ(init(c.build()).error, Error::InvalidProgram) << zp;
  }
}

TEST(XnnpackQuantizedBlob, WrongChannelScalesAreInvalidProgram) {
  ConvBlob c;
  c.w_scales.resize(7, 0.01f);  // 8 output channels
  Init r = init(c.build());
  EXPECT_EQ(r.error, Error::InvalidProgram);
  EXPECT_NE(r.message.find("7 channel scales for 8 channels"), std::string::npos) << r.message;
  c = ConvBlob();
  c.b_scales.resize(9, 0.0002f);
  EXPECT_EQ(init(c.build()).error, Error::InvalidProgram);
  c = ConvBlob();
  c.w_channel_dim = 4;  // rank 4
  r = init(c.build());
  EXPECT_EQ(r.error, Error::InvalidProgram);
  EXPECT_NE(r.message.find("channel dim 4"), std::string::npos) << r.message;
  c = ConvBlob();
  c.w_channel_dim = 3;  // a depthwise layout on a regular convolution
  c.w_scales.assign(4, 0.01f);
  r = init(c.build());
  EXPECT_EQ(r.error, Error::InvalidProgram);
  EXPECT_NE(r.message.find("channel dim 0"), std::string::npos) << r.message;
}

TEST(XnnpackQuantizedBlob, WrongDtypeCombinationsAreInvalidProgram) {
  {
    ConvBlob c;  // a per-tensor int8 filter: no qs8-qc8w kernel takes it here
    c.w_dtype = fb::DataType::QInt8;
    EXPECT_EQ(init(c.build()).error, Error::InvalidProgram);
  }
  {
    XnnBlobBuilder b;  // fp32 input, int8 filter
    const uint32_t x = b.input({1, 4, 4, 2});
    std::vector<int8_t> w(2 * 2, 1);
    XnnQuant wq;
    wq.channel_scales = {0.1f, 0.1f};
    const uint32_t f = b.quantized_constant(fb::DataType::QCInt8, {2, 1, 1, 2}, w.data(), wq);
    XnnNodeParams p;
    b.mark_output(b.node(fb::OpType::Convolution2d, {x, f}, p));
    const Init r = init(b);
    EXPECT_EQ(r.error, Error::InvalidProgram);
    EXPECT_NE(r.message.find("node 0 (Convolution2d)"), std::string::npos) << r.message;
  }
  {
    XnnBlobBuilder b;  // Convert from Fp32 to Fp32
    b.mark_output(b.node(fb::OpType::Convert, {b.input({3})}));
    EXPECT_EQ(init(b).error, Error::InvalidProgram);
  }
  {
    XnnBlobBuilder b;  // int8 max pooling that changes the quantization
    const uint32_t x = b.input({1, 4, 4, 2});
    b.set_qint8(x, 0.1f, 0);
    XnnNodeParams p;
    p.kernel = {{2, 2}};
    p.stride = {{2, 2}};
    const uint32_t y = b.node(fb::OpType::MaxPooling2d, {x}, p);
    b.set_qint8(y, 0.2f, 0);
    b.mark_output(y);
    const Init r = init(b);
    EXPECT_EQ(r.error, Error::InvalidProgram);
    EXPECT_NE(r.message.find("share one scale and zero point"), std::string::npos) << r.message;
  }
  {
    XnnBlobBuilder b;  // sigmoid has no int8 kernel here
    const uint32_t x = b.input({5});
    b.set_qint8(x, 0.1f, 0);
    const uint32_t y = b.node(fb::OpType::Sigmoid, {x});
    b.set_qint8(y, 0.1f, 0);
    b.mark_output(y);
    EXPECT_EQ(init(b).error, Error::InvalidProgram);
  }
  {
    XnnBlobBuilder b;  // a per-channel tensor as a delegate input
    XnnTensorSpec t;
    t.dtype = fb::DataType::QCInt8;
    t.dims = {4};
    t.kind = fb::TensorKind::ExternalInput;
    t.quant.channel_scales = {1, 1, 1, 1};
    const uint32_t x = b.add_tensor_raw(t);
    XnnTensorSpec o = t;
    o.kind = fb::TensorKind::ExternalOutput;
    const uint32_t y = b.add_tensor_raw(o);
    b.add_node_raw(fb::OpType::Copy, {x}, {y}, XnnNodeParams());
    b.set_counts_raw(1, 1);
    const Init r = init(b);
    EXPECT_EQ(r.error, Error::InvalidProgram);
    EXPECT_NE(r.message.find("must be a constant"), std::string::npos) << r.message;
  }
}

TEST(XnnpackQuantizedBlob, ChannelScalesInAMissingSlotAreInvalidProgram) {
  XnnBlobBuilder b;
  const uint32_t x = b.input({1, 4});
  b.set_qint8(x, 0.1f, 0);
  std::vector<int8_t> w(8, 1);
  XnnQuant wq;
  wq.scales_slot = 0;  // no program, no constant slots
  const uint32_t f = b.quantized_constant(fb::DataType::QCInt8, {2, 4}, w.data(), wq);
  const uint32_t y = b.node(fb::OpType::FullyConnected, {x, f});
  b.set_qint8(y, 0.1f, 0);
  b.mark_output(y);
  const Init r = init(b);
  EXPECT_EQ(r.error, Error::InvalidProgram);
  EXPECT_NE(r.message.find("constant slot 0"), std::string::npos) << r.message;
}

// Dynamically quantized fully connected: Fp32 -> Convert -> QDInt8 -> FullyConnected with a
// QBInt4 filter [4, 64] (block scales in constant slot `slot`) -> Fp32.
XnnBlobBuilder int4_fc_blob(uint32_t block_size, int32_t zero_point, int32_t slot) {
  XnnBlobBuilder b;
  const uint32_t x = b.input({2, 64});
  const uint32_t q = b.node(fb::OpType::Convert, {x});
  b.set_qdint8(q);
  std::vector<uint8_t> w(4 * 64 / 2, 0x88);
  XnnQuant wq;
  wq.zero_point = zero_point;
  wq.block_size = block_size;
  wq.scales_slot = slot;
  const uint32_t f = b.quantized_constant(fb::DataType::QBInt4, {4, 64}, w.data(), wq);
  b.mark_output(b.node(fb::OpType::FullyConnected, {q, f}));
  return b;
}

TEST(XnnpackQuantizedBlob, BadBlockQuantizedFiltersAreInvalidProgram) {
  Init r = init(int4_fc_blob(16, 8, 0));
  EXPECT_EQ(r.error, Error::InvalidProgram);
  EXPECT_NE(r.message.find("block size 16 must be a multiple of 32 dividing its 64 inputs"), std::string::npos)
      << r.message;
  r = init(int4_fc_blob(48, 8, 0));  // a multiple of 32 that does not divide 64
  EXPECT_EQ(r.error, Error::InvalidProgram);
  EXPECT_NE(r.message.find("block size 48"), std::string::npos) << r.message;
  r = init(int4_fc_blob(32, 0, 0));
  EXPECT_EQ(r.error, Error::InvalidProgram);
  EXPECT_NE(r.message.find("zero point 8"), std::string::npos) << r.message;
  r = init(int4_fc_blob(32, 8, -1));
  EXPECT_EQ(r.error, Error::InvalidProgram);
  EXPECT_NE(r.message.find("bfloat16 scales in a constant slot"), std::string::npos) << r.message;
  r = init(int4_fc_blob(32, 8, 0));  // no program, so no slot 0
  EXPECT_EQ(r.error, Error::InvalidProgram);
  EXPECT_NE(r.message.find("constant slot 0"), std::string::npos) << r.message;
}

TEST(XnnpackQuantizedBlob, DynamicallyQuantizedTensorsAreInternalAndFeedFullyConnectedOnly) {
  {
    XnnBlobBuilder b;
    XnnTensorSpec t;
    t.dtype = fb::DataType::QDInt8;
    t.dims = {2, 8};
    t.kind = fb::TensorKind::ExternalInput;
    const uint32_t x = b.add_tensor_raw(t);
    b.mark_output(b.node(fb::OpType::Copy, {x}));
    const Init r = init(b);
    EXPECT_EQ(r.error, Error::InvalidProgram);
    EXPECT_NE(r.message.find("QDInt8 tensor 0 must be internal"), std::string::npos) << r.message;
  }
  {
    XnnBlobBuilder b;
    const uint32_t x = b.input({2, 8});
    const uint32_t q = b.node(fb::OpType::Convert, {x});
    b.set_qdint8(q);
    b.mark_output(b.node(fb::OpType::Clamp, {q}));
    const Init r = init(b);
    EXPECT_EQ(r.error, Error::InvalidProgram);
    EXPECT_NE(r.message.find("Clamp"), std::string::npos) << r.message;
  }
  {  // a QDInt8 input with an Fp32 filter
    XnnBlobBuilder b;
    const uint32_t x = b.input({2, 8});
    const uint32_t q = b.node(fb::OpType::Convert, {x});
    b.set_qdint8(q);
    std::vector<float> w(3 * 8, 0.5f);
    b.mark_output(b.node(fb::OpType::FullyConnected, {q, b.constant({3, 8}, w.data())}));
    const Init r = init(b);
    EXPECT_EQ(r.error, Error::InvalidProgram);
    EXPECT_NE(r.message.find("QCInt8 (channel dim 0) or QBInt4 filter"), std::string::npos) << r.message;
  }
}

TEST(XnnpackQuantizedBlob, UnknownDtypeIsNotSupported) {
  XnnBlobBuilder b;
  XnnTensorSpec t;
  t.dtype = static_cast<fb::DataType>(42);
  t.dims = {4};
  t.kind = fb::TensorKind::ExternalInput;
  const uint32_t x = b.add_tensor_raw(t);
  b.mark_output(b.node(fb::OpType::Copy, {x}));
  EXPECT_EQ(init(b).error, Error::NotSupported);
}

}  // namespace
}  // namespace testing
}  // namespace xnnpack
}  // namespace ember
