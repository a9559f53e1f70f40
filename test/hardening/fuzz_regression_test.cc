// Every input the fuzzers found crashing (test/hardening/regressions/{pte,ptd,pt2}/) goes
// through the fuzzers' own harnesses and must end in a clean error. Inputs listed in
// kExpected must fail with a message containing the given text. Run under --config=asan
// too (./test.sh --config=asan) so out-of-bounds accesses show, not only crashes.
#include <dirent.h>

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "exporter/emit/data_file_writer.h"
#include "test/fuzz/pt2_harness.h"
#include "test/fuzz/ptd_harness.h"
#include "test/fuzz/pte_harness.h"

namespace ember {
namespace {

// File name -> text the failure must mention (in the load error or a method/run error).
const std::map<std::string, std::string> kExpected = {
    {"bundled_input_size_mismatch.pte", "bundled case 0 input 0 has a data size"},
    {"byte_count_overflow.ptd", "entry 'w' has a bad size"},
    {"compare_operand_without_storage.pte", "a tensor argument does not fit the planned shape/capacity"},
    {"debug_table_length_mismatch.pte", "1 debug entries for 0 instructions"},
    {"jump_condition_retagged_by_kernel.pte", "is no longer a Bool"},
    {"misaligned_arena_offset.pte", "misaligned"},
    {"misaligned_sizes_vector.pte", "misaligned sizes vector"},
    {"pool_window_overflow.pte", "below 2^31"},
    {"quantized_conv_padding_overflow.pte", "must be below 2^31"},
    {"repeat_interleave_repeats_sum_overflow.pte", "the repeats' sum overflows int64"},
    {"rnn_weight_list_without_storage.pte", "a tensor in a list argument does not fit"},
    {"stride_overflow.pte", "too large"},
    {"t5_kernel_writes_constant.pte", "a constant"},
    {"stored_entry_size_lie.pt2", "stored entry sizes disagree"},
    {"unplanned_conv_output.pte", "does not fit the planned shape/capacity"},
    {"view_sizes_product_overflow.pte", "shape is invalid for the input size"},
    {"xnnpack_dims_misaligned.pte", "misaligned dims vector"},
};

std::string regressions_dir() {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* ws = getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && ws != nullptr) {
    return std::string(srcdir) + "/" + ws + "/test/hardening/regressions";
  }
  return "test/hardening/regressions";
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != ".." && n != "README.md") names.push_back(n);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

bool mentions(const std::vector<std::string>& messages, const std::string& needle) {
  for (const std::string& m : messages) {
    if (m.find(needle) != std::string::npos) return true;
  }
  return false;
}

TEST(FuzzRegressionTest, PteInputsFailCleanly) {
  std::string dir = regressions_dir() + "/pte";
  std::vector<std::string> names = files_in(dir);
  ASSERT_FALSE(names.empty()) << "no regression inputs in " << dir;
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    std::vector<uint8_t> bytes = read_file(dir + "/" + name);
    ASSERT_FALSE(bytes.empty());
    fuzz::PteOutcome o = fuzz::run_pte_bytes(bytes.data(), bytes.size());
    std::vector<std::string> all = o.messages;
    all.push_back(o.load_message);
    auto it = kExpected.find(name);
    if (it != kExpected.end()) {
      EXPECT_TRUE(mentions(all, it->second))
          << "expected an error mentioning '" << it->second << "'; load: " << error_name(o.load) << " "
          << o.load_message << (o.messages.empty() ? "" : "; first run error: " + o.messages[0]);
    }
  }
}

// .ptd inputs: no invariant of the ptd harness may break (the fuzzer aborts on one).
TEST(FuzzRegressionTest, PtdInputsFailCleanly) {
  std::string dir = regressions_dir() + "/ptd";
  std::vector<std::string> names = files_in(dir);
  ASSERT_FALSE(names.empty()) << "no regression inputs in " << dir;
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    std::vector<uint8_t> bytes = read_file(dir + "/" + name);
    ASSERT_FALSE(bytes.empty());
    fuzz::PtdOutcome o = fuzz::run_ptd_bytes(bytes.data(), bytes.size());
    EXPECT_EQ(o.violation, "");
    std::vector<std::string> all = o.messages;
    all.push_back(o.structure_message);
    all.push_back(o.full_message);
    auto it = kExpected.find(name);
    if (it != kExpected.end()) {
      EXPECT_TRUE(mentions(all, it->second))
          << "expected an error mentioning '" << it->second << "'; Structure: " << error_name(o.structure) << " "
          << o.structure_message;
    }
  }
}

// The ptd harness under plain `bazel test` (no fuzzer, no shared/): a data file of float32,
// int64 and empty tensors binds, runs and reads its weights back; every truncation and a sweep
// of single-byte changes keep every invariant.
TEST(FuzzRegressionTest, PtdHarnessOnWrittenDataFile) {
  exporter::DataFileWriter writer;
  auto floats = [](size_t n, float scale) {
    std::vector<uint8_t> b(n * 4);
    for (size_t i = 0; i < n; ++i) {
      const float f = scale * (static_cast<float>(i) - static_cast<float>(n) / 3);
      std::memcpy(b.data() + 4 * i, &f, 4);
    }
    return b;
  };
  writer.add("conv.weight", ScalarType::Float32, {4, 3, 3, 3}, floats(108, 0.25f));
  writer.add("conv.bias", ScalarType::Float32, {4}, floats(4, -1.5f));
  writer.add("fc.weight", ScalarType::Float32, {2, 5}, floats(10, 3.0f));
  writer.add("scalar", ScalarType::Float32, {}, floats(1, 7.0f));
  writer.add("ids", ScalarType::Int64, {3}, std::vector<uint8_t>(24, 1));
  writer.add("empty", ScalarType::Float32, {0, 5}, {});
  const std::vector<uint8_t> ptd = writer.bytes();

  fuzz::PtdOutcome o = fuzz::run_ptd_bytes(ptd.data(), ptd.size());
  ASSERT_EQ(o.violation, "");
  EXPECT_EQ(o.structure, Error::Ok) << o.structure_message;
  EXPECT_EQ(o.full, Error::Ok) << o.full_message;
  EXPECT_EQ(o.entries, 6u);
  EXPECT_EQ(o.bound_entries, fuzz::kMaxBoundEntries);  // conv.bias, conv.weight, fc.weight, scalar
  EXPECT_EQ(o.programs_loaded, 2);                     // as recorded, and with updated weights allowed
  EXPECT_EQ(o.executions_ok, 2);
  EXPECT_EQ(o.messages.size(), 4u);                    // digest, dtype, shape, key variants refused

  size_t loaded = 0;
  for (size_t n = 0; n < ptd.size(); ++n) {
    fuzz::PtdOutcome t = fuzz::run_ptd_bytes(ptd.data(), n);
    ASSERT_EQ(t.violation, "") << "truncated to " << n;
    EXPECT_EQ(t.structure, Error::InvalidProgram) << "truncated to " << n;
  }
  for (size_t at = 0; at < ptd.size(); at += 3) {
    for (uint8_t flip : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      std::vector<uint8_t> bad = ptd;
      bad[at] ^= flip;
      fuzz::PtdOutcome t = fuzz::run_ptd_bytes(bad.data(), bad.size());
      ASSERT_EQ(t.violation, "") << "byte " << at << " ^ " << int(flip);
      loaded += t.structure == Error::Ok ? 1 : 0;
    }
  }
  EXPECT_GT(loaded, 0u);  // some changes (inside tensor bytes) keep the file structurally valid
}

TEST(FuzzRegressionTest, Pt2InputsFailCleanly) {
  std::string dir = regressions_dir() + "/pt2";
  for (const std::string& name : files_in(dir)) {
    SCOPED_TRACE(name);
    std::vector<uint8_t> bytes = read_file(dir + "/" + name);
    fuzz::Pt2Outcome o = fuzz::run_pt2_bytes(bytes.data(), bytes.size());
    EXPECT_FALSE(o.invalid_program) << o.messages.back();
    auto it = kExpected.find(name);
    if (it != kExpected.end()) {
      EXPECT_TRUE(mentions(o.messages, it->second)) << "expected an error mentioning '" << it->second << "'"
                                                    << (o.messages.empty() ? "" : "; got: " + o.messages[0]);
    }
  }
}

}  // namespace
}  // namespace ember
