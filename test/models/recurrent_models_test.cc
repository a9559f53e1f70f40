// Recurrent layers and weight norm end to end, against eager PyTorch (data written by
// tools/models/export_recurrent.py into test/models/recurrent/):
// - every model exports with the portable kernels and with the XNNPACK partitioner, runs, and
//   matches every output (GRU/RNN: output and h_n; LSTM: output, h_n, c_n) to rel. L2 <= 1e-4;
// - packed sequences (aten::gru.data & co., which torch.export cannot trace) run kernel by
//   kernel on the eager op's own arguments and match its results.
#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "exporter/exporter.h"
#include "exporter/util/npy.h"
#include "gtest/gtest.h"
#include "test/exporter/pte_runner.h"
#include "test/exporter/shared_models.h"
#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace {

std::string recurrent_dir() {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* ws = getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && ws != nullptr) return std::string(srcdir) + "/" + ws + "/test/models/recurrent";
  return "test/models/recurrent";
}

struct ModelCase {
  const char* name;
  const char* op;  // the op that must reach the portable kernels ("" for weight norm)
  size_t outputs;
  bool delegated = false;  // with --backend xnnpack, some ops go to XNNPACK
};

const ModelCase kModels[] = {
    {"gru_2layer_bidir_batch_first", "aten::gru.input", 2},
    {"gru_h0", "aten::gru.input", 2},
    {"gru_no_bias_h0", "aten::gru.input", 2},
    {"rnn_tanh_2layer_bidir", "aten::rnn_tanh.input", 2},
    {"rnn_relu_2layer_bidir", "aten::rnn_relu.input", 2},
    {"gru_linear_head", "aten::gru.input", 2, true},  // the GRU output feeds a delegated linear
    {"lstm_proj_bidir", "aten::lstm.input", 3},
    {"weight_norm_parametrizations", "", 1},
    {"weight_norm_utils", "", 1},
    {"weight_norm_whole_tensor", "", 1},
};

class RecurrentModel : public ::testing::TestWithParam<std::tuple<ModelCase, bool>> {};

TEST_P(RecurrentModel, ExportsRunsAndMatchesPyTorch) {
  const ModelCase& m = std::get<0>(GetParam());
  const bool xnnpack = std::get<1>(GetParam());
  const std::string dir = recurrent_dir() + "/" + m.name;
  exporter::ExportOptions options;
  if (xnnpack) options.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  auto r = exporter::export_pt2_file(dir + "/model.pt2", options);
  ASSERT_TRUE(r.ok()) << r.status();
  std::string ops;
  for (const auto& [op, n] : r->portable_ops) ops += " " + op + " x" + std::to_string(n);
  std::printf("[%s] %s: portable ops:%s\n", xnnpack ? "xnnpack" : "portable", m.name, ops.c_str());
  if (xnnpack && m.delegated) {
    ASSERT_EQ(r->backends.size(), 1u);
    EXPECT_GT(r->backends[0].nodes, 0) << "nothing was delegated";
    EXPECT_EQ(r->portable_ops.count("aten::linear.default"), 0u) << "the linear head stayed on the portable kernels";
  }
  if (*m.op != '\0') {
    EXPECT_EQ(r->portable_ops.count(m.op), 1u) << m.op << " did not reach its portable kernel";
  }
  // Weight norm is decomposed and folded into a constant weight: nothing of it is left.
  for (const char* gone : {"aten::_weight_norm.default", "aten::linalg_vector_norm.default"}) {
    EXPECT_EQ(r->portable_ops.count(gone), 0u) << gone << " left in the program";
  }
  testing::PteRunner runner;
  ASSERT_EQ(runner.load(r->pte), "");
  ASSERT_EQ(runner.method().num_outputs(), m.outputs);
  ASSERT_EQ(testing::read_npy_series(dir, "output_").size(), m.outputs);
  ASSERT_NO_FATAL_FAILURE(testing::run_and_compare_with_reference(runner, dir, 1e-4, xnnpack ? "xnnpack" : "portable",
                                                                  m.name));
}

INSTANTIATE_TEST_SUITE_P(Models, RecurrentModel, ::testing::Combine(::testing::ValuesIn(kModels), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<ModelCase, bool>>& info) {
                           return std::string(std::get<0>(info.param).name) +
                                  (std::get<1>(info.param) ? "_xnnpack" : "_portable");
                         });

// ---- packed sequences: the kernels on the eager op's arguments ----

std::unique_ptr<testing::TestTensor> load(const std::string& path) {
  auto a = exporter::read_npy(path);
  EXPECT_TRUE(a.ok()) << a.status();
  if (!a.ok()) return nullptr;
  auto t = std::make_unique<testing::TestTensor>(a->dtype, a->shape);
  EXPECT_EQ(a->data.size(), static_cast<size_t>(t->numel()) * element_size(a->dtype));
  if (!a->data.empty()) std::memcpy(t->tensor().data, a->data.data(), a->data.size());
  return t;
}

std::map<std::string, std::string> read_config(const std::string& path) {
  std::map<std::string, std::string> kv;
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return kv;
  char key[64], value[64];
  while (std::fscanf(f, "%63s %63s", key, value) == 2) kv[key] = value;
  std::fclose(f);
  return kv;
}

bool exists(const std::string& p) { return testing::file_exists(p); }

class PackedSequence : public ::testing::TestWithParam<const char*> {};

TEST_P(PackedSequence, KernelMatchesEagerOp) {
  const std::string dir = recurrent_dir() + "/packed/" + GetParam();
  auto cfg = read_config(dir + "/config.txt");
  ASSERT_EQ(cfg.size(), 4u) << "missing or malformed " << dir << "/config.txt";
  const std::string op = "aten::" + cfg["op"] + ".data";
  const bool lstm = cfg["op"] == "lstm";
  auto data = load(dir + "/data.npy");
  auto batch_sizes = load(dir + "/batch_sizes.npy");
  auto h0 = load(dir + "/h0.npy");
  std::unique_ptr<testing::TestTensor> c0 = lstm ? load(dir + "/c0.npy") : nullptr;
  ASSERT_TRUE(data && batch_sizes && h0 && (!lstm || c0));
  std::vector<std::unique_ptr<testing::TestTensor>> params;
  std::vector<testing::TestTensor*> param_ptrs;
  for (int k = 0; exists(dir + "/params_" + std::to_string(k) + ".npy"); ++k) {
    params.push_back(load(dir + "/params_" + std::to_string(k) + ".npy"));
    ASSERT_TRUE(params.back());
    param_ptrs.push_back(params.back().get());
  }
  std::vector<exporter::NpyArray> want = testing::read_npy_series(dir, "output_");
  ASSERT_EQ(want.size(), lstm ? 3u : 2u);
  std::vector<std::unique_ptr<testing::TestTensor>> outs;
  for (const auto& w : want) outs.push_back(std::make_unique<testing::TestTensor>(ScalarType::Float32, w.shape));

  testing::KernelRunner r;
  std::vector<EValue*> args = {r.tensor(*data), r.tensor(*batch_sizes),
                               lstm ? r.tensors({h0.get(), c0.get()}) : r.tensor(*h0), r.tensors(param_ptrs),
                               r.b(cfg["has_biases"] == "1"), r.i(std::atoi(cfg["num_layers"].c_str())), r.d(0.0),
                               r.b(false), r.b(cfg["bidirectional"] == "1")};
  for (auto& o : outs) args.push_back(r.tensor(*o));
  ASSERT_EQ(r.run(op.c_str(), args), Error::Ok) << r.message();
  for (size_t i = 0; i < want.size(); ++i) {
    exporter::NpyArray got;
    got.dtype = ScalarType::Float32;
    got.shape = outs[i]->sizes();
    const auto* p = reinterpret_cast<const uint8_t*>(outs[i]->f());
    got.data.assign(p, p + outs[i]->numel() * sizeof(float));
    const double err = testing::relative_l2(got, want[i]);
    std::printf("[packed] %s output %zu: relative L2 %.3g\n", GetParam(), i, err);
    EXPECT_LE(err, 1e-4) << op << " output " << i;
    EXPECT_TRUE(outs[i]->guard_ok());
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, PackedSequence,
                         ::testing::Values("gru_bidir_2layer", "rnn_tanh_bidir", "rnn_relu_no_bias", "lstm_proj_bidir"));

}  // namespace
}  // namespace ember
