#include <cstring>

#include "exporter/exporter.h"
#include "exporter/import/pt2_importer.h"
#include "gtest/gtest.h"
#include "runtime/program/file_header.h"
#include "schema/program_generated.h"
#include "test/exporter/pte_runner.h"
#include "test/exporter/shared_dir.h"

namespace ember {
namespace exporter {
namespace {

namespace sc = ::ember::schema;

absl::StatusOr<ExportResult> export_model(const std::string& name) {
  ExportOptions o;
  o.check_kernels = false;  // structure only: kernels are checked in shared_models_test
  return export_pt2_file(testing::shared_dir() + "/models/" + name + "/model.pt2", o);
}

const sc::Program* program_of(const std::vector<uint8_t>& pte, std::vector<uint64_t>* mem) {
  FileHeader h;
  if (!parse_file_header(pte.data(), &h)) return nullptr;
  mem->assign(h.flatbuffer_size / 8 + 1, 0);
  std::memcpy(mem->data(), pte.data() + h.flatbuffer_offset, h.flatbuffer_size);
  return sc::GetProgram(mem->data());
}

TEST(Emit, SmallCnnHeaderSegmentsAndFullVerification) {
  if (testing::shared_dir().empty()) GTEST_SKIP() << "shared/ data not found";
  auto r = export_model("small_cnn");
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<uint8_t>& pte = r->pte;
  FileHeader h;
  ASSERT_TRUE(parse_file_header(pte.data(), &h));
  EXPECT_EQ(h.format_version, kFormatVersionInline);  // no data file: readable by every runtime
  EXPECT_EQ(h.header_size, 64u);
  EXPECT_EQ(h.flatbuffer_offset, 64u);
  EXPECT_EQ(h.segment_area_offset % 64, 0u);
  EXPECT_GE(h.segment_area_offset, 64 + h.flatbuffer_size);
  EXPECT_EQ(h.segment_area_offset + h.segment_area_size, pte.size());
  // The runtime's full verifier accepts it.
  std::vector<uint64_t> mem;
  const sc::Program* p = program_of(pte, &mem);
  ASSERT_NE(p, nullptr);
  for (uint32_t i = 0; i < p->segments()->size(); ++i) EXPECT_EQ(p->segments()->Get(i)->offset() % 64, 0u);
  Diagnostic diag;
  std::vector<uint64_t> copy(pte.size() / 8 + 8);
  std::memcpy(copy.data(), pte.data(), pte.size());
  BufferDataLoader aligned(copy.data(), pte.size());
  Result<Program> prog = Program::load(&aligned, Program::Verification::Full, &diag);
  ASSERT_TRUE(prog.ok()) << diag.message;
  Result<MethodMeta> meta = prog->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  ASSERT_EQ(meta->num_inputs(), 1u);
  EXPECT_EQ(meta->arena_size(0).get(), r->plan.arena_size);
  Result<TensorInfo> in = meta->input_tensor_info(0);
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(std::vector<int64_t>(in->max_sizes.begin(), in->max_sizes.end()), (std::vector<int64_t>{1, 3, 32, 32}));
  const sc::Method* m = p->methods()->Get(0);
  // Conv+BN folded: no batch_norm operator remains; conv2d args: 7 schema args + 1 output.
  for (uint32_t i = 0; i < m->operators()->size(); ++i) {
    EXPECT_STRNE(m->operators()->Get(i)->name()->c_str(), "aten::batch_norm");
  }
  bool saw_conv = false;
  for (uint32_t i = 0; i < m->instructions()->size(); ++i) {
    const auto* call = m->instructions()->Get(i)->kind_as_KernelCall();
    ASSERT_NE(call, nullptr);
    // Compared as std::string: GCC 12 -O1 (asan config) misreports strcmp on FlatBuffers strings.
    if (m->operators()->Get(call->op_index())->name()->str() == "aten::conv2d") {
      EXPECT_EQ(call->args()->size(), 8u);
      saw_conv = true;
    }
  }
  EXPECT_TRUE(saw_conv);
}

TEST(Emit, TinyLlamaKvStateDynamicShapesAndSymbolicLists) {
  if (testing::shared_dir().empty()) GTEST_SKIP() << "shared/ data not found";
  auto r = export_model("tiny_llama_kv");
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<uint64_t> mem;
  const sc::Program* p = program_of(r->pte, &mem);
  const sc::Method* m = p->methods()->Get(0);
  int state = 0, dynamic = 0, sym_lists = 0;
  for (uint32_t i = 0; i < m->values()->size(); ++i) {
    const sc::Value* v = m->values()->Get(i);
    if (const sc::Tensor* t = v->value_as_Tensor()) {
      state += t->location() == sc::DataLocation::MutableState;
      dynamic += t->dynamism() == sc::ShapeDynamism::DynamicBounded;
    }
    if (const sc::IntList* l = v->value_as_IntList()) {
      if (l->value_refs() == nullptr) continue;
      ++sym_lists;
      for (uint32_t k = 0; k < l->value_refs()->size(); ++k) {
        int32_t ref = l->value_refs()->Get(k);
        if (ref >= 0) {
          EXPECT_EQ(m->values()->Get(ref)->value_type(), sc::ValueKind::Int);
        }
      }
    }
  }
  EXPECT_EQ(state, 4);  // k/v caches of 2 layers
  EXPECT_GT(dynamic, 10);
  EXPECT_GT(sym_lists, 0);
  const sc::Tensor* out = m->values()->Get(m->outputs()->Get(0))->value_as_Tensor();
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->location(), sc::DataLocation::Arena);
  EXPECT_EQ(out->dynamism(), sc::ShapeDynamism::DynamicBounded);
  EXPECT_EQ(out->sizes()->Get(1), 64);  // sequence upper bound
  const sc::Tensor* in0 = m->values()->Get(m->inputs()->Get(0))->value_as_Tensor();
  EXPECT_EQ(in0->location(), sc::DataLocation::CallerInput);
}

TEST(Emit, OutputThatIsAnInputGetsACopy) {
  Graph g;
  Value x;
  x.name = "x";
  x.sizes = {2};
  x.dynamic_dims = {false};
  x.role = ValueRole::UserInput;
  int id = g.add_value(x);
  g.inputs = {id};
  g.outputs = {GraphOutput{id}};
  ExportOptions o;
  o.check_kernels = false;
  auto r = export_graph(g, o);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<uint64_t> mem;
  const sc::Method* m = program_of(r->pte, &mem)->methods()->Get(0);
  ASSERT_EQ(m->instructions()->size(), 1u);
  EXPECT_STREQ(m->operators()->Get(0)->name()->c_str(), "aten::clone");
  EXPECT_NE(m->outputs()->Get(0), m->inputs()->Get(0));
  EXPECT_EQ(m->values()->Get(m->outputs()->Get(0))->value_as_Tensor()->location(), sc::DataLocation::Arena);
}

// The PyTorch version in model.json is read; a .pt2 from a newer PyTorch than the generated
// schema table exports with a warning that says what to regenerate.
TEST(Emit, WarnsOnAPt2FromANewerPyTorch) {
  if (testing::shared_dir().empty()) GTEST_SKIP() << "shared/ data not found";
  auto g = import_pt2(testing::shared_dir() + "/models/small_cnn/model.pt2");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_FALSE(g->torch_version.empty());
  ExportOptions o;
  o.check_kernels = false;  // no kernels linked here
  auto same = export_graph(*g, o);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_TRUE(same->warnings.empty());
  g->torch_version = "99.1.0+cpu";
  auto newer = export_graph(*g, o);
  ASSERT_TRUE(newer.ok()) << newer.status();
  ASSERT_EQ(newer->warnings.size(), 1u);
  EXPECT_NE(newer->warnings[0].find("99.1.0+cpu"), std::string::npos) << newer->warnings[0];
  EXPECT_NE(newer->warnings[0].find("dump_aten_schemas.py"), std::string::npos) << newer->warnings[0];
  EXPECT_EQ(newer->pte, same->pte);  // the program itself is the same
}

}  // namespace
}  // namespace exporter
}  // namespace ember

namespace ember {
namespace exporter {
namespace {

// Every shared model exports (kernel check off) to a program the runtime's full verifier
// accepts; prints the memory plan against its lower bound.
TEST(Emit, EveryModelVerifiesAndPlansNearTheLowerBound) {
  std::string shared = testing::shared_dir();
  if (shared.empty()) GTEST_SKIP() << "shared/ data not found";
  for (const char* name : {"bert_tiny", "dynamic_mlp", "efficientnet_b0", "gpt2_tiny", "keyword_lstm", "mobilenet_v2",
                           "mobilenet_v3_small", "resnet18", "small_cnn", "squeezenet1_1", "tiny_llama",
                           "tiny_llama_kv", "vit_tiny"}) {
    auto r = export_model(name);
    ASSERT_TRUE(r.ok()) << name << ": " << r.status();
    std::vector<uint64_t> copy(r->pte.size() / 8 + 8);
    std::memcpy(copy.data(), r->pte.data(), r->pte.size());
    BufferDataLoader loader(copy.data(), r->pte.size());
    Diagnostic diag;
    Result<Program> prog = Program::load(&loader, Program::Verification::Full, &diag);
    EXPECT_TRUE(prog.ok()) << name << ": " << diag.message;
    EXPECT_GE(r->plan.arena_size, r->plan.lower_bound) << name;
    std::printf("[plan] %-18s nodes %4zu -> %4zu instr, arena %9zu B = shared %9zu + inputs/state %8zu; "
                "lower bound %9zu (%.3fx); greedy %zu, %d search steps\n",
                name, r->num_nodes_imported, r->stats.num_instructions, r->plan.arena_size, r->plan.shared_size,
                r->plan.fixed_size, r->plan.lower_bound,
                static_cast<double>(r->plan.arena_size) / static_cast<double>(r->plan.lower_bound),
                r->plan.greedy_size, r->plan.search_steps);
  }
}

}  // namespace
}  // namespace exporter
}  // namespace ember
