// Weight-only quantized linear layers on XNNPACK (qd8-f32-qc8w / qd8-f32-qb4w fully connected)
// against the portable ember_quantized::linear_weight_only kernel: a float linear graph is
// quantized by Ember's quantizer (--quantize int8-weight / int4-weight) and exported with and
// without the XNNPACK partitioner; both programs run on the same inputs.
//
// Not bit-exact by design: XNNPACK quantizes each activation row to int8 (asymmetric, its own
// scale) before the integer dot product, the portable kernel dequantizes the weights to float
// (or quantizes per block of 32 for short inputs). The weights and, for int4, the bfloat16
// block scales are the same numbers on both sides (the quantizer writes bfloat16 scales), so
// the outputs differ only by the activation rounding: relative L2 well under 1% here
// (measured 0.3-0.6%); a wrong nibble order, scale layout or bias would be off by 10-100%.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "delegates/xnnpack/exporter/xnnpack_weight_only.h"
#include "delegates/xnnpack/runtime/xnnpack_backend.h"
#include "test/delegates/op_graph.h"
#include "runtime/core/float16.h"
#include "test/fuzz/pte_harness.h"

namespace ember {
namespace {

using exporter::Arg;
using testing::OpGraph;
using testing::t;

double rel_l2(const exporter::NpyArray& a, const exporter::NpyArray& b) {
  double d = 0, n = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.as<float>()[i], y = b.as<float>()[i];
    d += (x - y) * (x - y);
    n += y * y;
  }
  return n > 0 ? std::sqrt(d / n) : 0;
}

struct Case {
  const char* name;
  exporter::QuantizeMode mode;
  int64_t group;
  int64_t rows, in, out;  // input [rows, in] -> [rows, out]
  bool bias;
  bool relu;  // a relu after the linear layer (stays fp32 in the same partition)
};

class WeightOnlyLinear : public ::testing::TestWithParam<Case> {};

TEST_P(WeightOnlyLinear, DelegateMatchesPortableKernel) {
  const Case& k = GetParam();
  OpGraph o;
  const int x = o.input({k.rows, k.in});
  const int w = o.constant({k.out, k.in}, -0.3f, 0.3f);
  const Arg bias = k.bias ? t(o.constant({k.out}, -0.5f, 0.5f)) : Arg::none();
  int y = o.node("aten::linear", "default", {t(x), t(w), bias}, {k.rows, k.out});
  if (k.relu) y = o.node("aten::relu", "default", {t(y)}, {k.rows, k.out});
  o.output(y);

  exporter::ExportOptions po;
  po.quantize.mode = k.mode;
  po.quantize.group_size = k.group;
  exporter::ExportOptions xo = po;
  xo.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  auto portable = exporter::export_graph(o.g, po);
  auto del = exporter::export_graph(o.g, xo);
  ASSERT_TRUE(portable.ok()) << portable.status();
  ASSERT_TRUE(del.ok()) << del.status();
  EXPECT_EQ(portable->portable_ops["ember_quantized::linear_weight_only.default"], 1);
  std::string left;
  for (const auto& [op, n] : del->portable_ops) left += " " + op;
  EXPECT_TRUE(del->portable_ops.empty()) << "left on portable kernels:" << left;
  ASSERT_EQ(del->backends.size(), 1u);
  EXPECT_EQ(del->backends[0].ops["ember_quantized::linear_weight_only.default"], 1);
  // The delegate reads the packed weights in place: no bigger than the portable program
  // (plus the blob and, for int4, bfloat16 scales instead of float32 ones).
  EXPECT_LE(del->pte.size(), portable->pte.size() + 4096);

  testing::PteRunner a, b;
  ASSERT_EQ(a.load(portable->pte), "");
  ASSERT_EQ(b.load(del->pte), "");
  ASSERT_EQ(a.run(o.inputs), "");
  ASSERT_EQ(b.run(o.inputs), "");
  ASSERT_EQ(a.output(0).shape, b.output(0).shape);
  const double err = rel_l2(b.output(0), a.output(0));
  std::printf("[weight-only %s] delegate vs portable relative L2 %.5f\n", k.name, err);
  EXPECT_LT(err, 0.01);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, WeightOnlyLinear,
    ::testing::Values(Case{"int4_g32_decode_row", exporter::QuantizeMode::Int4Weight, 32, 1, 128, 96, true, false},
                      Case{"int4_g32_prefill_rows", exporter::QuantizeMode::Int4Weight, 32, 17, 256, 72, false, true},
                      Case{"int4_g64", exporter::QuantizeMode::Int4Weight, 64, 5, 192, 40, true, false},
                      Case{"int4_g128_wide", exporter::QuantizeMode::Int4Weight, 128, 3, 512, 130, true, false},
                      Case{"int8_per_channel", exporter::QuantizeMode::Int8Weight, 32, 9, 100, 33, true, true},
                      Case{"int8_decode_row", exporter::QuantizeMode::Int8Weight, 32, 1, 344, 128, false, false}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// Group sizes XNNPACK's block-wise kernels cannot take stay on the portable kernel, whole.
TEST(WeightOnlyLinearUnsupported, SmallGroupsStayPortable) {
  OpGraph o;
  const int x = o.input({2, 64});
  const int w = o.constant({16, 64}, -0.3f, 0.3f);
  o.output(o.node("aten::linear", "default", {t(x), t(w), Arg::none()}, {2, 16}));
  exporter::ExportOptions xo;
  xo.quantize.mode = exporter::QuantizeMode::Int4Weight;
  xo.quantize.group_size = 16;  // below XNNPACK's minimum block of 32
  xo.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  auto del = exporter::export_graph(o.g, xo);
  ASSERT_TRUE(del.ok()) << del.status();
  EXPECT_EQ(del->portable_ops["ember_quantized::linear_weight_only.default"], 1);
  testing::PteRunner r;
  ASSERT_EQ(r.load(del->pte), "");
  ASSERT_EQ(r.run(o.inputs), "");
}

// The new blob types (QDInt8, QBInt4 with bfloat16 block scales in a constant slot) inside a
// whole program: random bit flips anywhere in it are refused at load or init, or run within
// bounds (under ASan in CI); never a crash inside XNNPACK.
TEST(WeightOnlyLinear, CorruptedProgramsNeverCrash) {
  OpGraph o;
  const int x = o.input({2, 64});
  const int w = o.constant({24, 64}, -0.3f, 0.3f);
  const int w2 = o.constant({8, 24}, -0.3f, 0.3f);
  const int h = o.node("aten::linear", "default", {t(x), t(w), t(o.constant({24}, -0.5f, 0.5f))}, {2, 24});
  o.output(o.node("aten::linear", "default", {t(h), t(w2), Arg::none()}, {2, 8}));
  exporter::ExportOptions xo;
  xo.quantize.mode = exporter::QuantizeMode::Int4Weight;
  xo.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  auto del = exporter::export_graph(o.g, xo);  // 64 inputs: int4 (qb4w); 24: int8 per channel (qc8w)
  ASSERT_TRUE(del.ok()) << del.status();
  ASSERT_EQ(del->backends.size(), 1u);
  EXPECT_EQ(del->backends[0].ops["ember_quantized::linear_weight_only.default"], 2);
  // The intact program loads and runs through the fuzzers' harness (XNNPACK linked here).
  const fuzz::PteOutcome good = fuzz::run_pte_bytes(del->pte.data(), del->pte.size());
  ASSERT_EQ(good.load, Error::Ok) << good.load_message;
  ASSERT_GE(good.executions_ok, 1);
  std::mt19937 rng(11);
  int executed = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<uint8_t> bad = del->pte;
    const int flips = 1 + int(rng() % 3);
    for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] ^= uint8_t(1u << (rng() % 8));
    // Loads, initialises the delegate and executes where it can; reports errors otherwise.
    executed += fuzz::run_pte_bytes(bad.data(), bad.size()).executions_ok;
  }
  RecordProperty("executed", executed);
}

// Offset of the first run of `count` equal 16-bit words in `bytes` that read as a bfloat16
// in [1e-3, 1]: the block scales of a filter whose weights are all one value.
size_t find_block_scales(const std::vector<uint8_t>& bytes, size_t count) {
  for (size_t at = 0; at + 2 * count <= bytes.size(); at += 2) {
    uint16_t first;
    std::memcpy(&first, bytes.data() + at, 2);
    const float v = bf16_to_float(first);
    if (!(v >= 1e-3f && v <= 1.0f)) continue;
    size_t n = 1;
    for (; n < count; ++n) {
      uint16_t w;
      std::memcpy(&w, bytes.data() + at + 2 * n, 2);
      if (w != first) break;
    }
    if (n == count) return at;
  }
  return bytes.size();
}

// XNNPACK's own check of the block scales is patched out of the build
// (third_party/xnnpack/patches/README.md): Ember checks them before XNNPACK packs a filter.
// A program with a zero, negative or NaN scale is refused at load, with or without a
// packed-weights cache directory, and a refused program leaves nothing in the cache that
// would let a later load skip the check.
TEST(WeightOnlyLinear, BadBlockScalesAreRefusedBeforePacking) {
  OpGraph o;
  const int x = o.input({2, 64});
  const int w = o.constant({8, 64}, 0.5f, 0.5f);  // every block's scale is the same number
  o.output(o.node("aten::linear", "default", {t(x), t(w), Arg::none()}, {2, 8}));
  exporter::ExportOptions xo;
  xo.quantize.mode = exporter::QuantizeMode::Int4Weight;
  xo.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  auto del = exporter::export_graph(o.g, xo);
  ASSERT_TRUE(del.ok()) << del.status();
  ASSERT_EQ(del->backends.size(), 1u);
  const size_t scales = find_block_scales(del->pte, 8 * 64 / 32);
  ASSERT_LT(scales, del->pte.size()) << "the block scales were not found in the program";
  const char* base = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(base != nullptr ? base : "/tmp") + "/bad_block_scales_cache";
  for (const uint16_t bad : {uint16_t{0x0000}, uint16_t{0xBF80} /* -1 */, uint16_t{0x7FC0} /* NaN */}) {
    // A fresh directory per case: the good program's run below fills it, after which this
    // program (same content digest, so the same cache entries) would legitimately be warm.
    const std::string fresh = dir + std::to_string(bad);
    for (const char* cache : {"", fresh.c_str()}) {
      xnnpack::set_weights_cache_dir(cache);
      std::vector<uint8_t> pte = del->pte;
      std::memcpy(pte.data() + scales + 2 * 5, &bad, 2);  // block scale 5
      for (int attempt = 0; attempt < 2; ++attempt) {  // the second would be warm if anything was cached
        testing::PteRunner r;
        const std::string message = r.load(pte);
        EXPECT_NE(message.find("block scale 5 is"), std::string::npos)
            << "scale bits " << bad << " cache '" << cache << "' attempt " << attempt << ": " << message;
      }
      testing::PteRunner good;
      EXPECT_EQ(good.load(del->pte), "") << "cache '" << cache << "'";
      EXPECT_EQ(good.run(o.inputs), "");
    }
  }
  xnnpack::set_weights_cache_dir("");
}

// The bfloat16 rounding the int4 block scales go through (runtime/core/float16.h).
TEST(WeightOnlyLinear, Bfloat16Rounding) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.00390625f), 0x3f80);  // halfway to 0x3f81: ties to even
  EXPECT_EQ(float_to_bf16(1.01171875f), 0x3f82);  // halfway to 0x3f82 from 0x3f81: even
  EXPECT_EQ(float_to_bf16(1.0079f), 0x3f81);
  EXPECT_EQ(float_to_bf16(-2.0f), 0xc000);
}

}  // namespace
}  // namespace ember
