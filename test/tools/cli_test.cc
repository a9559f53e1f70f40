// Command-line tests: `ember export / inspect / ops / run / bench / generate` output formats,
// files and exit codes, on real models from shared/ (skipped when absent).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "extension/module/tensor_ptr.h"
#include "test/exporter/shared_dir.h"
#include "tools/commands/program_file.h"

namespace ember {
namespace {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout + stderr
};

std::string ember_binary() {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* ws = getenv("TEST_WORKSPACE");
  return std::string(srcdir ? srcdir : ".") + "/" + (ws ? ws : "ember") + "/tools/ember";
}

std::string tmpdir() { return getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp"; }

CommandResult run(const std::string& args) {
  CommandResult r;
  std::string cmd = ember_binary() + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

double max_abs_diff(const TensorPtr& a, const TensorPtr& b) {
  if (a.numel() != b.numel()) return 1e30;
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    m = std::max(m, std::fabs(element_as_double(a.tensor(), i) - element_as_double(b.tensor(), i)));
  }
  return m;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    shared_ = testing::shared_dir();
    if (shared_.empty()) GTEST_SKIP() << "shared/ data not found";
    model_dir_ = shared_ + "/models/small_cnn";
    pte_ = tmpdir() + "/small_cnn.pte";
    CommandResult r = run("export " + model_dir_ + "/model.pt2 -o " + pte_);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  std::string shared_, model_dir_, pte_;
};

TEST_F(CliTest, ExportReportsWhatItWrote) {
  CommandResult r = run("export " + model_dir_ + "/model.pt2 -o " + tmpdir() + "/again.pte");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("wrote"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("memory plan"), std::string::npos) << r.output;
}

// Backends come from the exporter's registry by name; their options are NAME.KEY=VALUE, typed
// and checked by the backend, and the older --xnnpack-* flags set the same options.
TEST_F(CliTest, BackendOptionsAreCheckedByTheBackend) {
  const std::string model = model_dir_ + "/model.pt2", out = tmpdir() + "/opts.pte";
  CommandResult ok = run("export " + model + " -o " + out + " --backend xnnpack --backend-option xnnpack.threads=2");
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  CommandResult specs = run("inspect " + out);
  EXPECT_NE(specs.output.find("num_threads"), std::string::npos) << specs.output;
  CommandResult key = run("export " + model + " -o " + out + " --backend xnnpack --backend-option xnnpack.fp17=1");
  EXPECT_EQ(key.exit_code, 2);
  EXPECT_NE(key.output.find("it takes: threads, fp16, conv_block_bytes"), std::string::npos) << key.output;
  CommandResult value = run("export " + model + " -o " + out + " --backend xnnpack --backend-option xnnpack.threads=x");
  EXPECT_EQ(value.exit_code, 2);
  EXPECT_NE(value.output.find("expected an integer"), std::string::npos) << value.output;
  CommandResult unused = run("export " + model + " -o " + out + " --backend-option vulkan.fp16=1");
  EXPECT_EQ(unused.exit_code, 2);
  EXPECT_NE(unused.output.find("need --backend vulkan"), std::string::npos) << unused.output;
  CommandResult name = run("export " + model + " -o " + out + " --backend npu");
  EXPECT_EQ(name.exit_code, 2);
  EXPECT_NE(name.output.find("known: portable, qnn, vulkan, xnnpack"), std::string::npos) << name.output;
}

TEST_F(CliTest, InspectDescribesTheProgram) {
  CommandResult r = run("inspect " + pte_);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("method 'forward'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("input 0: float32[1, 3, 32, 32]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("aten::conv2d"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("arena 0"), std::string::npos) << r.output;
}

// Weights in a data file: export writes both files and says so, inspect names the data file,
// run, verify and bench take --data, and a run without it says what to pass.
TEST_F(CliTest, ExternalWeightsTravelInADataFile) {
  const std::string pte = tmpdir() + "/ext.pte", ptd = tmpdir() + "/ext.ptd", out = tmpdir() + "/ext_out";
  std::remove(ptd.c_str());
  CommandResult e = run("export " + model_dir_ + "/model.pt2 -o " + pte + " --external-weights " + ptd + " --bundle " +
                        model_dir_);
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_NE(e.output.find("wrote " + ptd + ": "), std::string::npos) << e.output;
  CommandResult i = run("inspect " + pte);
  EXPECT_NE(i.output.find("format version 2"), std::string::npos) << i.output;
  EXPECT_NE(i.output.find("weights in ext.ptd: 4 tensors"), std::string::npos) << i.output;
  CommandResult missing = run("run " + pte + " --input " + model_dir_ + "/input_0.npy");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("keeps its weights in a data file (ext.ptd"), std::string::npos) << missing.output;
  CommandResult r = run("run " + pte + " --data " + ptd + " --input " + model_dir_ + "/input_0.npy --output-dir " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto ours = read_npy(out + "/output_0.npy");
  auto ref = read_npy(model_dir_ + "/output_0.npy");
  ASSERT_TRUE(ours.ok()) << ours.error().to_string();
  EXPECT_LE(max_abs_diff(*ours, *ref), 1e-5);
  CommandResult v = run("verify " + pte + " --data " + ptd);
  EXPECT_EQ(v.exit_code, 0) << v.output;
  CommandResult b = run("bench " + pte + " --data " + ptd + " --iterations 2 --warmup 1");
  EXPECT_EQ(b.exit_code, 0) << b.output;
  CommandResult wrong = run("run " + pte + " --data " + pte + " --zeros");
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.output.find("is an Ember program (.pte), not a data file"), std::string::npos) << wrong.output;
}

TEST_F(CliTest, RunWritesOutputsMatchingPyTorch) {
  std::string out_dir = tmpdir() + "/run_out";
  CommandResult r = run("run " + pte_ + " --input " + model_dir_ + "/input_0.npy --output-dir " + out_dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("call 0 output 0: float32 1x10"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("top-5"), std::string::npos) << r.output;
  auto ours = read_npy(out_dir + "/output_0.npy");
  auto ref = read_npy(model_dir_ + "/output_0.npy");
  ASSERT_TRUE(ours.ok()) << ours.error().to_string();
  EXPECT_LE(max_abs_diff(*ours, *ref), 1e-5);
}

TEST_F(CliTest, RunWithoutInputsRefusesAndDescribesThem) {
  // Outputs of made-up inputs would look as real as any others: no silent default.
  CommandResult r = run("run " + pte_ + " --threads 2");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("ember run: method 'forward' takes 1 input and none was given:\n"
                          "  input 0: float32[1, 3, 32, 32]\n"),
            std::string::npos) << r.output;
  for (const char* hint : {"--input FILE.npy", "--zeros", "--random"}) {
    EXPECT_NE(r.output.find(hint), std::string::npos) << hint << " in\n" << r.output;
  }
  EXPECT_EQ(r.output.find("call 0 output"), std::string::npos) << r.output;

  // Also when only a later call (--then) lacks inputs: nothing runs.
  CommandResult later = run("run " + pte_ + " --input " + model_dir_ + "/input_0.npy --then");
  EXPECT_EQ(later.exit_code, 2) << later.output;
  EXPECT_NE(later.output.find("a call (--then) gives none"), std::string::npos) << later.output;
  EXPECT_EQ(later.output.find("call 0 output"), std::string::npos) << later.output;

  EXPECT_EQ(run("run " + pte_ + " --zeros --random").exit_code, 2);
}

TEST_F(CliTest, RunWithoutInputsNamesDynamicBounds) {
  std::string pte = tmpdir() + "/dynamic_mlp.pte";
  CommandResult e = run("export " + shared_ + "/models/dynamic_mlp/model.pt2 -o " + pte);
  ASSERT_EQ(e.exit_code, 0) << e.output;
  CommandResult r = run("run " + pte);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("  input 0: float32[<="), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(dynamic, up to these sizes)"), std::string::npos) << r.output;
}

TEST_F(CliTest, RunZerosRunsOnAllZeroInputs) {
  const std::string zeros_npy = tmpdir() + "/zeros.npy";
  ASSERT_TRUE(write_npy(zeros_npy, zeros({1, 3, 32, 32}).tensor()).ok());
  CommandResult given = run("run " + pte_ + " --input " + zeros_npy + " --output-dir " + tmpdir() + "/zeros_given");
  ASSERT_EQ(given.exit_code, 0) << given.output;
  CommandResult r = run("run " + pte_ + " --zeros --threads 2 --output-dir " + tmpdir() + "/zeros_flag");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("call 0 output 0: float32 1x10"), std::string::npos) << r.output;
  auto a = read_npy(tmpdir() + "/zeros_given/output_0.npy");
  auto b = read_npy(tmpdir() + "/zeros_flag/output_0.npy");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(max_abs_diff(*a, *b), 0.0);
}

TEST_F(CliTest, RunRandomIsSeededAndDeterministic) {
  std::string d1 = tmpdir() + "/random1", d2 = tmpdir() + "/random2", dz = tmpdir() + "/random_zeros";
  CommandResult r1 = run("run " + pte_ + " --random --then --output-dir " + d1);
  ASSERT_EQ(r1.exit_code, 0) << r1.output;
  CommandResult r2 = run("run " + pte_ + " --random --then --output-dir " + d2);
  ASSERT_EQ(r2.exit_code, 0) << r2.output;
  EXPECT_EQ(r1.output, r2.output);
  ASSERT_EQ(run("run " + pte_ + " --zeros --output-dir " + dz).exit_code, 0);
  auto a = read_npy(d1 + "/output_0.npy"), b = read_npy(d2 + "/output_0.npy");
  auto a1 = read_npy(d1 + "/call1_output_0.npy"), z = read_npy(dz + "/output_0.npy");
  ASSERT_TRUE(a.ok() && b.ok() && a1.ok() && z.ok());
  EXPECT_EQ(max_abs_diff(*a, *b), 0.0);   // same values every run
  EXPECT_GT(max_abs_diff(*a, *a1), 0.0);  // each call its own seed
  EXPECT_GT(max_abs_diff(*a, *z), 0.0);   // not zeros
}

TEST_F(CliTest, RunThenMakesSeveralCallsWithNumberedOutputs) {
  std::string out_dir = tmpdir() + "/then_out";
  std::string in = model_dir_ + "/input_0.npy";
  CommandResult r = run("run " + pte_ + " --input " + in + " --then --input " + in + " --output-dir " + out_dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto first = read_npy(out_dir + "/output_0.npy");
  auto second = read_npy(out_dir + "/call1_output_0.npy");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(max_abs_diff(*first, *second), 0.0);
}

TEST_F(CliTest, RunRejectsBadInputsWithOneLine) {
  // The reference output (shape 1x10) is not a valid image input.
  CommandResult r = run("run " + pte_ + " --input " + model_dir_ + "/output_0.npy");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("ember run: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank"), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;

  CommandResult missing = run("run " + pte_ + " --input /nonexistent.npy");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.output.find("cannot open /nonexistent.npy"), std::string::npos) << missing.output;

  CommandResult count = run("run " + pte_ + " --input " + model_dir_ + "/input_0.npy --input " +
                            model_dir_ + "/input_0.npy");
  EXPECT_NE(count.exit_code, 0);
  EXPECT_NE(count.output.find("takes 1 inputs"), std::string::npos) << count.output;
}

TEST_F(CliTest, BenchWritesStableJson) {
  std::string json_path = tmpdir() + "/bench.json";
  CommandResult r = run("bench " + pte_ + " --warmup 1 --iterations 5 --json " + json_path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("latency over 5 iterations"), std::string::npos) << r.output;
  std::ifstream in(json_path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  for (const char* key : {"model", "method", "threads", "warmup", "iterations", "load_ms", "init_ms",
                          "first_call_ms", "latency_ms", "peak_rss_kb", "planned_arena_bytes",
                          "method_allocator_bytes", "temp_bytes"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["iterations"], 5);
  const auto& lat = j["latency_ms"];
  for (const char* key : {"min", "median", "mean", "p90", "trimmed_mean", "max"}) {
    ASSERT_TRUE(lat.contains(key)) << key;
    EXPECT_GT(lat[key].get<double>(), 0.0);
  }
  EXPECT_LE(lat["min"].get<double>(), lat["median"].get<double>());
  EXPECT_LE(lat["median"].get<double>(), lat["max"].get<double>());
  EXPECT_GT(j["planned_arena_bytes"].get<double>(), 0);
}

TEST_F(CliTest, BenchReportsTokensPerSecondForKvCachePrograms) {
  std::string pte = tmpdir() + "/kv.pte";
  CommandResult e = run("export " + shared_ + "/models/tiny_llama_kv/model.pt2 -o " + pte);
  ASSERT_EQ(e.exit_code, 0) << e.output;
  std::string json_path = tmpdir() + "/kv.json";
  CommandResult r = run("bench " + pte + " --warmup 1 --iterations 3 --json " + json_path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(json_path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_GT(j["prefill_tokens"].get<int>(), 0);
  EXPECT_GT(j["prefill_tokens_per_s"].get<double>(), 0);
  EXPECT_GT(j["decode_tokens_per_s"].get<double>(), 0);
}

TEST_F(CliTest, GenerateStreamsTokensAndWritesJsonFromProgramMetadata) {
  std::string pte = tmpdir() + "/kv_meta.pte";
  CommandResult e = run("export " + shared_ + "/models/tiny_llama_kv/model.pt2 -o " + pte +
                        " --metadata max_seq_len=64 --metadata vocab_size=512");
  ASSERT_EQ(e.exit_code, 0) << e.output;
  CommandResult i = run("inspect " + pte);
  EXPECT_NE(i.output.find("metadata: 2 entries\n  max_seq_len = 64\n  vocab_size = 512"), std::string::npos) << i.output;
  std::string json_path = tmpdir() + "/gen.json";
  CommandResult r = run("generate " + pte + " --prompt-tokens 489,258,282,434 --max-new-tokens 5 --json " + json_path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("4 prompt tokens, 5 generated (stop: max_new_tokens)"), std::string::npos) << r.output;
  std::ifstream in(json_path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  ASSERT_EQ(j["generated_tokens"].size(), 5u);
  EXPECT_EQ(j["prompt_tokens"].get<int>(), 4);
  EXPECT_EQ(j["max_seq_len"].get<int>(), 64);
  for (const char* key : {"load_ms", "ttft_ms", "prefill_tokens_per_s", "decode_tokens_per_s", "peak_rss_bytes"}) {
    EXPECT_GT(j[key].get<double>(), 0) << key;
  }
  // The streamed ids are the JSON's, and their line ends before the statistics (stderr),
  // even with stdout a pipe.
  std::string streamed;
  for (const auto& t : j["generated_tokens"]) streamed += std::to_string(t.get<int>()) + " ";
  EXPECT_NE(r.output.find(streamed + "\nember generate: 4 prompt tokens"), std::string::npos) << r.output;
  CommandResult quiet = run("generate " + pte + " --prompt-tokens 489,258,282,434 --max-new-tokens 5 --quiet");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.output;
  EXPECT_EQ(quiet.output.rfind("ember generate: 4 prompt tokens", 0), 0u) << quiet.output;  // no empty line

  EXPECT_EQ(run("generate " + pte + " --prompt hello").exit_code, 2);  // no tokenizer
  EXPECT_EQ(run("generate " + pte + " --prompt-tokens 1,2 --top-p 3").exit_code, 2);
  CommandResult too_long = run("generate " + pte + " --prompt-tokens 1,2,3 --max-seq-len 2");
  EXPECT_EQ(too_long.exit_code, 1);
  EXPECT_NE(too_long.output.find("max_seq_len 2"), std::string::npos) << too_long.output;
  CommandResult dup = run("export " + shared_ + "/models/tiny_llama_kv/model.pt2 -o " + pte + " --metadata a=1 --metadata a=2");
  EXPECT_EQ(dup.exit_code, 2);
  EXPECT_NE(dup.output.find("metadata key 'a' is given twice"), std::string::npos) << dup.output;
  EXPECT_EQ(run("export " + shared_ + "/models/tiny_llama_kv/model.pt2 -o " + pte + " --metadata novalue").exit_code, 2);
}

// The operator table of each method of a program, read from the file itself:
// "<ns>::<op>.<overload>" -> kernel calls, and backend id -> delegate calls.
struct ProgramTables {
  std::map<std::string, size_t> op_calls;
  std::map<std::string, size_t> delegate_calls;
};
ProgramTables tables_of(const std::string& path) {
  ProgramTables t;
  tools::ProgramFile file;
  EXPECT_EQ(tools::read_program_file(path.c_str(), &file), "");
  if (file.program == nullptr) return t;
  for (const schema::Method* m : *file.program->methods()) {
    for (uint32_t i = 0; m->operators() && i < m->operators()->size(); ++i) {
      const schema::Operator* op = m->operators()->Get(i);
      std::string key = op->name()->str() + "." + (op->overload() && op->overload()->size() ? op->overload()->str() : "default");
      t.op_calls[key] += 0;
      for (const schema::Instruction* ins : *m->instructions()) {
        if (ins->kind_type() == schema::InstructionKind::KernelCall && ins->kind_as_KernelCall()->op_index() == i) {
          t.op_calls[key]++;
        }
      }
    }
    for (uint32_t i = 0; m->delegates() && i < m->delegates()->size(); ++i) {
      std::string id = m->delegates()->Get(i)->backend_id()->str();
      t.delegate_calls[id] += 0;
      for (const schema::Instruction* ins : *m->instructions()) {
        if (ins->kind_type() == schema::InstructionKind::DelegateCall && ins->kind_as_DelegateCall()->delegate_index() == i) {
          t.delegate_calls[id]++;
        }
      }
    }
  }
  return t;
}

TEST_F(CliTest, OpsListsEveryOperatorWithItsCallCount) {
  const ProgramTables t = tables_of(pte_);
  ASSERT_FALSE(t.op_calls.empty());
  CommandResult r = run("ops " + pte_);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("method 'forward': " + std::to_string(t.op_calls.size()) + " operators, 0 delegates"),
            std::string::npos) << r.output;
  for (const auto& op : t.op_calls) {
    char line[256];
    std::snprintf(line, sizeof(line), "\n    %5zu x %s\n", op.second, op.first.c_str());
    EXPECT_NE(r.output.find(line), std::string::npos) << line << " in\n" << r.output;
  }
}

TEST_F(CliTest, OpsListFormatIsTheSortedUnionWithDelegatesAsComments) {
  // MobileNetV2 through XNNPACK: one delegate call, no portable operators left.
  std::string xnn = tmpdir() + "/mobilenet_v2_xnnpack.pte";
  CommandResult e = run("export " + shared_ + "/models/mobilenet_v2/model.pt2 -o " + xnn + " --backend xnnpack");
  ASSERT_EQ(e.exit_code, 0) << e.output;
  const ProgramTables cnn = tables_of(pte_), mv2 = tables_of(xnn);
  ASSERT_EQ(mv2.delegate_calls.count("xnnpack"), 1u);

  CommandResult text = run("ops " + pte_ + " " + xnn);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("        1 x delegate xnnpack\n"), std::string::npos) << text.output;

  CommandResult r = run("ops --format=list " + pte_ + " " + xnn);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> ops, comments;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) (line[0] == '#' ? comments : ops).push_back(line);
  std::vector<std::string> expected;  // std::map iterates sorted
  for (const auto& op : cnn.op_calls) expected.push_back(op.first);
  for (const auto& op : mv2.op_calls) {
    if (!cnn.op_calls.count(op.first)) expected.push_back(op.first);
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(ops, expected) << r.output;
  ASSERT_FALSE(comments.empty());
  EXPECT_EQ(comments[0], "# operators of small_cnn.pte, mobilenet_v2_xnnpack.pte") << r.output;
  EXPECT_NE(std::find(comments.begin(), comments.end(), "# delegate: xnnpack (link its backend)"), comments.end())
      << r.output;

  CommandResult missing = run("ops --format=list /nonexistent.pte");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("ember ops: cannot open /nonexistent.pte"), std::string::npos) << missing.output;
  EXPECT_EQ(run("ops").exit_code, 2);
}

TEST(CliErrors, BadArchivesAndCommands) {
  std::string garbage = tmpdir() + "/garbage.pt2";
  std::ofstream(garbage) << "definitely not a zip archive";
  CommandResult r = run("export " + garbage + " -o " + tmpdir() + "/x.pte");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("ember export"), std::string::npos) << r.output;

  CommandResult unknown = run("frobnicate");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.output.find("unknown command"), std::string::npos) << unknown.output;

  CommandResult inspect = run("inspect " + garbage);
  EXPECT_NE(inspect.exit_code, 0);
}

}  // namespace
}  // namespace ember
