// The C API runs a program exported from a checked-in model (GRU + linear head, 1 input,
// 2 outputs) and must give exactly the C++ Module API's outputs on the same .pte (portable
// kernels and XNNPACK); the Module's outputs are checked against eager PyTorch first. Then
// every error path: each must return its status and a message, never crash. A program exported
// with external weights runs from its data file with the inline program's outputs.
#include "extension/c/ember_c.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "exporter/exporter.h"
#include "exporter/emit/data_file_writer.h"
#include "extension/module/module.h"
#include "extension/module/shared_data_file.h"
#include "runtime/version.h"

namespace ember {
namespace {

std::string model_dir() {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* ws = getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && ws != nullptr) return std::string(srcdir) + "/" + ws + "/test/models/recurrent/gru_linear_head";
  return "test/models/recurrent/gru_linear_head";
}

std::string tmp_dir() {
  const char* tmp = getenv("TEST_TMPDIR");
  return tmp ? tmp : "/tmp";
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Exports the model; `external_weights` non-empty: its weights go to that data file (written
// afresh: the exporter would append to one already there).
std::string export_model(bool xnnpack, std::vector<exporter::BundledCaseData> bundled = {},
                         const std::string& external_weights = "") {
  exporter::ExportOptions options;
  options.bundled_cases = std::move(bundled);
  options.external_weights = external_weights;
  if (!external_weights.empty()) std::remove(external_weights.c_str());
  if (xnnpack) options.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  auto r = exporter::export_pt2_file(model_dir() + "/model.pt2", options);
  if (!r.ok()) {
    ADD_FAILURE() << r.status();
    return "";
  }
  std::string path = tmp_dir() + (xnnpack ? "/c_api_xnnpack" : "/c_api_portable") +
                     (options.bundled_cases.empty() ? "" : "_bundled") + (external_weights.empty() ? "" : "_external") +
                     ".pte";
  write_bytes(path, r->pte);
  if (!external_weights.empty()) write_bytes(external_weights, r->ptd);
  return path;
}

double relative_l2(const float* a, const float* ref, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = static_cast<double>(a[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-12);
}

class CApiTest : public ::testing::TestWithParam<bool> {};

TEST_P(CApiTest, MatchesModuleApiOnTheSameProgram) {
  const std::string pte = export_model(GetParam());
  ASSERT_FALSE(pte.empty());
  auto input = read_npy(model_dir() + "/input_0.npy");
  ASSERT_TRUE(input.ok()) << input.error().to_string();
  ASSERT_EQ(input->dtype(), ScalarType::Float32);

  // Reference: the C++ Module API, itself checked against eager PyTorch.
  Module module(pte);
  auto ref = module.forward({*input});
  ASSERT_TRUE(ref.ok()) << ref.error().to_string();
  ASSERT_EQ(ref->size(), 2u);
  for (size_t i = 0; i < ref->size(); ++i) {
    auto torch = read_npy(model_dir() + "/output_" + std::to_string(i) + ".npy");
    ASSERT_TRUE(torch.ok()) << torch.error().to_string();
    ASSERT_EQ(torch->numel(), ref->at(i).numel());
    EXPECT_LE(relative_l2(ref->at(i).data<float>(), torch->data<float>(), torch->numel()), 1e-4) << "output " << i;
  }

  EmberModule* m = nullptr;
  ASSERT_EQ(ember_module_open(pte.c_str(), &m), EMBER_OK) << ember_last_error();
  ASSERT_NE(m, nullptr);
  size_t n_in = 0, n_out = 0;
  ASSERT_EQ(ember_module_num_inputs(m, "forward", &n_in), EMBER_OK) << ember_last_error();
  ASSERT_EQ(ember_module_num_outputs(m, "forward", &n_out), EMBER_OK) << ember_last_error();
  EXPECT_EQ(n_in, 1u);
  EXPECT_EQ(n_out, 2u);
  ASSERT_EQ(ember_module_load_method(m, "forward"), EMBER_OK) << ember_last_error();
  // Caller memory, run twice: the second run must give the same numbers (no stale state).
  std::vector<float> x(input->data<float>(), input->data<float>() + input->numel());
  for (int run = 0; run < 2; ++run) {
    ASSERT_EQ(ember_module_set_input(m, "forward", 0, EMBER_FLOAT32, input->sizes().data(), input->sizes().size(),
                                     x.data(), x.size() * sizeof(float)),
              EMBER_OK)
        << ember_last_error();
    ASSERT_EQ(ember_module_execute(m, "forward"), EMBER_OK) << ember_last_error();
    for (size_t i = 0; i < n_out; ++i) {
      EmberTensorView v;
      ASSERT_EQ(ember_module_output(m, "forward", i, &v), EMBER_OK) << ember_last_error();
      const Output& r = ref->at(i);
      ASSERT_EQ(v.dtype, EMBER_FLOAT32);
      ASSERT_EQ(v.rank, r.sizes().size());
      for (size_t d = 0; d < v.rank; ++d) EXPECT_EQ(v.sizes[d], r.sizes()[d]);
      ASSERT_EQ(v.nbytes, static_cast<size_t>(r.numel()) * sizeof(float));
      // Same program, same kernels, same input: bit-identical.
      EXPECT_EQ(std::memcmp(v.data, r.data<float>(), v.nbytes), 0) << "output " << i << " run " << run;
    }
  }
  ember_module_close(m);
}

INSTANTIATE_TEST_SUITE_P(Backends, CApiTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "xnnpack" : "portable"; });

// Metadata as the program declares it: method names, input/output kinds, dtypes and sizes
// (checked against the reference files), delegates and their backends, planned memory.
TEST_P(CApiTest, DescribesTheProgram) {
  const bool xnnpack = GetParam();
  const std::string pte = export_model(xnnpack);
  ASSERT_FALSE(pte.empty());
  EmberModule* m = nullptr;
  ASSERT_EQ(ember_module_open(pte.c_str(), &m), EMBER_OK) << ember_last_error();
  size_t methods = 0;
  ASSERT_EQ(ember_module_method_count(m, &methods), EMBER_OK) << ember_last_error();
  ASSERT_EQ(methods, 1u);
  const char* name = nullptr;
  ASSERT_EQ(ember_module_method_name(m, 0, &name), EMBER_OK) << ember_last_error();
  EXPECT_STREQ(name, "forward");
  const char* again = nullptr;  // a second call leaves the first name valid (same storage)
  ASSERT_EQ(ember_module_method_name(m, 0, &again), EMBER_OK);
  EXPECT_EQ(again, name);
  EXPECT_EQ(ember_module_method_name(m, 1, &name), EMBER_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ember_last_error(), "has 1"), nullptr) << ember_last_error();

  const char* files[] = {"/input_0.npy", "/output_0.npy", "/output_1.npy"};
  for (int f = 0; f < 3; ++f) {
    auto ref = read_npy(model_dir() + files[f]);
    ASSERT_TRUE(ref.ok()) << ref.error().to_string();
    EmberValueInfo info;
    EmberStatus st = f == 0 ? ember_module_input_info(m, "forward", 0, &info)
                            : ember_module_output_info(m, "forward", static_cast<size_t>(f - 1), &info);
    ASSERT_EQ(st, EMBER_OK) << ember_last_error();
    EXPECT_EQ(info.kind, EMBER_VALUE_TENSOR);
    EXPECT_EQ(info.dtype, EMBER_FLOAT32);
    EXPECT_EQ(info.dynamic, 0);
    ASSERT_EQ(info.rank, ref->sizes().size()) << files[f];
    for (size_t d = 0; d < info.rank; ++d) EXPECT_EQ(info.max_sizes[d], ref->sizes()[d]) << files[f];
    EXPECT_EQ(info.nbytes, static_cast<size_t>(ref->numel()) * sizeof(float));
  }
  EmberValueInfo info;
  EXPECT_EQ(ember_module_input_info(m, "forward", 1, &info), EMBER_INVALID_ARGUMENT);
  EXPECT_EQ(ember_module_output_info(m, "nope", 0, &info), EMBER_NOT_FOUND);

  size_t delegates = 0;
  ASSERT_EQ(ember_module_num_delegates(m, "forward", &delegates), EMBER_OK) << ember_last_error();
  if (xnnpack) {
    ASSERT_GE(delegates, 1u);
    for (size_t i = 0; i < delegates; ++i) {
      const char* backend = nullptr;
      ASSERT_EQ(ember_module_delegate_backend(m, "forward", i, &backend), EMBER_OK) << ember_last_error();
      EXPECT_STREQ(backend, "xnnpack");
    }
  } else {
    EXPECT_EQ(delegates, 0u);
  }
  const char* backend = nullptr;
  EXPECT_EQ(ember_module_delegate_backend(m, "forward", delegates, &backend), EMBER_INVALID_ARGUMENT);
  size_t planned = 0;
  ASSERT_EQ(ember_module_planned_bytes(m, "forward", &planned), EMBER_OK) << ember_last_error();
  EXPECT_GT(planned, 0u);

  // A tensor input is not a scalar and a tensor output is not read as one.
  EmberScalar scalar{EMBER_VALUE_INT, 3, 0.0};
  EXPECT_NE(ember_module_set_input_scalar(m, "forward", 0, &scalar), EMBER_OK);
  scalar.kind = EMBER_VALUE_TENSOR;
  EXPECT_EQ(ember_module_set_input_scalar(m, "forward", 0, &scalar), EMBER_INVALID_ARGUMENT);
  EXPECT_EQ(ember_module_output_scalar(m, "forward", 0, &scalar), EMBER_INVALID_STATE);  // no run yet
  EXPECT_EQ(ember_module_reset_state(m, "forward"), EMBER_OK) << ember_last_error();
  size_t cases = 0;
  EXPECT_EQ(ember_module_verify_bundled(m, -1, -1, &cases), EMBER_NOT_FOUND);  // no bundled cases
  ember_module_close(m);
}

exporter::NpyArray npy_of(const std::string& path) {
  auto got = exporter::read_npy(path);
  EXPECT_TRUE(got.ok()) << got.status();
  return got.ok() ? *got : exporter::NpyArray();
}

// Bundled cases: the eager outputs pass with the default tolerances, outputs perturbed by
// 1% fail with a message; results stay readable until the next verify.
TEST_P(CApiTest, VerifiesBundledCases) {
  exporter::BundledCaseData good{"eager", {npy_of(model_dir() + "/input_0.npy")},
                                 {npy_of(model_dir() + "/output_0.npy"), npy_of(model_dir() + "/output_1.npy")},
                                 "forward"};
  exporter::BundledCaseData bad = good;
  bad.name = "perturbed";
  float* first = reinterpret_cast<float*>(bad.expected_outputs[0].data.data());
  for (int64_t i = 0; i < bad.expected_outputs[0].numel(); ++i) first[i] *= 1.01f;
  const std::string pte = export_model(GetParam(), {good, bad});
  ASSERT_FALSE(pte.empty());
  EmberModule* m = nullptr;
  ASSERT_EQ(ember_module_open(pte.c_str(), &m), EMBER_OK) << ember_last_error();
  size_t cases = 0;
  ASSERT_EQ(ember_module_verify_bundled(m, -1, -1, &cases), EMBER_OK) << ember_last_error();
  ASSERT_EQ(cases, 2u);
  EmberBundledResult r;
  ASSERT_EQ(ember_module_bundled_result(m, 0, &r), EMBER_OK) << ember_last_error();
  EXPECT_STREQ(r.name, "eager");
  EXPECT_STREQ(r.method, "forward");
  EXPECT_EQ(r.passed, 1) << r.message;
  EXPECT_LT(r.rel_l2_error, 1e-4);
  ASSERT_EQ(ember_module_bundled_result(m, 1, &r), EMBER_OK) << ember_last_error();
  EXPECT_STREQ(r.name, "perturbed");
  EXPECT_EQ(r.passed, 0);
  EXPECT_GT(r.rel_l2_error, 5e-3);
  EXPECT_STRNE(r.message, "");
  EXPECT_EQ(ember_module_bundled_result(m, 2, &r), EMBER_INVALID_ARGUMENT);
  // Exact comparison fails the eager case too (XNNPACK and the portable kernels round
  // differently from PyTorch).
  ASSERT_EQ(ember_module_verify_bundled(m, 0, 0, &cases), EMBER_OK) << ember_last_error();
  ASSERT_EQ(ember_module_bundled_result(m, 0, &r), EMBER_OK);
  EXPECT_EQ(r.passed, r.max_abs_error == 0.0 ? 1 : 0);
  ember_module_close(m);
}

// Runs forward on `input` through the C API; each output's bytes (empty on failure).
std::vector<std::vector<uint8_t>> run_c(EmberModule* m, const TensorPtr& input) {
  std::vector<float> x(input.data<float>(), input.data<float>() + input.numel());
  std::vector<std::vector<uint8_t>> outs;
  size_t n_out = 0;
  if (ember_module_set_input(m, "forward", 0, EMBER_FLOAT32, input.sizes().data(), input.sizes().size(), x.data(),
                             x.size() * sizeof(float)) != EMBER_OK ||
      ember_module_execute(m, "forward") != EMBER_OK || ember_module_num_outputs(m, "forward", &n_out) != EMBER_OK) {
    ADD_FAILURE() << ember_last_error();
    return outs;
  }
  for (size_t i = 0; i < n_out; ++i) {
    EmberTensorView v;
    if (ember_module_output(m, "forward", i, &v) != EMBER_OK) {
      ADD_FAILURE() << ember_last_error();
      return {};
    }
    const uint8_t* p = static_cast<const uint8_t*>(v.data);
    outs.emplace_back(p, p + v.nbytes);
  }
  return outs;
}

// `ptd` with every float32 tensor scaled by 1.5, written to `out`: the same keys, dtypes and
// shapes with other bytes, as weights fine-tuned after the export would be.
void write_updated_data_file(const std::string& ptd, const std::string& out) {
  auto shared = open_shared_data_file(ptd);
  ASSERT_TRUE(shared.ok()) << shared.error().to_string();
  const DataFile& file = (*shared)->file();
  exporter::DataFileWriter writer;
  size_t scaled = 0;
  for (size_t i = 0; i < file.num_entries(); ++i) {
    auto e = file.entry(i);
    ASSERT_TRUE(e.ok());
    std::vector<uint8_t> bytes(e->bytes.begin(), e->bytes.end());
    if (e->dtype == ScalarType::Float32) {
      for (size_t k = 0; k + sizeof(float) <= bytes.size(); k += sizeof(float)) {
        float v;
        std::memcpy(&v, bytes.data() + k, sizeof(v));
        v *= 1.5f;
        std::memcpy(bytes.data() + k, &v, sizeof(v));
      }
      ++scaled;
    }
    EXPECT_EQ(writer.add(e->key, e->dtype, std::vector<int64_t>(e->sizes.begin(), e->sizes.end()), bytes).key,
              e->key);
  }
  EXPECT_GT(scaled, 0u);
  write_bytes(out, writer.bytes());
}

// A program exported with external weights: ember_module_open says it needs its data file,
// ember_module_open_with_data runs it with exactly the inline program's outputs (one shared
// mapping for two modules), a data file of another export is refused with the tensor's name,
// and updated weights load only with EMBER_OPEN_ALLOW_UPDATED_WEIGHTS.
TEST_P(CApiTest, OpensAProgramWithExternalWeights) {
  const bool xnnpack = GetParam();
  const std::string name = xnnpack ? "c_api_xnnpack_weights.ptd" : "c_api_portable_weights.ptd";
  const std::string ptd = tmp_dir() + "/" + name;
  const std::string inline_pte = export_model(xnnpack);
  const std::string pte = export_model(xnnpack, {}, ptd);
  ASSERT_FALSE(inline_pte.empty());
  ASSERT_FALSE(pte.empty());
  auto input = read_npy(model_dir() + "/input_0.npy");
  ASSERT_TRUE(input.ok()) << input.error().to_string();

  EmberModule* ref = nullptr;
  ASSERT_EQ(ember_module_open(inline_pte.c_str(), &ref), EMBER_OK) << ember_last_error();
  const auto want = run_c(ref, *input);
  ember_module_close(ref);
  ASSERT_EQ(want.size(), 2u);

  // Without its data file: NotFound, naming the file and the C call that takes it.
  EmberModule* m = reinterpret_cast<EmberModule*>(0x1);
  EXPECT_EQ(ember_module_open(pte.c_str(), &m), EMBER_NOT_FOUND);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(std::strstr(ember_last_error(), "data file"), nullptr) << ember_last_error();
  EXPECT_NE(std::strstr(ember_last_error(), name.c_str()), nullptr) << ember_last_error();
  EXPECT_NE(std::strstr(ember_last_error(), "ember_module_open_with_data"), nullptr) << ember_last_error();

  // With it: the inline program's outputs, bit for bit; two modules share one open data file.
  const char* data[] = {ptd.c_str()};
  const size_t files_before = num_open_shared_data_files();
  EmberModule* a = nullptr;
  EmberModule* b = nullptr;
  ASSERT_EQ(ember_module_open_with_data(pte.c_str(), data, 1, &a), EMBER_OK) << ember_last_error();
  ASSERT_EQ(ember_module_open_with_flags(pte.c_str(), data, 1, EMBER_OPEN_DEFAULT, &b), EMBER_OK)
      << ember_last_error();
  EXPECT_EQ(num_open_shared_data_files(), files_before + 1);
  EXPECT_EQ(run_c(a, *input), want);
  EXPECT_EQ(run_c(b, *input), want);
  ember_module_close(a);
  ember_module_close(b);
  EXPECT_EQ(num_open_shared_data_files(), files_before);
  // The program without external weights ignores the data file it is given (checked, unused).
  ASSERT_EQ(ember_module_open_with_data(inline_pte.c_str(), data, 1, &a), EMBER_OK) << ember_last_error();
  EXPECT_EQ(run_c(a, *input), want);
  ember_module_close(a);

  // A data file holding none of its tensors (an empty one), a file that is not a data file, and
  // a missing one: each refused, saying which.
  const std::string empty = tmp_dir() + "/c_api_empty.ptd";
  write_bytes(empty, exporter::DataFileWriter().bytes());
  const char* empty_data[] = {empty.c_str()};
  EXPECT_EQ(ember_module_open_with_data(pte.c_str(), empty_data, 1, &m), EMBER_NOT_FOUND);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(std::strstr(ember_last_error(), "none of the 1 data file"), nullptr) << ember_last_error();
  const char* junk_data[] = {pte.c_str()};  // a program, not a data file
  EXPECT_NE(ember_module_open_with_data(pte.c_str(), junk_data, 1, &m), EMBER_OK);
  EXPECT_EQ(m, nullptr);
  EXPECT_STRNE(ember_last_error(), "");
  const char* missing[] = {"/nonexistent/weights.ptd"};
  EXPECT_EQ(ember_module_open_with_data(pte.c_str(), missing, 1, &m), EMBER_ACCESS_FAILED);
  EXPECT_NE(std::strstr(ember_last_error(), "/nonexistent/weights.ptd"), nullptr) << ember_last_error();
  // Searched in order: the empty file first, then the right one.
  const char* both[] = {empty.c_str(), ptd.c_str()};
  ASSERT_EQ(ember_module_open_with_data(pte.c_str(), both, 2, &a), EMBER_OK) << ember_last_error();
  EXPECT_EQ(run_c(a, *input), want);
  ember_module_close(a);

  // Updated weights (same names and shapes, other bytes): refused unless allowed, then used.
  const std::string updated = tmp_dir() + "/updated_" + name;
  write_updated_data_file(ptd, updated);
  const char* updated_data[] = {updated.c_str()};
  EXPECT_EQ(ember_module_open_with_data(pte.c_str(), updated_data, 1, &m), EMBER_INVALID_PROGRAM);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(std::strstr(ember_last_error(), "differs"), nullptr) << ember_last_error();
  ASSERT_EQ(ember_module_open_with_flags(pte.c_str(), updated_data, 1, EMBER_OPEN_ALLOW_UPDATED_WEIGHTS, &a), EMBER_OK)
      << ember_last_error();
  const auto got = run_c(a, *input);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_NE(got, want);  // the scaled weights were used
  ember_module_close(a);
}

TEST(CApiErrors, OpenWithDataRejectsMissingArguments) {
  const char* data[] = {"w.ptd"};
  EmberModule* m = reinterpret_cast<EmberModule*>(0x1);
  EXPECT_EQ(ember_module_open_with_data("m.pte", data, 1, nullptr), EMBER_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ember_last_error(), "out_module is NULL"), nullptr) << ember_last_error();
  EXPECT_EQ(ember_module_open_with_data(nullptr, data, 1, &m), EMBER_INVALID_ARGUMENT);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(std::strstr(ember_last_error(), ".pte file's path"), nullptr) << ember_last_error();
  m = reinterpret_cast<EmberModule*>(0x1);
  EXPECT_EQ(ember_module_open_with_data("", data, 1, &m), EMBER_INVALID_ARGUMENT);
  EXPECT_EQ(m, nullptr);
  EXPECT_EQ(ember_module_open_with_data("m.pte", nullptr, 1, &m), EMBER_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ember_last_error(), "data_paths is NULL"), nullptr) << ember_last_error();
  EXPECT_EQ(ember_module_open_with_data("m.pte", data, 0, &m), EMBER_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ember_last_error(), "ember_module_open)"), nullptr) << ember_last_error();
  const char* holes[] = {"w.ptd", nullptr};
  EXPECT_EQ(ember_module_open_with_data("m.pte", holes, 2, &m), EMBER_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ember_last_error(), "data_paths[1] is NULL or empty"), nullptr) << ember_last_error();
  const char* blank[] = {""};
  EXPECT_EQ(ember_module_open_with_data("m.pte", blank, 1, &m), EMBER_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ember_last_error(), "data_paths[0]"), nullptr) << ember_last_error();
  EXPECT_EQ(ember_module_open_with_flags("m.pte", data, 1, 0x6, &m), EMBER_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ember_last_error(), "unknown flag bits 6"), nullptr) << ember_last_error();
  EXPECT_NE(std::strstr(ember_last_error(), "ember_module_open_with_flags"), nullptr) << ember_last_error();
  EXPECT_EQ(m, nullptr);
}

TEST(CApiErrors, EveryMisuseReturnsAStatusAndAMessage) {
  EmberModule* m = reinterpret_cast<EmberModule*>(0x1);
  EXPECT_EQ(ember_module_open("/nonexistent/model.pte", &m), EMBER_ACCESS_FAILED);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(std::strstr(ember_last_error(), "/nonexistent/model.pte"), nullptr) << ember_last_error();
  EXPECT_EQ(ember_module_open(nullptr, &m), EMBER_INVALID_ARGUMENT);
  EXPECT_EQ(ember_module_open("x.pte", nullptr), EMBER_INVALID_ARGUMENT);
  EXPECT_EQ(ember_module_execute(nullptr, "forward"), EMBER_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ember_last_error(), "NULL"), nullptr);
  ember_module_close(nullptr);  // ignored

  // A file that is not a program.
  std::string junk = tmp_dir() + "/junk.pte";
  std::ofstream(junk) << "not a program";
  EXPECT_NE(ember_module_open(junk.c_str(), &m), EMBER_OK);
  EXPECT_EQ(m, nullptr);
  EXPECT_STRNE(ember_last_error(), "");

  const std::string pte = export_model(false);
  ASSERT_FALSE(pte.empty());
  ASSERT_EQ(ember_module_open(pte.c_str(), &m), EMBER_OK) << ember_last_error();
  EmberTensorView v;
  EXPECT_EQ(ember_module_output(m, "forward", 0, &v), EMBER_INVALID_STATE);  // before execute
  EXPECT_NE(std::strstr(ember_last_error(), "ember_module_execute"), nullptr) << ember_last_error();
  EXPECT_EQ(ember_module_load_method(m, "no_such_method"), EMBER_NOT_FOUND) << ember_last_error();
  EXPECT_EQ(ember_module_execute(m, nullptr), EMBER_INVALID_ARGUMENT);

  auto input = read_npy(model_dir() + "/input_0.npy");
  ASSERT_TRUE(input.ok());
  const int64_t* sizes = input->sizes().data();
  const size_t rank = input->sizes().size();
  std::vector<float> x(static_cast<size_t>(input->numel()));
  const size_t nbytes = x.size() * sizeof(float);
  // nbytes disagrees with the sizes.
  EXPECT_EQ(ember_module_set_input(m, "forward", 0, EMBER_FLOAT32, sizes, rank, x.data(), nbytes - 4),
            EMBER_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ember_last_error(), "nbytes"), nullptr) << ember_last_error();
  // Bad dtype value, wrong dtype for the program, NULL data, negative size, rank too large.
  EXPECT_EQ(ember_module_set_input(m, "forward", 0, static_cast<EmberDtype>(42), sizes, rank, x.data(), nbytes),
            EMBER_INVALID_ARGUMENT);
  EXPECT_EQ(ember_module_set_input(m, "forward", 0, EMBER_INT32, sizes, rank, x.data(), nbytes),
            EMBER_INVALID_ARGUMENT)
      << ember_last_error();
  EXPECT_EQ(ember_module_set_input(m, "forward", 0, EMBER_FLOAT32, sizes, rank, nullptr, nbytes),
            EMBER_INVALID_ARGUMENT);
  int64_t negative[8] = {-1};
  EXPECT_EQ(ember_module_set_input(m, "forward", 0, EMBER_FLOAT32, negative, 1, x.data(), nbytes),
            EMBER_INVALID_ARGUMENT);
  int64_t big[EMBER_MAX_RANK + 1] = {};
  EXPECT_EQ(ember_module_set_input(m, "forward", 0, EMBER_FLOAT32, big, EMBER_MAX_RANK + 1, x.data(), 0),
            EMBER_INVALID_ARGUMENT);
  // Input index out of range.
  EXPECT_NE(ember_module_set_input(m, "forward", 5, EMBER_FLOAT32, sizes, rank, x.data(), nbytes), EMBER_OK);
  // A good run, then an output index out of range.
  ASSERT_EQ(ember_module_set_input(m, "forward", 0, EMBER_FLOAT32, sizes, rank, x.data(), nbytes), EMBER_OK)
      << ember_last_error();
  ASSERT_EQ(ember_module_execute(m, "forward"), EMBER_OK) << ember_last_error();
  EXPECT_EQ(ember_module_output(m, "forward", 2, &v), EMBER_INVALID_ARGUMENT);
  EXPECT_EQ(ember_module_output(m, "forward", 0, nullptr), EMBER_INVALID_ARGUMENT);
  EXPECT_EQ(ember_module_set_num_threads(m, 0), EMBER_INVALID_ARGUMENT);
  EXPECT_STREQ(ember_version(), EMBER_VERSION_STRING);
  ember_module_close(m);
}

}  // namespace
}  // namespace ember
