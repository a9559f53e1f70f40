// Behaviour of the "xnnpack" backend beyond single ops: registration, shape changes and the
// runtime cache, setup elision, thread count, weights in program segments, a full Method
// with a delegate instruction, and malformed blobs/arguments (errors, never crashes).
#include <cpuinfo.h>
#include <gtest/gtest.h>

#include <cstring>

#include "delegates/xnnpack/xnnpack_blob_builder.h"
#include "runtime/executor/method.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/program/program.h"
#include "test/delegates/xnnpack/xnnpack_test_util.h"
#include "test/support/program_builder.h"
#include "test/support/test_programs.h"

namespace ember {
namespace xnnpack {
namespace testing {
namespace {

using ::ember::testing::Harness;
using ::ember::testing::MethodBuilder;
using ::ember::testing::PteBytes;
using ::ember::testing::ProgramBuilder;

std::vector<size_t> nhwc(const std::vector<int64_t>& s) { return {size_t(s[0]), size_t(s[2]), size_t(s[3]), size_t(s[1])}; }

// conv 3x3 pad 1 (3 -> 4 channels, relu) over an NCHW input with bounds `max` (NCHW).
struct ConvModel {
  std::vector<float> w, bias;
  explicit ConvModel(std::mt19937& rng) : w(random_vector(4 * 3 * 9, rng)), bias(random_vector(4, rng)) {}
  std::vector<uint8_t> blob(const std::vector<int64_t>& compiled, const std::vector<int64_t>& max) const {
    XnnBlobBuilder b;
    uint32_t in = b.input(nhwc(compiled), fb::Layout::NchwToNhwc, nhwc(max));
    XnnNodeParams p;
    p.padding = {{1, 1, 1, 1}};
    p.output_min = 0;
    uint32_t y = b.conv2d_from_oihw(in, w.data(), 4, 3, 3, 3, bias.data(), p);
    std::vector<int64_t> out_max = {max[0], 4, max[2], max[3]};
    b.mark_output(y, fb::Layout::NchwToNhwc, nhwc(out_max));
    EXPECT_TRUE(b.ok()) << b.error();
    return b.build();
  }
  std::vector<float> reference(const std::vector<float>& x, const std::vector<int64_t>& xs) const {
    Conv2dArgs a;
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
    a.lo = 0;
    std::vector<int64_t> ys;
    return ref_conv2d(x, xs, w, {4, 3, 3, 3}, bias.data(), a, &ys);
  }
};

TEST(XnnpackBackend, IsRegisteredAndAvailable) {
  Backend* b = find_backend("xnnpack");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b, &xnnpack_backend());
  EXPECT_TRUE(b->is_available());
}

TEST(XnnpackBackend, DynamicShapeReshapesTheRuntimeInsteadOfRebuilding) {
  std::mt19937 rng(1);
  ConvModel model(rng);
  Runner r;
  ASSERT_EQ(r.init(model.blob({1, 3, 8, 8}, {2, 3, 16, 16})), Error::Ok) << r.message();
  EXPECT_EQ(r.stats().runtimes_built, 1u);
  HostTensor x({1, 3, 8, 8}, true, {2, 3, 16, 16});
  HostTensor y({1, 4, 8, 8}, true, {2, 4, 16, 16});
  const std::vector<std::vector<int64_t>> shapes = {{1, 3, 8, 8}, {2, 3, 13, 9}, {1, 3, 8, 8}, {1, 3, 5, 16},
                                                    {2, 3, 13, 9}, {1, 3, 8, 8}};
  for (const auto& s : shapes) {
    x.set_sizes(s);
    std::vector<float> in = random_vector(numel(s), rng);
    x.fill(in);
    ASSERT_EQ(r.run({&x, &y}), Error::Ok) << r.message();
    EXPECT_EQ(y.sizes(), (std::vector<int64_t>{s[0], 4, s[2], s[3]}));
    EXPECT_LT(max_error(y.values(), model.reference(in, s)), 1e-4);
    EXPECT_TRUE(y.guards_intact());
  }
  // Five shape changes: each one reshapes the runtime built at init (xnn_reshape_runtime);
  // no runtime is created after init.
  EXPECT_EQ(r.stats().runtimes_built, 1u);
  EXPECT_EQ(r.stats().reshapes, 5u);
  EXPECT_EQ(r.stats().cached_runtimes, 1u);
  EXPECT_EQ(r.stats().invokes, shapes.size());
}

TEST(XnnpackBackend, ManyShapesOneRuntime) {
  std::mt19937 rng(2);
  ConvModel model(rng);
  Runner r;
  ASSERT_EQ(r.init(model.blob({1, 3, 4, 4}, {1, 3, 12, 12})), Error::Ok) << r.message();
  HostTensor x({1, 3, 4, 4}, true, {1, 3, 12, 12});
  HostTensor y({1, 4, 4, 4}, true, {1, 4, 12, 12});
  for (int64_t h = 4; h <= 10; ++h) {
    x.set_sizes({1, 3, h, 5});
    std::vector<float> in = random_vector(numel(x.sizes()), rng);
    x.fill(in);
    ASSERT_EQ(r.run({&x, &y}), Error::Ok) << r.message();
    EXPECT_LT(max_error(y.values(), model.reference(in, x.sizes())), 1e-4);
  }
  EXPECT_EQ(r.stats().runtimes_built, 1u);
  EXPECT_EQ(r.stats().reshapes, 7u);
  EXPECT_EQ(r.stats().cached_runtimes, 1u);
}

TEST(XnnpackBackend, InputBeyondBoundIsOutOfBounds) {
  std::mt19937 rng(3);
  ConvModel model(rng);
  Runner r;
  ASSERT_EQ(r.init(model.blob({1, 3, 8, 8}, {1, 3, 8, 8})), Error::Ok) << r.message();
  HostTensor x({1, 3, 9, 8}, true, {1, 3, 9, 8});
  HostTensor y({1, 4, 8, 8});
  EXPECT_EQ(r.run({&x, &y}), Error::OutOfBounds);
  EXPECT_NE(std::string(r.message()).find("bound"), std::string::npos) << r.message();
}

TEST(XnnpackBackend, SetupOnlyWhenPointersChange) {
  std::mt19937 rng(4);
  ConvModel model(rng);
  Runner r;
  ASSERT_EQ(r.init(model.blob({1, 3, 6, 7}, {1, 3, 6, 7})), Error::Ok);
  HostTensor x({1, 3, 6, 7}), y({1, 4, 6, 7}), y2({1, 4, 6, 7});
  x.fill(random_vector(3 * 42, rng));
  for (int i = 0; i < 3; ++i) ASSERT_EQ(r.run({&x, &y}), Error::Ok);
  EXPECT_EQ(r.stats().setups, 1u);  // staging buffers: same pointers every call
  // NCHW output goes through staging too, so another output tensor needs no new setup.
  ASSERT_EQ(r.run({&x, &y2}), Error::Ok);
  EXPECT_EQ(r.stats().setups, 1u);
  EXPECT_EQ(y.values(), y2.values());
}

TEST(XnnpackBackend, AsIsTensorsInPlaceAndSetupOnNewPointer) {
  std::mt19937 rng(5);
  std::vector<float> w = random_vector(6 * 9, rng);
  XnnBlobBuilder b;
  uint32_t in = b.input({4, 9});
  b.mark_output(b.linear(in, w.data(), 6, 9, nullptr));
  Runner r;
  ASSERT_EQ(r.init(b.build()), Error::Ok) << r.message();
  HostTensor x({4, 9}), y1({4, 6}), y2({4, 6});
  std::vector<float> xv = random_vector(36, rng);
  x.fill(xv);
  ASSERT_EQ(r.run({&x, &y1}), Error::Ok);
  ASSERT_EQ(r.run({&x, &y1}), Error::Ok);
  EXPECT_EQ(r.stats().setups, 1u);
  ASSERT_EQ(r.run({&x, &y2}), Error::Ok);
  EXPECT_EQ(r.stats().setups, 2u);
  EXPECT_LT(max_error(y2.values(), ref_linear(xv, 4, 9, w, 6, nullptr)), 1e-4);
  EXPECT_TRUE(y1.guards_intact() && y2.guards_intact());
}

TEST(XnnpackBackend, NumThreadsCompileSpec) {
  std::mt19937 rng(6);
  ConvModel model(rng);
  std::vector<uint8_t> two = {2, 0, 0, 0};
  // 39 MFLOP per invoke: worth both threads. 0.2 MFLOP: not worth a second one (thread_budget.cc).
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 3, 300, 300}, std::vector<int64_t>{1, 3, 33, 31}}) {
    const bool big = shape[2] == 300;
    Runner r;
    ASSERT_EQ(r.init(model.blob(shape, shape), {{"num_threads", two}}), Error::Ok) << r.message();
    EXPECT_EQ(r.stats().num_threads, big ? 2u : 1u);
    EXPECT_EQ(r.stats().threads_offered, big ? 0u : 2u);
    HostTensor x(shape), y({shape[0], 4, shape[2], shape[3]});
    std::vector<float> in = random_vector(numel(shape), rng);
    x.fill(in);
    ASSERT_EQ(r.run({&x, &y}), Error::Ok);
    EXPECT_LT(max_error(y.values(), model.reference(in, shape)), 1e-4);
  }

  Runner bad;
  std::vector<uint8_t> three_bytes = {2, 0, 0};
  EXPECT_EQ(bad.init(model.blob({1, 3, 4, 4}, {1, 3, 4, 4}), {{"num_threads", three_bytes}}), Error::InvalidProgram);
}

// A memory-bound graph (a 1-row fully connected layer: one multiply-add per weight) keeps
// every thread offered: there threads add memory bandwidth, not synchronisation only.
TEST(XnnpackBackend, MemoryBoundGraphKeepsAllThreads) {
  std::mt19937 rng(61);
  const size_t n = 512, k = 1024;
  const std::vector<float> w = random_vector(n * k, rng);
  XnnBlobBuilder b;
  const uint32_t in = b.input({1, k});
  b.mark_output(b.node(fb::OpType::FullyConnected, {in, b.constant({n, k}, w.data())}));
  ASSERT_TRUE(b.ok()) << b.error();
  Runner r(16 << 20);
  ASSERT_EQ(r.init(b.build(), {{"num_threads", {4, 0, 0, 0}}}), Error::Ok) << r.message();
  EXPECT_EQ(r.stats().num_threads, 4u);
  EXPECT_EQ(r.stats().threads_offered, 0u);
  HostTensor x({1, int64_t(k)}), y({1, int64_t(n)});
  const std::vector<float> xs = random_vector(k, rng);
  x.fill(xs);
  ASSERT_EQ(r.run({&x, &y}), Error::Ok) << r.message();
  std::vector<float> want(n, 0.0f);
  for (size_t o = 0; o < n; ++o)
    for (size_t j = 0; j < k; ++j) want[o] += w[o * k + j] * xs[j];
  EXPECT_LT(max_error(y.values(), want), 1e-4);
}

// "fp16" (ember export --xnnpack-fp16): fp16 weights and activations where XNNPACK can (any
// AVX2 or Arm FP16 CPU), with fp16-sized errors; shape changes keep working; bad specs are
// InvalidProgram.
TEST(XnnpackBackend, Fp16CompileSpec) {
  std::mt19937 rng(16);
  ConvModel model(rng);
  Runner r;
  ASSERT_EQ(r.init(model.blob({1, 3, 33, 31}, {1, 3, 40, 40}), {{"fp16", {1}}}), Error::Ok) << r.message();
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{1, 3, 33, 31}, std::vector<int64_t>{1, 3, 17, 40}}) {
    HostTensor x(shape, true, {1, 3, 40, 40}), y({1, 4, shape[2], shape[3]}, true, {1, 4, 40, 40});
    std::vector<float> in = random_vector(numel(shape), rng);
    x.fill(in);
    ASSERT_EQ(r.run({&x, &y}), Error::Ok) << r.message();
    const double err = max_error(y.values(), model.reference(in, shape));
    if (r.stats().fp16) {
      EXPECT_LT(err, 1e-2) << "fp16 inference beyond fp16 rounding";
      EXPECT_GT(err, 1e-5) << "fp16 requested and reported, but the result has fp32 accuracy";
    } else {
      EXPECT_LT(err, 1e-4) << "fp32 fallback";
    }
    EXPECT_TRUE(y.guards_intact());
  }
#if defined(__x86_64__)
  if (cpuinfo_initialize() && cpuinfo_has_x86_avx2() && cpuinfo_has_x86_f16c()) {
    EXPECT_TRUE(r.stats().fp16);  // XNNPACK runs fp16 on every AVX2 + F16C CPU
  }
#endif
  Runner off;
  ASSERT_EQ(off.init(model.blob({1, 3, 8, 8}, {1, 3, 8, 8}), {{"fp16", {0}}}), Error::Ok) << off.message();
  EXPECT_FALSE(off.stats().fp16);
  for (const std::vector<uint8_t>& bad : {std::vector<uint8_t>{}, std::vector<uint8_t>{1, 0}, std::vector<uint8_t>{2}}) {
    Runner r2;
    EXPECT_EQ(r2.init(model.blob({1, 3, 4, 4}, {1, 3, 4, 4}), {{"fp16", bad}}), Error::InvalidProgram);
    EXPECT_NE(std::strstr(r2.message(), "fp16"), nullptr) << r2.message();
  }
}

// "conv_block_bytes": a convolution whose filters give each thread more than the budget runs
// as output-channel blocks (8 here: two levels of concatenation) with the same results, also
// after a shape change; with the filters shared among enough threads, or a budget of 0, it
// runs whole. A malformed spec is InvalidProgram.
TEST(XnnpackBackend, ConvBlockBytesSplitsWideConvolutions) {
  std::mt19937 rng(23);
  const size_t out_channels = 7 * 64 + 3, in_channels = 8;
  const std::vector<float> w = random_vector(out_channels * in_channels * 9, rng), bias = random_vector(out_channels, rng);
  const uint64_t per_channel = in_channels * 9 * sizeof(float);
  auto blob = [&](std::vector<int64_t> compiled = {1, 8, 11, 9}) {
    XnnBlobBuilder b;
    const uint32_t in = b.input(nhwc(compiled), fb::Layout::NchwToNhwc, nhwc({2, 8, 32, 32}));
    XnnNodeParams p;
    p.padding = {{1, 1, 1, 1}};
    p.output_min = 0;
    const uint32_t y = b.conv2d_from_oihw(in, w.data(), out_channels, in_channels, 3, 3, bias.data(), p);
    b.mark_output(y, fb::Layout::NchwToNhwc, nhwc({2, int64_t(out_channels), 32, 32}));
    EXPECT_TRUE(b.ok()) << b.error();
    return b.build();
  };
  auto le64 = [](uint64_t v) {
    std::vector<uint8_t> out(8);
    for (size_t k = 0; k < 8; ++k) out[k] = uint8_t(v >> (8 * k));
    return out;
  };
  const std::vector<uint8_t> budget = le64(64 * per_channel);  // 64-channel blocks
  Conv2dArgs a;
  a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
  a.lo = 0;
  Runner r;
  ASSERT_EQ(r.init(blob(), {{"conv_block_bytes", budget}}), Error::Ok) << r.message();
  EXPECT_EQ(r.stats().blocked_convolutions, 1u);
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{1, 8, 11, 9}, std::vector<int64_t>{2, 8, 16, 13}}) {
    HostTensor x(shape, true, {2, 8, 16, 16}), y({shape[0], int64_t(out_channels), shape[2], shape[3]}, true,
                                                  {2, int64_t(out_channels), 16, 16});
    const std::vector<float> in = random_vector(numel(shape), rng);
    x.fill(in);
    ASSERT_EQ(r.run({&x, &y}), Error::Ok) << r.message();
    std::vector<int64_t> ys;
    EXPECT_LT(max_error(y.values(), ref_conv2d(in, shape, w, {int64_t(out_channels), int64_t(in_channels), 3, 3},
                                               bias.data(), a, &ys)),
              1e-4);
    EXPECT_TRUE(y.guards_intact());
  }
  // 8 threads (a 2x8x32x32 input: 133 MFLOP, worth them): each one's share, 1/8 of the
  // filters, is within the budget.
  Runner shared;
  ASSERT_EQ(shared.init(blob({2, 8, 32, 32}), {{"conv_block_bytes", budget}, {"num_threads", {8, 0, 0, 0}}}),
            Error::Ok);
  EXPECT_EQ(shared.stats().num_threads, 8u);
  EXPECT_EQ(shared.stats().blocked_convolutions, 0u);
  Runner off;
  ASSERT_EQ(off.init(blob(), {{"conv_block_bytes", le64(0)}}), Error::Ok) << off.message();
  EXPECT_EQ(off.stats().blocked_convolutions, 0u);
  Runner bad;
  EXPECT_EQ(bad.init(blob(), {{"conv_block_bytes", {1, 0, 0, 0}}}), Error::InvalidProgram);
  EXPECT_NE(std::strstr(bad.message(), "conv_block_bytes"), nullptr) << bad.message();
}

TEST(XnnpackBackend, WrongArgumentsAreRejected) {
  std::mt19937 rng(7);
  ConvModel model(rng);
  Runner r;
  ASSERT_EQ(r.init(model.blob({1, 3, 4, 4}, {1, 3, 4, 4})), Error::Ok);
  HostTensor x({1, 3, 4, 4}), y({1, 4, 4, 4}), rank3({3, 4, 4});
  EXPECT_EQ(r.run({&x}), Error::InvalidArgument);
  EXPECT_EQ(r.run({&rank3, &y}), Error::InvalidArgument);
  x.tensor().dtype = ScalarType::Int32;
  EXPECT_EQ(r.run({&x, &y}), Error::InvalidArgument);
  x.tensor().dtype = ScalarType::Float32;
  HostTensor small_out({1, 4, 3, 4});  // static, wrong shape
  EXPECT_EQ(r.run({&x, &small_out}), Error::OutOfBounds);
  EXPECT_EQ(r.run({&x, &y}), Error::Ok) << r.message();
}

// ---- malformed blobs ----

std::vector<uint8_t> valid_blob() {
  std::mt19937 rng(8);
  ConvModel model(rng);
  return model.blob({1, 3, 5, 5}, {1, 3, 9, 9});
}

TEST(XnnpackBackend, TruncatedBlobsFailCleanly) {
  const std::vector<uint8_t> blob = valid_blob();
  for (size_t n = 0; n < blob.size(); n += (n < 64 ? 1 : 7)) {
    Runner r(1 << 20);
    Error err = r.init(std::vector<uint8_t>(blob.begin(), blob.begin() + n));
    EXPECT_NE(err, Error::Ok) << "prefix " << n;
  }
}

TEST(XnnpackBackend, RandomlyCorruptedBlobsNeverCrash) {
  const std::vector<uint8_t> blob = valid_blob();
  std::mt19937 rng(9);
  int accepted = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<uint8_t> bad = blob;
    const int flips = 1 + int(rng() % 4);
    for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] ^= uint8_t(1u << (rng() % 8));
    Runner r(1 << 20);
    if (r.init(bad) != Error::Ok) continue;
    ++accepted;  // e.g. a weight byte changed: must still run within bounds
    HostTensor x({1, 3, 5, 5}, true, {1, 3, 9, 9}), y({1, 4, 5, 5}, true, {1, 4, 9, 9});
    r.run({&x, &y});
    EXPECT_TRUE(x.guards_intact() && y.guards_intact());
  }
  RecordProperty("accepted", accepted);
}

// A minimal graph written raw, so single fields can be broken.
struct RawGraph {
  XnnTensorSpec in, out;
  fb::OpType op = fb::OpType::Sigmoid;
  std::vector<uint32_t> node_in = {0}, node_out = {1};
  uint32_t version = kXnnGraphVersion;
  RawGraph() {
    in.dims = {2, 3};
    in.kind = fb::TensorKind::ExternalInput;
    out.dims = {2, 3};
    out.kind = fb::TensorKind::ExternalOutput;
  }
  std::vector<uint8_t> build() const {
    XnnBlobBuilder b;
    b.add_tensor_raw(in);
    b.add_tensor_raw(out);
    b.add_node_raw(op, node_in, node_out, XnnNodeParams());
    b.set_counts_raw(1, 1);
    b.set_version_raw(version);
    return b.build();
  }
};

Error init_raw(const RawGraph& g, std::string* message = nullptr) {
  Runner r(1 << 20);
  Error e = r.init(g.build());
  if (message) *message = r.message();
  return e;
}

TEST(XnnpackBackend, MalformedGraphsAreInvalidProgram) {
  EXPECT_EQ(init_raw(RawGraph()), Error::Ok);
  std::string msg;
  {
    RawGraph g;
    g.node_in = {7};  // bad tensor id
    EXPECT_EQ(init_raw(g, &msg), Error::InvalidProgram);
    EXPECT_NE(msg.find("node 0 (Sigmoid)"), std::string::npos) << msg;
  }
  {
    RawGraph g;
    g.node_out = {0};  // writes the input
    EXPECT_EQ(init_raw(g), Error::InvalidProgram);
  }
  {
    RawGraph g;
    g.out.dims = {2, 4};  // declared shape disagrees with the op
    EXPECT_EQ(init_raw(g, &msg), Error::InvalidProgram);
  }
  {
    RawGraph g;
    g.out.external_index = 3;
    EXPECT_EQ(init_raw(g), Error::InvalidProgram);
  }
  {
    RawGraph g;
    g.in.dtype = static_cast<fb::DataType>(100);  // unknown (1..4 are the quantized types)
    EXPECT_EQ(init_raw(g), Error::NotSupported);
  }
  {
    RawGraph g;
    g.op = static_cast<fb::OpType>(200);
    EXPECT_EQ(init_raw(g), Error::NotSupported);
  }
  {
    RawGraph g;
    g.op = fb::OpType::Add2;  // needs 2 inputs
    EXPECT_EQ(init_raw(g), Error::InvalidProgram);
  }
  {
    RawGraph g;
    g.in.dims = {1, 2, 3, 4, 5, 6, 7};  // rank 7
    EXPECT_EQ(init_raw(g), Error::InvalidProgram);
  }
  {
    RawGraph g;
    g.in.dims = {uint64_t(1) << 40, 3};
    EXPECT_EQ(init_raw(g), Error::InvalidProgram);
  }
  {
    RawGraph g;
    g.in.layout = fb::Layout::NchwToNhwc;  // needs rank 4
    EXPECT_EQ(init_raw(g), Error::InvalidProgram);
  }
  {
    RawGraph g;
    g.version = 99;
    EXPECT_EQ(init_raw(g), Error::VersionMismatch);
  }
  {
    RawGraph g;
    g.out.kind = fb::TensorKind::Internal;  // output 0 missing
    EXPECT_EQ(init_raw(g), Error::InvalidProgram);
  }
}

TEST(XnnpackBackend, BadConstantsAreRejected) {
  // Inline constant shorter than its dims.
  XnnBlobBuilder b;
  uint32_t in = b.input({2, 3});
  XnnTensorSpec c;
  c.dims = {3};
  c.kind = fb::TensorKind::Constant;
  c.inline_bytes = {1, 2, 3, 4};
  uint32_t k = b.add_tensor_raw(c);
  b.mark_output(b.node(fb::OpType::Add2, {in, k}));
  Runner r;
  EXPECT_EQ(r.init(b.build()), Error::InvalidProgram);

  // Constant slot reference without a program (or the slot compile spec).
  XnnBlobBuilder s;
  uint32_t in2 = s.input({2, 3});
  s.mark_output(s.node(fb::OpType::Add2, {in2, s.constant_in_slot({3}, 0, 0)}));
  Runner r2;
  EXPECT_EQ(r2.init(s.build()), Error::InvalidProgram);
  EXPECT_NE(std::string(r2.message()).find("slot"), std::string::npos);
}

TEST(XnnpackBackend, XnnpackRejectionNamesOpAndStatus) {
  // XNNPACK refuses a 1x1 max pooling window; our verifier accepts it (it is well formed).
  XnnBlobBuilder b;
  uint32_t in = b.input({1, 4, 4, 2});
  XnnNodeParams p;
  p.kernel = {{1, 1}};
  b.mark_output(b.node(fb::OpType::MaxPooling2d, {in}, p));
  Runner r;
  Error e = r.init(b.build());
  if (e != Error::Ok) {
    EXPECT_NE(std::string(r.message()).find("xnn_status_"), std::string::npos) << r.message();
    EXPECT_NE(std::string(r.message()).find("MaxPooling2d"), std::string::npos) << r.message();
  }
}

// ---- weights in program segments and a full Method ----

TEST(XnnpackBackend, WeightsInProgramSegmentsThroughMethod) {
  std::mt19937 rng(10);
  const std::vector<int64_t> xs = {1, 3, 7, 6};
  std::vector<float> w = random_vector(4 * 3 * 9, rng), bias = random_vector(4, rng);
  std::vector<float> ohwi = oihw_to_ohwi(w.data(), 4, 3, 3, 3);

  ProgramBuilder pb;
  // Weights + bias in one segment (bias at a 4-byte offset, as the exporter would pack them).
  std::vector<float> seg = ohwi;
  seg.insert(seg.end(), bias.begin(), bias.end());
  const uint32_t weights = pb.add_segment(seg);
  XnnBlobBuilder b;
  uint32_t in = b.input(nhwc(xs), fb::Layout::NchwToNhwc);
  // Slot 0 is the weights segment (kConstantSegmentsSpec below).
  uint32_t f = b.constant_in_slot({4, 3, 3, 3}, 0, 0);
  uint32_t bi = b.constant_in_slot({4}, 0, ohwi.size() * sizeof(float));
  XnnNodeParams p;
  p.padding = {{1, 1, 1, 1}};
  p.kernel = {{3, 3}};
  b.mark_output(b.node(fb::OpType::Convolution2d, {in, f, bi}, p), fb::Layout::NchwToNhwc);
  ASSERT_TRUE(b.ok()) << b.error();
  const uint32_t blob_segment = pb.add_segment(b.build());

  MethodBuilder& m = pb.method("forward");
  int32_t x = int32_t(m.input_tensor(ScalarType::Float32, xs));
  int32_t y = int32_t(m.planned_tensor(ScalarType::Float32, {1, 4, 7, 6}));
  uint32_t d = m.delegate("xnnpack", int32_t(blob_segment), {},
                          {{kConstantSegmentsSpec,
                            {uint8_t(weights), uint8_t(weights >> 8), uint8_t(weights >> 16), uint8_t(weights >> 24)}}});
  m.delegate_call(d, {x, y});
  m.set_inputs({uint32_t(x)}).set_outputs({uint32_t(y)});
  PteBytes pte = pb.build();

  Harness h;
  ASSERT_EQ(h.load(pte), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("forward", 1 << 20), Error::Ok) << h.message();
  std::vector<int64_t> sizes = xs;
  std::vector<float> in_data = random_vector(numel(xs), rng);
  Tensor t;
  t.dtype = ScalarType::Float32;
  t.rank = 4;
  t.sizes = sizes.data();
  t.max_sizes = sizes.data();
  t.data = in_data.data();
  t.capacity_bytes = in_data.size() * sizeof(float);
  EValue v;
  v.tag = ValueTag::Tensor;
  v.as_tensor = &t;
  ASSERT_EQ(h.method().set_input(0, v), Error::Ok) << h.message();
  ASSERT_EQ(h.method().execute(), Error::Ok) << h.message();
  const Tensor& out = *h.method().output(0).as_tensor;
  std::vector<float> got(out.data_as<float>(), out.data_as<float>() + out.numel());
  Conv2dArgs a;
  a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
  std::vector<int64_t> ys;
  EXPECT_LT(max_error(got, ref_conv2d(in_data, xs, w, {4, 3, 3, 3}, bias.data(), a, &ys)), 1e-4);
}

}  // namespace
}  // namespace testing
}  // namespace xnnpack
}  // namespace ember
