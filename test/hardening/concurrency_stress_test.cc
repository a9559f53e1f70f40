// Concurrency stress: many threads, each opening, running and closing its own Modules over ONE
// program file and ONE data file (the process-wide data file registry, the XNNPACK packed-weight
// table shared across programs, per-Module thread pools), results bit-identical to a
// single-threaded run. Run under --config=tsan in CI (halt_on_error: any data race fails it),
// and plain / ASan like every test.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "extension/module/shared_data_file.h"
#include "test/hardening/model_fixture.h"

namespace ember {
namespace {

constexpr int kThreads = 6;
constexpr int kRounds = 8;

std::string scratch(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return std::string(tmp ? tmp : "/tmp") + "/" + name;
}

void write(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// small_cnn with its weights in `stem`.ptd, as `stem`.pte (portable or XNNPACK); "" without shared/.
std::string export_external(const std::string& stem, bool xnnpack) {
  const std::string shared = testing::shared_dir();
  if (shared.empty()) return "";
  exporter::ExportOptions o;
  if (xnnpack) o.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  o.external_weights = scratch(stem + ".ptd");
  std::remove(o.external_weights.c_str());
  auto r = exporter::export_pt2_file(shared + "/models/small_cnn/model.pt2", o);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return "";
  write(o.external_weights, r->ptd);
  write(scratch(stem + ".pte"), r->pte);
  return scratch(stem);
}

std::vector<uint8_t> run_once(const std::string& stem, size_t threads, const TensorPtr& input, std::string* error) {
  Module m(stem + ".pte", {stem + ".ptd"});
  Status s = m.set_num_threads(threads);
  if (!s.ok()) {
    *error = s.to_string();
    return {};
  }
  auto out = m.forward({input});
  if (!out.ok()) {
    *error = out.error().to_string();
    return {};
  }
  const uint8_t* p = out->at(0).data<uint8_t>();
  return std::vector<uint8_t>(p, p + out->at(0).tensor().nbytes());
}

class ConcurrencyStress : public ::testing::TestWithParam<bool> {};

// Threads open the same program and data file over and over (the registry maps it once while
// any Module holds it, and again after all let go), each with a 2-thread pool, and get the
// single-threaded bytes every time.
TEST_P(ConcurrencyStress, ModulesOverOneProgramAndDataFile) {
  const bool xnnpack = GetParam();
  const std::string stem = export_external(xnnpack ? "stress_xnnpack" : "stress_portable", xnnpack);
  if (stem.empty()) GTEST_SKIP() << "shared/ data not found";
  const testing::ExportedModel& model = testing::exported_model("small_cnn");
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(model);
  std::string error;
  const std::vector<uint8_t> want = run_once(stem, 1, model.input, &error);
  ASSERT_FALSE(want.empty()) << error;
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        std::string e;
        const std::vector<uint8_t> got = run_once(stem, 1 + (t + round) % 2, model.input, &e);
        if (got.empty()) {
          failures++;
          errors[t] = e;
        } else if (got != want) {
          mismatches++;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0) << errors[0];
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(num_open_shared_data_files(), 0u) << "every Module let go of the data file";
}

// Long-lived Modules, one per thread, running concurrently over one data file they all hold.
TEST_P(ConcurrencyStress, LongLivedModulesRunConcurrently) {
  const bool xnnpack = GetParam();
  const std::string stem = export_external(xnnpack ? "long_xnnpack" : "long_portable", xnnpack);
  if (stem.empty()) GTEST_SKIP() << "shared/ data not found";
  const testing::ExportedModel& model = testing::exported_model("small_cnn");
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(model);
  std::string error;
  const std::vector<uint8_t> want = run_once(stem, 1, model.input, &error);
  ASSERT_FALSE(want.empty()) << error;
  std::vector<std::unique_ptr<Module>> modules;
  for (int t = 0; t < kThreads; ++t) {
    modules.push_back(std::make_unique<Module>(stem + ".pte", std::vector<std::string>{stem + ".ptd"}));
    ASSERT_TRUE(modules.back()->load_method("forward").ok());
  }
  EXPECT_EQ(num_open_shared_data_files(), 1u);
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 4 * kRounds; ++round) {
        auto out = modules[t]->forward({model.input});
        if (!out.ok()) {
          bad++;
          continue;
        }
        const uint8_t* p = out->at(0).data<uint8_t>();
        if (std::vector<uint8_t>(p, p + out->at(0).tensor().nbytes()) != want) bad++;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, ConcurrencyStress, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "xnnpack" : "portable"; });

}  // namespace
}  // namespace ember
