// The XNNPACK delegate's compile specs: the typed options the exporter encodes are what the
// backend decodes, and malformed values are rejected with what they must be.
#include "delegates/xnnpack/xnnpack_compile_specs.h"

#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace ember {
namespace xnnpack {
namespace {

CompileOptions round_trip(const CompileOptions& in) {
  EncodedSpec specs[kMaxCompileSpecs];
  const size_t n = encode_compile_options(in, specs);
  CompileOptions out;
  for (size_t k = 0; k < n; ++k) {
    const char* why = nullptr;
    EXPECT_TRUE(decode_compile_option(specs[k].key, specs[k].bytes, specs[k].size, &out, &why)) << specs[k].key;
  }
  return out;
}

TEST(XnnpackCompileSpecs, EncodeDecodeRoundTrip) {
  EncodedSpec specs[kMaxCompileSpecs];
  EXPECT_EQ(encode_compile_options(CompileOptions(), specs), 0u);  // defaults write nothing
  CompileOptions o;
  o.num_threads = 6;
  o.fp16 = true;
  o.has_conv_block_bytes = true;
  o.conv_block_bytes = (uint64_t{3} << 33) + 5;  // past 32 bits: all 8 bytes matter
  ASSERT_EQ(encode_compile_options(o, specs), 3u);
  EXPECT_STREQ(specs[0].key, kNumThreadsSpec);
  EXPECT_EQ(specs[0].size, 4);
  EXPECT_EQ(specs[0].bytes[0], 6);
  const CompileOptions back = round_trip(o);
  EXPECT_EQ(back.num_threads, 6u);
  EXPECT_TRUE(back.fp16);
  EXPECT_TRUE(back.has_conv_block_bytes);
  EXPECT_EQ(back.conv_block_bytes, o.conv_block_bytes);
  // conv_block_bytes = 0 (never split) is a value, not an absence.
  CompileOptions zero;
  zero.has_conv_block_bytes = true;
  zero.conv_block_bytes = 0;
  EXPECT_EQ(round_trip(zero).conv_block_bytes, 0u);
}

TEST(XnnpackCompileSpecs, MalformedValuesSayWhatTheyMustBe) {
  CompileOptions o;
  const char* why = nullptr;
  const uint8_t eight[8] = {1, 0, 0, 0, 0, 0, 0, 0};
  const uint8_t big[4] = {0x01, 0x04, 0, 0};  // 1025 threads
  const uint8_t two = 2;
  EXPECT_TRUE(decode_compile_option(kNumThreadsSpec, eight, 8, &o, &why));  // 8 bytes: older programs
  EXPECT_EQ(o.num_threads, 1u);
  EXPECT_FALSE(decode_compile_option(kNumThreadsSpec, eight, 3, &o, &why));
  EXPECT_NE(std::string(why).find("4- or 8-byte"), std::string::npos);
  EXPECT_FALSE(decode_compile_option(kNumThreadsSpec, big, 4, &o, &why));
  EXPECT_FALSE(decode_compile_option(kFp16Spec, &two, 1, &o, &why));
  EXPECT_FALSE(decode_compile_option(kFp16Spec, eight, 2, &o, &why));
  EXPECT_FALSE(decode_compile_option(kConvBlockBytesSpec, eight, 4, &o, &why));
  EXPECT_NE(std::string(why).find("8-byte"), std::string::npos);
  EXPECT_TRUE(decode_compile_option("ember.summary", eight, 1, &o, &why));  // not ours: left alone
  EXPECT_TRUE(decode_compile_option(nullptr, eight, 1, &o, &why));
}

}  // namespace
}  // namespace xnnpack
}  // namespace ember
