#include <dirent.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "exporter/ops/op_schemas.h"
#include "gtest/gtest.h"
#include "runtime/kernel/kernel_registry.h"
#include "test/exporter/shared_dir.h"

namespace ember {
namespace exporter {
namespace {

TEST(OpSchemas, EveryEntryParses) {
  for (const std::vector<const char*>* strings : {&op_schema_strings(), &generated_aten_schema_strings()}) {
    std::set<std::string> names;
    for (const char* s : *strings) {
      auto p = parse_op_schema(s);
      ASSERT_TRUE(p.ok()) << s << ": " << p.status();
      EXPECT_TRUE(names.insert(p->full_name()).second) << "duplicate " << p->full_name();
    }
  }
  // Every aten:: overload of PyTorch (functional, in-place, out=, backward).
  EXPECT_GE(generated_aten_schema_strings().size(), 3000u);
  EXPECT_EQ(all_op_schemas().size(), generated_aten_schema_strings().size() + op_schema_strings().size());
  EXPECT_STRNE(aten_schemas_torch_version(), "");
}

TEST(OpSchemas, TorchReleaseComparison) {
  EXPECT_TRUE(newer_torch_release("2.16.0", "2.15.0"));
  EXPECT_TRUE(newer_torch_release("2.15.1+cu132", "2.15.0"));
  EXPECT_TRUE(newer_torch_release("3.0.0.dev20270101", "2.15.0"));
  EXPECT_TRUE(newer_torch_release("2.16", "2.15.0"));
  EXPECT_FALSE(newer_torch_release("2.15.0+cu132", "2.15.0"));
  EXPECT_FALSE(newer_torch_release("2.11.0+cu130", "2.15.0"));
  EXPECT_FALSE(newer_torch_release("2.9.10", "2.15.0"));
  EXPECT_FALSE(newer_torch_release("", "2.15.0"));
  EXPECT_FALSE(newer_torch_release("garbage", "2.15.0"));
  EXPECT_FALSE(newer_torch_release("99999999999999999999.0", "2.15.0"));
}

// One source of truth: the hand-written table holds only what the generated one lacks.
TEST(OpSchemas, HandTableDoesNotDuplicatePyTorch) {
  std::set<std::string> generated;
  for (const char* g : generated_aten_schema_strings()) generated.insert(parse_op_schema(g)->full_name());
  for (const char* h : op_schema_strings()) {
    auto p = parse_op_schema(h);
    ASSERT_TRUE(p.ok()) << h;
    EXPECT_EQ(generated.count(p->full_name()), 0u)
        << h << ": PyTorch's registry has this op (exporter/ops/aten_schemas.txt); delete the hand entry";
  }
}

// Overloads the hand-written table never had, now known from PyTorch's registry (each once
// failed an export with "no ATen schema known to the exporter").
TEST(OpSchemas, GeneratedTableHasTheOverloadsUsersHit) {
  for (const char* full : {"aten::scatter_reduce.two", "aten::scatter.reduce", "aten::scatter.value_reduce",
                           "aten::split.sizes", "aten::nll_loss_nd.default", "aten::max_pool1d.default",
                           "aten::avg_pool1d.default", "aten::linspace.Tensor_Tensor", "aten::index_fill.int_Tensor",
                           "aten::var_mean.correction", "aten::histc.default", "aten::median.dim",
                           "aten::nanmedian.default", "aten::std_mean.correction", "aten::full_like.default"}) {
    std::string name(full);
    const size_t dot = name.rfind('.');
    const OpSchema* s = find_op_schema(name.substr(0, dot), name.substr(dot + 1));
    ASSERT_NE(s, nullptr) << full;
    EXPECT_EQ(s->full_name(), name);
  }
  const OpSchema* reduce = find_op_schema("aten::scatter", "reduce");
  ASSERT_NE(reduce, nullptr);
  ASSERT_EQ(reduce->args.size(), 5u);
  EXPECT_EQ(reduce->args[4].name, "reduce");
  EXPECT_EQ(reduce->args[4].base, "str");
  EXPECT_TRUE(reduce->args[4].kwarg_only);
}

// The exporter orders arguments and fills defaults from the schema table, so a portable
// kernel whose ATen op has no schema entry can never be used (the kernel check reports it as
// missing): `aten::type_as` (RoBERTa, DeBERTa-v2 and Gemma from transformers) and
// `aten::to.other` had kernels but no schema and failed to export. In-place variants are
// fine when their functional op has a schema (canonicalisation rewrites them to it). With the
// generated table every aten:: kernel has PyTorch's own schema, except the few below.
TEST(OpSchemas, EveryRegisteredAtenKernelHasASchema) {
  // Kernels for ops PyTorch's dispatcher does not register under aten:: (TorchScript and
  // export builtins that torch.export may still record).
  static const std::set<std::string> kKnownWithoutSchema = {
      "aten::_to_dim_order_copy.default",  // ExecuTorch's dim_order_ops, kept for its programs
  };
  std::string missing;
  for (size_t i = 0; i < num_registered_kernels(); ++i) {
    std::string name = registered_kernel(i).name;
    if (name.rfind("aten::", 0) != 0 || kKnownWithoutSchema.count(name)) continue;
    size_t dot = name.rfind('.');
    ASSERT_NE(dot, std::string::npos) << name;
    std::string op = name.substr(0, dot), overload = name.substr(dot + 1);
    if (find_op_schema(op, overload) != nullptr) continue;
    const bool inplace = op.back() == '_' && op.compare(op.size() - 2, 2, "__") != 0;
    if (inplace && find_op_schema(op.substr(0, op.size() - 1), overload) != nullptr) continue;
    missing += " " + name;
  }
  EXPECT_EQ(missing, "") << "registered kernels without an ATen schema entry";
  EXPECT_NE(find_op_schema("aten::type_as", "default"), nullptr);
  EXPECT_NE(find_op_schema("aten::to", "other"), nullptr);
}

TEST(OpSchemas, ParsesDefaultsKwargsAndTypes) {
  const OpSchema* add = find_op_schema("aten::add", "Tensor");
  ASSERT_NE(add, nullptr);
  ASSERT_EQ(add->args.size(), 3u);
  EXPECT_TRUE(add->args[2].kwarg_only);
  EXPECT_EQ(add->args[2].default_value.kind, Arg::Kind::Int);
  EXPECT_EQ(add->args[2].default_value.i, 1);
  const OpSchema* conv = find_op_schema("aten::conv2d", "default");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->args[3].default_value.ints, (std::vector<int64_t>{1, 1}));  // SymInt[2] stride=1
  EXPECT_EQ(conv->args[4].default_value.ints, (std::vector<int64_t>{0, 0}));
  EXPECT_TRUE(conv->args[2].optional);
  const OpSchema* ln = find_op_schema("aten::native_layer_norm", "default");
  ASSERT_NE(ln, nullptr);
  EXPECT_EQ(ln->returns.size(), 3u);
  const OpSchema* split = find_op_schema("aten::split", "Tensor");
  ASSERT_NE(split, nullptr);
  EXPECT_EQ(split->returns[0].type, "Tensor[]");
  const OpSchema* gelu = find_op_schema("aten::gelu", "default");
  EXPECT_EQ(gelu->args[1].default_value.s, "none");
  const OpSchema* ln2 = find_op_schema("aten::layer_norm", "default");
  EXPECT_EQ(ln2->args[4].default_value.kind, Arg::Kind::Double);
  EXPECT_DOUBLE_EQ(ln2->args[4].default_value.d, 1e-5);
  const OpSchema* mse = find_op_schema("aten::mse_loss", "default");
  EXPECT_EQ(mse->args[2].default_value.i, 1);  // reduction=Mean
  const OpSchema* idx = find_op_schema("aten::index", "Tensor");
  EXPECT_TRUE(idx->args[1].optional && idx->args[1].is_list);  // Tensor?[]
  EXPECT_NE(find_op_schema("_operator::mul", "default"), nullptr);
  EXPECT_NE(find_op_schema("aten::sym_size", "int"), nullptr);
  EXPECT_FALSE(parse_op_schema("broken(Tensor self").ok());
  EXPECT_FALSE(parse_op_schema("broken(Tensor self, int x=[a]) -> Tensor").ok());
}

std::string strip_target(std::string t) {  // "aten.add.Tensor" -> "aten::add.Tensor"
  if (t.rfind("aten.", 0) == 0) return "aten::" + t.substr(5);
  return t;
}

bool known(const std::string& target) {
  if (target.find("getitem") != std::string::npos) return true;  // resolved at import
  std::string t = strip_target(target);
  if (t.rfind("_operator.", 0) == 0) return find_op_schema("_operator::" + t.substr(10), "default") != nullptr;
  size_t dot = t.rfind('.');
  return find_op_schema(t.substr(0, dot), t.substr(dot + 1)) != nullptr;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) if (e->d_name[0] != '.') out.push_back(e->d_name);
  closedir(d);
  return out;
}

TEST(OpSchemas, CoverEveryOpOfTheSharedModels) {
  std::string shared = testing::shared_dir();
  if (shared.empty()) GTEST_SKIP() << "shared/ data not found";
  int checked = 0;
  for (const std::string& m : list_dir(shared + "/models")) {
    std::ifstream f(shared + "/models/" + m + "/meta.json");
    auto j = nlohmann::json::parse(f, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << m;
    for (const char* key : {"ops", "core_aten_ops"}) {
      for (const auto& op : j[key]) {
        EXPECT_TRUE(known(op.get<std::string>())) << m << ": " << op.get<std::string>();
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(OpSchemas, CoverMostOpcaseOps) {
  std::string shared = testing::shared_dir();
  if (shared.empty()) GTEST_SKIP() << "shared/ data not found";
  std::set<std::string> all, missing;
  for (const std::string& c : list_dir(shared + "/opcases")) {
    std::ifstream f(shared + "/opcases/" + c + "/case.json");
    auto j = nlohmann::json::parse(f, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!it.value().is_array() || it.key().find("ops") == std::string::npos) continue;
      for (const auto& op : it.value()) {
        if (!op.is_string()) continue;
        all.insert(op.get<std::string>());
        if (!known(op.get<std::string>())) missing.insert(op.get<std::string>());
      }
    }
  }
  std::string list;
  for (const auto& m : missing) list += m + " ";
  EXPECT_GT(all.size(), 200u);
  // At least 97% of the distinct ops of both graphs have a schema.
  EXPECT_LE(missing.size() * 100, all.size() * 3) << "missing: " << list;
  std::printf("opcase ops with a schema: %zu of %zu; missing: %s\n", all.size() - missing.size(), all.size(), list.c_str());
}

}  // namespace
}  // namespace exporter
}  // namespace ember
