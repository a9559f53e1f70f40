// The packed-weights cache's file format (delegates/xnnpack/runtime/weights_index.h): indexes
// round-trip; any changed byte, any truncation, another program or machine, duplicate keys
// and bad sizes are refused with a reason; block headers accept only the size and digest the
// index names. The content digest it relies on is deterministic and length-sensitive.
#include <gtest/gtest.h>

#include <vector>

#include "delegates/xnnpack/runtime/weights_index.h"

namespace ember {
namespace xnnpack {
namespace {

IndexFile sample() {
  IndexFile f;
  f.program = content_digest("program", 7);
  f.environment = content_digest("machine", 7);
  for (uint32_t i = 0; i < 3; ++i) {
    IndexEntry e;
    e.seed = 100 + i;
    e.kernel_offset = 4096 * i;
    e.bias_offset = i == 1 ? kNoOffset : 64 * i;
    e.size = 1000 + i;
    e.ambiguous = i == 2;
    e.block = content_digest(&i, sizeof(i));
    f.entries.push_back(e);
  }
  return f;
}

TEST(WeightsIndex, RoundTrips) {
  const IndexFile f = sample();
  const std::vector<uint8_t> bytes = encode_index(f);
  EXPECT_EQ(bytes.size(), kIndexHeaderBytes + 3 * kIndexEntryBytes + 16);
  IndexFile back;
  ASSERT_EQ(parse_index(bytes.data(), bytes.size(), f.program, f.environment, &back), nullptr);
  ASSERT_EQ(back.entries.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(back.entries[i].same_key(f.entries[i].seed, f.entries[i].kernel_offset, f.entries[i].bias_offset));
    EXPECT_EQ(back.entries[i].size, f.entries[i].size);
    EXPECT_EQ(back.entries[i].ambiguous, f.entries[i].ambiguous);
    EXPECT_EQ(back.entries[i].block, f.entries[i].block);
  }
  EXPECT_EQ(encode_index(back), bytes);
}

TEST(WeightsIndex, EveryChangedByteAndEveryTruncationIsRefused) {
  const IndexFile f = sample();
  const std::vector<uint8_t> bytes = encode_index(f);
  IndexFile out;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t flip : {uint8_t(1), uint8_t(0x80)}) {
      std::vector<uint8_t> bad = bytes;
      bad[i] ^= flip;
      EXPECT_NE(parse_index(bad.data(), bad.size(), f.program, f.environment, &out), nullptr) << "byte " << i;
    }
  }
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_NE(parse_index(bytes.data(), n, f.program, f.environment, &out), nullptr) << n << " bytes";
  }
}

TEST(WeightsIndex, AnotherProgramOrMachineIsRefused) {
  const IndexFile f = sample();
  const std::vector<uint8_t> bytes = encode_index(f);
  IndexFile out;
  ContentDigest other = f.program;
  other.hi ^= 1;
  EXPECT_STREQ(parse_index(bytes.data(), bytes.size(), other, f.environment, &out), "written for another program");
  EXPECT_STREQ(parse_index(bytes.data(), bytes.size(), f.program, other, &out),
               "written for another CPU or XNNPACK build");
}

TEST(WeightsIndex, BadEntriesAreRefusedEvenWithAValidChecksum) {
  IndexFile out;
  IndexFile dup = sample();
  dup.entries[2].seed = dup.entries[0].seed;
  dup.entries[2].kernel_offset = dup.entries[0].kernel_offset;
  dup.entries[2].bias_offset = dup.entries[0].bias_offset;
  std::vector<uint8_t> b = encode_index(dup);
  EXPECT_STREQ(parse_index(b.data(), b.size(), dup.program, dup.environment, &out), "two entries share a key");
  IndexFile empty_block = sample();
  empty_block.entries[1].size = 0;
  b = encode_index(empty_block);
  EXPECT_STREQ(parse_index(b.data(), b.size(), empty_block.program, empty_block.environment, &out),
               "an entry's size is out of range");
  IndexFile no_kernel = sample();
  no_kernel.entries[0].kernel_offset = kNoOffset;
  b = encode_index(no_kernel);
  EXPECT_STREQ(parse_index(b.data(), b.size(), no_kernel.program, no_kernel.environment, &out), "an entry has no kernel");
}

TEST(WeightsIndex, BlockHeaderMustAgreeWithTheIndex) {
  const ContentDigest d = content_digest("block", 5);
  uint8_t h[kBlockHeaderBytes];
  encode_block_header(d, 1000, h);
  EXPECT_EQ(check_block_header(h, kBlockHeaderBytes + 1000, d, 1000), nullptr);
  EXPECT_NE(check_block_header(h, kBlockHeaderBytes + 999, d, 1000), nullptr) << "truncated file";
  EXPECT_NE(check_block_header(h, kBlockHeaderBytes + 1000, d, 999), nullptr) << "other size";
  ContentDigest other = d;
  other.lo ^= 1;
  EXPECT_NE(check_block_header(h, kBlockHeaderBytes + 1000, other, 1000), nullptr) << "other digest";
  EXPECT_NE(check_block_header(h, 10, d, 1000), nullptr);
  h[3] ^= 1;
  EXPECT_NE(check_block_header(h, kBlockHeaderBytes + 1000, d, 1000), nullptr) << "bad magic";
}

TEST(ContentDigest, DeterministicAndSensitive) {
  std::vector<uint8_t> a(1000);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i * 7);
  const ContentDigest d = content_digest(a.data(), a.size());
  EXPECT_EQ(d, content_digest(a.data(), a.size()));
  // Fixed value: the digest names files across machines and builds, so it must never change.
  char hex[33];
  digest_hex(content_digest("ember", 5), hex);
  EXPECT_STREQ(hex, "ff1c29b1ebf6b873bd289d81cac03b81");
  for (size_t i = 0; i < a.size(); i += 37) {
    std::vector<uint8_t> b = a;
    b[i] ^= 1;
    EXPECT_NE(content_digest(b.data(), b.size()), d) << "byte " << i;
  }
  std::vector<uint8_t> longer = a;
  longer.push_back(0);
  EXPECT_NE(content_digest(longer.data(), longer.size()), d) << "a trailing zero changes it";
  EXPECT_NE(content_digest(a.data(), 0), content_digest(a.data(), 1));
  // Incremental updates of 32-byte multiples equal one pass.
  ContentDigester inc;
  inc.update(a.data(), 320);
  inc.update(a.data() + 320, a.size() - 320);
  EXPECT_EQ(inc.finish(), d);
}

}  // namespace
}  // namespace xnnpack
}  // namespace ember
