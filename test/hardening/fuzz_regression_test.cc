// Every input the fuzzers found crashing (test/hardening/regressions/{pte,pt2}/) goes
// through the fuzzers' own harnesses and must end in a clean error. Inputs listed in
// kExpected must fail with a message containing the given text. Run under --config=asan
// too (./test.sh --config=asan) so out-of-bounds accesses show, not only crashes.
#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test/fuzz/pt2_harness.h"
#include "test/fuzz/pte_harness.h"

namespace ember {
namespace {

// File name -> text the failure must mention (in the load error or a method/run error).
const std::map<std::string, std::string> kExpected = {
    {"bundled_input_size_mismatch.pte", "bundled case 0 input 0 has a data size"},
    {"debug_table_length_mismatch.pte", "1 debug entries for 0 instructions"},
    {"misaligned_arena_offset.pte", "misaligned"},
    {"misaligned_sizes_vector.pte", "misaligned sizes vector"},
    {"pool_window_overflow.pte", "below 2^31"},
    {"stride_overflow.pte", "too large"},
    {"t5_kernel_writes_constant.pte", "a constant"},
    {"stored_entry_size_lie.pt2", "stored entry sizes disagree"},
    {"unplanned_conv_output.pte", "does not fit the planned shape/capacity"},
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
