// ATen overloads that PyTorch's complete schema table exposed (scatter reduce variants,
// split variants, _nd losses, 1-D pooling, Tensor-argument linspace/logspace, index_fill,
// median/nanmedian/var_mean .dim, ...): every case under test/models/overloads/ (written by
// tools/models/export_overload_cases.py) exports with the portable kernels, runs and matches
// eager PyTorch. The cases are the directories: the script is the one list.
#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "exporter/exporter.h"
#include "gtest/gtest.h"
#include "test/exporter/pte_runner.h"
#include "test/exporter/shared_models.h"

namespace ember {
namespace {

std::string overloads_dir() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && ws != nullptr) return std::string(srcdir) + "/" + ws + "/test/models/overloads";
  return "test/models/overloads";
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  if (DIR* d = opendir(overloads_dir().c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name[0] != '.' && testing::file_exists(overloads_dir() + "/" + name + "/model.pt2")) names.push_back(name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(OverloadCases, AllPresent) {
  // A missing data directory would otherwise instantiate no case and pass.
  EXPECT_GE(case_names().size(), 41u) << "run tools/models/export_overload_cases.py";
}

class OverloadCase : public ::testing::TestWithParam<std::string> {};

TEST_P(OverloadCase, ExportsRunsAndMatchesPyTorch) {
  const std::string dir = overloads_dir() + "/" + GetParam();
  auto r = exporter::export_pt2_file(dir + "/model.pt2", exporter::ExportOptions());
  ASSERT_TRUE(r.ok()) << r.status();
  testing::PteRunner runner;
  ASSERT_EQ(runner.load(r->pte), "");
  ASSERT_NO_FATAL_FAILURE(testing::run_and_compare_with_reference(runner, dir, 1e-5, "overload", GetParam().c_str()));
}

INSTANTIATE_TEST_SUITE_P(Cases, OverloadCase, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace ember
