#include <zip.h>

#include <cstdio>
#include <fstream>

#include "exporter/import/pt2_importer.h"
#include "exporter/import/sym_expr.h"
#include "gtest/gtest.h"
#include "test/exporter/shared_dir.h"

namespace ember {
namespace exporter {
namespace {

std::string tmp(const std::string& name) {
  const char* d = getenv("TEST_TMPDIR");
  return std::string(d ? d : "/tmp") + "/" + name;
}

// Writes a zip with the given (name, content) entries.
void write_zip(const std::string& path, const std::vector<std::pair<std::string, std::string>>& entries) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  ASSERT_NE(z, nullptr);
  for (const auto& [name, content] : entries) {
    char* copy = static_cast<char*>(malloc(content.size() + 1));
    memcpy(copy, content.data(), content.size());
    zip_source_t* src = zip_source_buffer(z, copy, content.size(), 1);
    ASSERT_GE(zip_file_add(z, name.c_str(), src, ZIP_FL_OVERWRITE), 0);
  }
  ASSERT_EQ(zip_close(z), 0);
}

TEST(SymExpr, EvaluatesUpperBounds) {
  std::map<std::string, int64_t> s = {{"s27", 64}, {"s0", 10}};
  EXPECT_EQ(*evaluate_sym_expr("Symbol('s27', positive=True, integer=True)", s), 64);
  EXPECT_EQ(*evaluate_sym_expr("s27", s), 64);
  EXPECT_EQ(*evaluate_sym_expr("2*s27", s), 128);
  EXPECT_EQ(*evaluate_sym_expr("s27 + 8", s), 72);
  EXPECT_EQ(*evaluate_sym_expr("s27 - 1", s), 63);
  EXPECT_EQ(*evaluate_sym_expr("(s0//3)", s), 3);
  EXPECT_EQ(*evaluate_sym_expr("FloorDiv(s0, 4) + Max(1, s0)", s), 12);
  EXPECT_EQ(*evaluate_sym_expr("s0**2 % 7", s), 2);
  EXPECT_FALSE(evaluate_sym_expr("s99 + 1", s).ok());
  EXPECT_FALSE(evaluate_sym_expr("s0 +", s).ok());
  EXPECT_FALSE(evaluate_sym_expr("s0 / 0", s).ok());
}

TEST(Importer, LastStackFrame) {
  EXPECT_EQ(last_stack_frame("File \"a.py\", line 1, in f\n    x = 1\n  File \"b.py\", line 2, in g\n    return y"),
            "File \"b.py\", line 2, in g: return y");
  EXPECT_EQ(last_stack_frame(""), "");
  // The user's line, not PyTorch's layer implementation under it.
  const std::string torch_frames =
      "File \"/w/model.py\", line 7, in forward\n    return self.conv(x)\n"
      "  File \"/v/lib/python3.12/site-packages/torch/nn/modules/conv.py\", line 553, in forward\n"
      "    return self._conv_forward(input, self.weight, self.bias)";
  EXPECT_EQ(last_stack_frame(torch_frames), "File \"/w/model.py\", line 7, in forward: return self.conv(x)");
  // Only PyTorch frames: the last one.
  EXPECT_EQ(last_stack_frame("File \"/v/site-packages/torch/a.py\", line 1, in f\n    x = 1"),
            "File \"/v/site-packages/torch/a.py\", line 1, in f: x = 1");
}

TEST(Importer, DtypeCodes) {
  EXPECT_EQ(*scalar_type_from_pt2(7), ScalarType::Float32);
  EXPECT_EQ(*scalar_type_from_pt2(5), ScalarType::Int64);
  EXPECT_EQ(*scalar_type_from_pt2(12), ScalarType::Bool);
  EXPECT_EQ(*scalar_type_from_pt2(13), ScalarType::BFloat16);
  EXPECT_EQ(*scalar_type_from_pt2(1), ScalarType::UInt8);
  EXPECT_FALSE(scalar_type_from_pt2(10).ok());  // complex
  EXPECT_FALSE(scalar_type_from_pt2(99).ok());
}

TEST(Importer, SmallCnn) {
  std::string shared = testing::shared_dir();
  if (shared.empty()) GTEST_SKIP() << "shared/ data not found";
  auto g = import_pt2(shared + "/models/small_cnn/model.pt2");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->inputs.size(), 1u);
  const Value& x = g->values[g->inputs[0]];
  EXPECT_EQ(x.sizes, (std::vector<int64_t>{1, 3, 32, 32}));
  EXPECT_EQ(x.role, ValueRole::UserInput);
  ASSERT_EQ(g->outputs.size(), 1u);
  size_t params = 0;
  for (const Constant& c : g->constants) params += c.data.size() / element_size(c.dtype);
  EXPECT_GE(params, 20730u);  // meta.json params (+ BN running stats)
  int convs = 0;
  for (const Node& n : g->nodes) {
    if (n.op == "aten::conv2d") {
      ++convs;
      ASSERT_NE(n.schema, nullptr);
      ASSERT_EQ(n.args.size(), 7u);  // defaults filled
      EXPECT_EQ(n.args[3].kind, Arg::Kind::Ints);
      EXPECT_EQ(n.args[6].kind, Arg::Kind::Int);  // groups
      EXPECT_FALSE(n.source.empty());
    }
  }
  EXPECT_GE(convs, 1);
}

TEST(Importer, DynamicShapesAndStateOfTinyLlamaKv) {
  std::string shared = testing::shared_dir();
  if (shared.empty()) GTEST_SKIP() << "shared/ data not found";
  auto g = import_pt2(shared + "/models/tiny_llama_kv/model.pt2");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->inputs.size(), 2u);
  const Value& tokens = g->values[g->inputs[0]];
  EXPECT_EQ(tokens.sizes, (std::vector<int64_t>{1, 64}));
  EXPECT_EQ(tokens.dynamic_dims, (std::vector<bool>{false, true}));
  int sym = g->find("sym_size_int_1");
  ASSERT_GE(sym, 0);
  EXPECT_EQ(g->values[sym].type, ValueType::SymInt);
  EXPECT_EQ(g->values[sym].sym_upper, 64);
  int cos = g->find("b_cos");  // non-persistent buffer: from data/constants
  ASSERT_GE(cos, 0);
  EXPECT_EQ(g->values[cos].role, ValueRole::Constant);
  EXPECT_EQ(g->constants[g->values[cos].constant].sizes, (std::vector<int64_t>{64, 32}));
  bool view_with_sym = false;
  for (const Node& n : g->nodes) {
    if (n.op == "aten::view" && n.args[1].kind == Arg::Kind::SymInts) view_with_sym = true;
  }
  EXPECT_TRUE(view_with_sym);
}

TEST(Importer, MalformedArchivesGiveOneClearError) {
  auto missing = import_pt2("/nonexistent/model.pt2");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(std::string(missing.status().message()).find("cannot open"), std::string::npos);

  std::string garbage = tmp("garbage.pt2");
  std::ofstream(garbage) << "this is not a zip";
  auto g1 = import_pt2(garbage);
  ASSERT_FALSE(g1.ok());
  EXPECT_NE(std::string(g1.status().message()).find("zip"), std::string::npos);

  std::string no_model = tmp("no_model.pt2");
  write_zip(no_model, {{"m/archive_format", "pt2"}});
  auto g2 = import_pt2(no_model);
  ASSERT_FALSE(g2.ok());
  EXPECT_NE(std::string(g2.status().message()).find("models/model.json"), std::string::npos);

  std::string bad_json = tmp("bad_json.pt2");
  write_zip(bad_json, {{"m/models/model.json", "{not json"}});
  auto g3 = import_pt2(bad_json);
  ASSERT_FALSE(g3.ok());
  EXPECT_NE(std::string(g3.status().message()).find("not valid JSON"), std::string::npos);

  std::string old = tmp("old.pt2");
  write_zip(old, {{"m/models/model.json", R"({"schema_version": {"major": 7, "minor": 1}})"}});
  auto g4 = import_pt2(old);
  ASSERT_FALSE(g4.ok());
  EXPECT_NE(std::string(g4.status().message()).find("schema version 7.1"), std::string::npos);

  std::string wrong_types = tmp("wrong_types.pt2");
  write_zip(wrong_types, {{"m/models/model.json",
                           R"({"schema_version": {"major": 8, "minor": 1}, "graph_module": {"graph": {"tensor_values": {"x": {"dtype": "float", "sizes": 3}}, "nodes": 5}, "signature": []}})"}});
  auto g5 = import_pt2(wrong_types);
  ASSERT_FALSE(g5.ok());
  EXPECT_NE(std::string(g5.status().message()).find("dtype"), std::string::npos);

  std::string truncated_weight = tmp("trunc.pt2");
  write_zip(truncated_weight,
            {{"m/models/model.json",
              R"({"schema_version": {"major": 8, "minor": 1}, "graph_module": {"graph": {"tensor_values": {"p_w": {"dtype": 7, "sizes": [{"as_int": 4}]}}, "nodes": []},
                 "signature": {"input_specs": [{"parameter": {"arg": {"name": "p_w"}, "parameter_name": "w"}}], "output_specs": []}}})"},
             {"m/data/weights/model_weights_config.json",
              R"({"config": {"w": {"path_name": "weight_0", "is_param": true, "use_pickle": false, "tensor_meta": {"dtype": 7, "sizes": [{"as_int": 4}], "strides": [{"as_int": 1}], "storage_offset": {"as_int": 0}}}}})"},
             {"m/data/weights/weight_0", "12345678"}});
  auto g6 = import_pt2(truncated_weight);
  ASSERT_FALSE(g6.ok());
  EXPECT_NE(std::string(g6.status().message()).find("fewer than"), std::string::npos) << g6.status();
}

// Core ATen's linalg.inv: linalg_inv_ex, then _linalg_check_errors threaded on an effect token
// through with_effects. The token input/output are dropped and with_effects becomes a call of
// the wrapped operator (its arguments after the token and the operator; no outputs).
TEST(Importer, WithEffectsBecomesTheWrappedCall) {
  std::string path = tmp("with_effects.pt2");
  write_zip(path, {{"m/models/model.json",
                    R"({"schema_version":{"major":8,"minor":20},"graph_module":{"graph":{"inputs":[{"as_tensor":{"name":"token"}},{"as_tensor":{"name":"a"}}],"outputs":[{"as_tensor":{"name":"tok2"}},{"as_tensor":{"name":"inv"}}],)"
                    R"("nodes":[{"target":"torch.ops.aten.linalg_inv_ex.default","inputs":[{"name":"A","arg":{"as_tensor":{"name":"a"}},"kind":1}],"outputs":[{"as_tensor":{"name":"inv"}},{"as_tensor":{"name":"info"}}],"name":"linalg_inv_ex"},)"
                    R"({"target":"torch.ops.higher_order.with_effects","inputs":[{"name":"","arg":{"as_tensor":{"name":"token"}},"kind":1},{"name":"","arg":{"as_operator":"torch.ops.aten._linalg_check_errors.default"},"kind":1},{"name":"","arg":{"as_tensor":{"name":"info"}},"kind":1},{"name":"","arg":{"as_string":"linalg.inv"},"kind":1},{"name":"is_matrix","arg":{"as_bool":true},"kind":2}],"outputs":[{"as_tensor":{"name":"tok2"}},{"as_none":true}],"name":"with_effects"}],)"
                    R"("tensor_values":{"token":{"dtype":7,"sizes":[{"as_int":0}]},"a":{"dtype":7,"sizes":[{"as_int":3},{"as_int":3}]},"inv":{"dtype":7,"sizes":[{"as_int":3},{"as_int":3}]},"info":{"dtype":4,"sizes":[]},"tok2":{"dtype":7,"sizes":[{"as_int":0}]}}},)"
                    R"("signature":{"input_specs":[{"token":{"arg":{"name":"token"}}},{"user_input":{"arg":{"as_tensor":{"name":"a"}}}}],"output_specs":[{"token":{"arg":{"name":"tok2"}}},{"user_output":{"arg":{"as_tensor":{"name":"inv"}}}}]}}})"}});
  auto g = import_pt2(path);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->nodes.size(), 2u);
  EXPECT_EQ(g->nodes[1].kernel_name(), "aten::_linalg_check_errors.default");
  ASSERT_EQ(g->nodes[1].args.size(), 3u);  // info, api_name, is_matrix (schema order)
  EXPECT_EQ(g->nodes[1].args[0].kind, Arg::Kind::Tensor);
  EXPECT_EQ(g->nodes[1].args[1].s, "linalg.inv");
  EXPECT_TRUE(g->nodes[1].outputs.empty());
  EXPECT_EQ(g->inputs.size(), 1u);   // the token is not a program input
  EXPECT_EQ(g->outputs.size(), 1u);  // nor an output

  // with_effects of something that is not an operator is one clear error.
  std::string bad = tmp("with_effects_bad.pt2");
  write_zip(bad, {{"m/models/model.json",
                   R"({"schema_version":{"major":8,"minor":20},"graph_module":{"graph":{"inputs":[],"outputs":[],)"
                   R"("nodes":[{"target":"torch.ops.higher_order.with_effects","inputs":[{"name":"","arg":{"as_tensor":{"name":"token"}},"kind":1},{"name":"","arg":{"as_string":"x"},"kind":1}],"outputs":[{"as_tensor":{"name":"tok2"}}],"name":"with_effects"}],)"
                   R"("tensor_values":{"token":{"dtype":7,"sizes":[{"as_int":0}]},"tok2":{"dtype":7,"sizes":[{"as_int":0}]}}},"signature":{"input_specs":[],"output_specs":[]}}})"}});
  auto gb = import_pt2(bad);
  ASSERT_FALSE(gb.ok());
  EXPECT_NE(std::string(gb.status().message()).find("with_effects"), std::string::npos) << gb.status();
}

// wrap_with_set_grad_enabled (a no_grad block inside forward) is inlined. The subgraph names
// its placeholder "b", as the caller names a different value: its names are its own.
TEST(Importer, NoGradSubgraphIsInlinedWithItsOwnNames) {
  std::string path = tmp("no_grad.pt2");
  write_zip(path, {{"m/models/model.json",
                    R"({"schema_version":{"major":8,"minor":20},"graph_module":{"graph":{"inputs":[{"as_tensor":{"name":"a"}},{"as_tensor":{"name":"b"}}],"outputs":[{"as_tensor":{"name":"out"}}],)"
                    R"("nodes":[{"target":"torch.ops.higher_order.wrap_with_set_grad_enabled","inputs":[{"name":"","arg":{"as_bool":false},"kind":1},)"
                    R"({"name":"","arg":{"as_graph":{"name":"submod_1","graph":{"inputs":[{"as_tensor":{"name":"b"}}],"outputs":[{"as_tensor":{"name":"c"}}],)"
                    R"("nodes":[{"target":"torch.ops.aten.relu.default","inputs":[{"name":"self","arg":{"as_tensor":{"name":"b"}},"kind":1}],"outputs":[{"as_tensor":{"name":"c"}}]}],)"
                    R"("tensor_values":{"b":{"dtype":7,"sizes":[{"as_int":2}]},"c":{"dtype":7,"sizes":[{"as_int":2}]}}}}},"kind":1},)"
                    R"({"name":"","arg":{"as_tensor":{"name":"a"}},"kind":1}],"outputs":[{"as_tensor":{"name":"r"}}]},)"
                    R"({"target":"torch.ops.aten.add.Tensor","inputs":[{"name":"self","arg":{"as_tensor":{"name":"r"}},"kind":1},{"name":"other","arg":{"as_tensor":{"name":"b"}},"kind":1}],"outputs":[{"as_tensor":{"name":"out"}}]}],)"
                    R"("tensor_values":{"a":{"dtype":7,"sizes":[{"as_int":2}]},"b":{"dtype":7,"sizes":[{"as_int":2}]},"r":{"dtype":7,"sizes":[{"as_int":2}]},"out":{"dtype":7,"sizes":[{"as_int":2}]}}},)"
                    R"("signature":{"input_specs":[{"user_input":{"arg":{"as_tensor":{"name":"a"}}}},{"user_input":{"arg":{"as_tensor":{"name":"b"}}}}],"output_specs":[{"user_output":{"arg":{"as_tensor":{"name":"out"}}}}]}}})"}});
  auto g = import_pt2(path);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->nodes.size(), 2u);
  ASSERT_EQ(g->inputs.size(), 2u);
  EXPECT_EQ(g->nodes[0].kernel_name(), "aten::relu.default");
  EXPECT_EQ(g->nodes[0].args[0].ref, g->inputs[0]) << "the subgraph's 'b' is the caller's 'a'";
  EXPECT_EQ(g->nodes[1].kernel_name(), "aten::add.Tensor");
  EXPECT_EQ(g->nodes[1].args[0].ref, g->nodes[0].outputs[0].ref) << "the call's output is the subgraph's";
  EXPECT_EQ(g->nodes[1].args[1].ref, g->inputs[1]) << "the caller's 'b' is untouched";

  // A subgraph whose inputs do not match the call's arguments is one clear error.
  std::string bad = tmp("no_grad_bad.pt2");
  write_zip(bad, {{"m/models/model.json",
                   R"({"schema_version":{"major":8,"minor":20},"graph_module":{"graph":{"inputs":[{"as_tensor":{"name":"a"}}],"outputs":[{"as_tensor":{"name":"r"}}],)"
                   R"("nodes":[{"target":"torch.ops.higher_order.wrap_with_set_grad_enabled","inputs":[{"name":"","arg":{"as_bool":false},"kind":1},)"
                   R"({"name":"","arg":{"as_graph":{"name":"s","graph":{"inputs":[],"outputs":[],"nodes":[],"tensor_values":{}}}},"kind":1},)"
                   R"({"name":"","arg":{"as_tensor":{"name":"a"}},"kind":1}],"outputs":[{"as_tensor":{"name":"r"}}]}],)"
                   R"("tensor_values":{"a":{"dtype":7,"sizes":[{"as_int":2}]},"r":{"dtype":7,"sizes":[{"as_int":2}]}}},)"
                   R"("signature":{"input_specs":[{"user_input":{"arg":{"as_tensor":{"name":"a"}}}}],"output_specs":[{"user_output":{"arg":{"as_tensor":{"name":"r"}}}}]}}})"}});
  auto gb = import_pt2(bad);
  ASSERT_FALSE(gb.ok());
  EXPECT_NE(std::string(gb.status().message()).find("subgraph"), std::string::npos) << gb.status();
}

// Subgraph calls nested deeper than the importer allows are one clear error, not a stack
// overflow (each level recurses and copies its subgraph).
TEST(Importer, DeeplyNestedSubgraphsAreRefused) {
  const std::string tv = R"("tensor_values":{"x":{"dtype":7,"sizes":[{"as_int":2}]},"y":{"dtype":7,"sizes":[{"as_int":2}]}})";
  auto wrap = [](const std::string& graph) {
    return R"({"target":"torch.ops.higher_order.wrap_with_set_grad_enabled","inputs":[{"name":"","arg":{"as_bool":false},"kind":1},{"name":"","arg":{"as_graph":{"name":"s","graph":)" +
           graph + R"(}},"kind":1},{"name":"","arg":{"as_tensor":{"name":"x"}},"kind":1}],"outputs":[{"as_tensor":{"name":"y"}}]})";
  };
  auto nested = [&](int depth) {
    std::string node = R"({"target":"torch.ops.aten.relu.default","inputs":[{"name":"self","arg":{"as_tensor":{"name":"x"}},"kind":1}],"outputs":[{"as_tensor":{"name":"y"}}]})";
    for (int d = 0; d < depth; ++d) {
      node = wrap(R"({"inputs":[{"as_tensor":{"name":"x"}}],"outputs":[{"as_tensor":{"name":"y"}}],"nodes":[)" + node + "]," + tv + "}");
    }
    return R"({"schema_version":{"major":8,"minor":20},"graph_module":{"graph":{"inputs":[{"as_tensor":{"name":"x"}}],"outputs":[{"as_tensor":{"name":"y"}}],"nodes":[)" +
           node + "]," + tv +
           R"(},"signature":{"input_specs":[{"user_input":{"arg":{"as_tensor":{"name":"x"}}}}],"output_specs":[{"user_output":{"arg":{"as_tensor":{"name":"y"}}}}]}}})";
  };
  const std::string ok_path = tmp("nested_ok.pt2"), deep_path = tmp("nested_deep.pt2");
  write_zip(ok_path, {{"m/models/model.json", nested(8)}});
  auto ok = import_pt2(ok_path);
  ASSERT_TRUE(ok.ok()) << ok.status();
  ASSERT_EQ(ok->nodes.size(), 1u);
  EXPECT_EQ(ok->nodes[0].args[0].ref, ok->inputs[0]);
  write_zip(deep_path, {{"m/models/model.json", nested(200)}});
  auto deep = import_pt2(deep_path);
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(std::string(deep.status().message()).find("nested more than 32"), std::string::npos) << deep.status();
}

TEST(Importer, StridedWeightsBecomeContiguous) {
  std::string path = tmp("strided.pt2");
  // A 2x3 tensor stored transposed (strides [1, 2]) with storage offset 1.
  float storage[7] = {-1, 0, 3, 1, 4, 2, 5};
  write_zip(path,
            {{"m/models/model.json",
              R"({"schema_version": {"major": 8, "minor": 1}, "graph_module": {"graph": {"tensor_values": {"p_w": {"dtype": 7, "sizes": [{"as_int": 2}, {"as_int": 3}]}}, "nodes": []},
                 "signature": {"input_specs": [{"parameter": {"arg": {"name": "p_w"}, "parameter_name": "w"}}], "output_specs": []}}})"},
             {"m/data/weights/model_weights_config.json",
              R"({"config": {"w": {"path_name": "weight_0", "use_pickle": false, "tensor_meta": {"dtype": 7, "sizes": [{"as_int": 2}, {"as_int": 3}], "strides": [{"as_int": 1}, {"as_int": 2}], "storage_offset": {"as_int": 1}}}}})"},
             {"m/data/weights/weight_0", std::string(reinterpret_cast<const char*>(storage), sizeof(storage))}});
  auto g = import_pt2(path);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->constants.size(), 1u);
  const float* d = reinterpret_cast<const float*>(g->constants[0].data.data());
  // element (i, j) = storage[1 + i + 2j]
  EXPECT_EQ(std::vector<float>(d, d + 6), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

}  // namespace
}  // namespace exporter
}  // namespace ember
