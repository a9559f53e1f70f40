// The harness of the decomposition tests (decompose_test.cc, decompose_linalg_test.cc): a
// graph of composite ops over user inputs (Case), exported with the portable kernels linked
// (so each composite must be decomposed), run with the Module API, and compared with
// references computed by the tests in double precision.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "exporter/exporter.h"
#include "exporter/ops/op_schemas.h"
#include "gtest/gtest.h"
#include "extension/module/module.h"
#include "extension/module/tensor_ptr.h"

namespace ember {
namespace exporter {
namespace decompose_test {

using Sizes = std::vector<int64_t>;

constexpr int64_t kNone = 0, kMean = 1, kSum = 2;

inline int64_t numel(const Sizes& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// A host array: sizes and values (as double) of a float32 or int64 tensor.
struct Array {
  Sizes sizes;
  std::vector<double> v;
  ScalarType dtype = ScalarType::Float32;
  double at(const Sizes& idx) const {
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d) flat = flat * sizes[d] + idx[d];
    return v[static_cast<size_t>(flat)];
  }
};

// Deterministic float32-representable values in [-1, 1).
inline Array random(Sizes s, uint32_t seed) {
  Array a;
  a.v.resize(static_cast<size_t>(numel(s)));
  uint32_t x = seed * 2654435761u + 12345u;
  for (double& e : a.v) {
    x = x * 1664525u + 1013904223u;
    e = static_cast<float>(static_cast<double>((x >> 8) % 200000) / 100000.0 - 1.0);
  }
  a.sizes = std::move(s);
  return a;
}
inline Array ints(Sizes s, std::vector<double> v) { return Array{std::move(s), std::move(v), ScalarType::Int64}; }
inline Array floats(Sizes s, std::vector<double> v) { return Array{std::move(s), std::move(v), ScalarType::Float32}; }

inline Arg str(const std::string& s) {
  Arg a;
  a.kind = Arg::Kind::String;
  a.s = s;
  return a;
}

// One graph of composite ops over user inputs, exported and run.
class Case {
 public:
  int input(const Array& a) {
    int id = add_value(a.sizes, a.dtype, ValueRole::UserInput);
    g_.inputs.push_back(id);
    inputs_.push_back(a);
    return id;
  }
  // Node `aten::op.overload` with `args` for its leading schema arguments (the rest take their
  // defaults, as the importer fills them), writing a new graph output of `out` sizes.
  int op(const std::string& op, const std::string& overload, std::vector<Arg> args, const Sizes& out,
         ScalarType dt = ScalarType::Float32) {
    return ops(op, overload, std::move(args), {out}, dt)[0];
  }
  // The same with one graph output per entry of `outs` (multi-output ops).
  std::vector<int> ops(const std::string& op, const std::string& overload, std::vector<Arg> args,
                       const std::vector<Sizes>& outs, ScalarType dt = ScalarType::Float32) {
    Node n;
    n.op = op.find("::") == std::string::npos ? "aten::" + op : op;  // aten:: unless qualified
    n.overload = overload;
    n.source = "decompose_test.cc";
    n.schema = find_op_schema(n.op, n.overload);
    EXPECT_NE(n.schema, nullptr) << n.op;
    if (n.schema != nullptr) {
      for (size_t i = 0; i < n.schema->args.size(); ++i) {
        const SchemaArg& sa = n.schema->args[i];
        n.arg_names.push_back(sa.name);
        if (i >= args.size()) args.push_back(sa.has_default ? sa.default_value : Arg::none());
      }
    }
    n.args = std::move(args);
    std::vector<int> ids;
    for (const Sizes& out : outs) {
      int o = add_value(out, dt, ValueRole::Activation);
      n.outputs.push_back(Arg::tensor(o));
      g_.values[o].producer = static_cast<int>(g_.nodes.size());
      g_.outputs.push_back(GraphOutput{o});
      ids.push_back(o);
    }
    composites_.insert(n.kernel_name());
    g_.nodes.push_back(std::move(n));
    return ids;
  }
  absl::StatusOr<ExportResult> export_program() const { return export_graph(g_, ExportOptions()); }

  // Exports (every composite must have been decomposed), runs and returns the outputs.
  std::vector<Array> run() {
    std::vector<Array> outs;
    auto r = export_program();
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return outs;
    for (const std::string& c : composites_) EXPECT_EQ(r->portable_ops.count(c), 0u) << c << " was not decomposed";
    file_.assign(r->pte.size() / sizeof(Block) + 1, Block{});
    std::memcpy(file_.data(), r->pte.data(), r->pte.size());
    module_ = std::make_unique<Module>(file_.data(), r->pte.size());
    std::vector<TensorPtr> tensors;
    for (const Array& a : inputs_) {
      if (a.dtype == ScalarType::Int64) {
        std::vector<int64_t> v(a.v.begin(), a.v.end());
        if (v.empty()) v.push_back(0);
        tensors.push_back(make_tensor(v, a.sizes));
      } else {
        std::vector<float> v(a.v.begin(), a.v.end());
        if (v.empty()) v.push_back(0);
        tensors.push_back(make_tensor(v, a.sizes));
      }
    }
    std::vector<Input> ins(tensors.begin(), tensors.end());
    auto res = module_->forward(ins);
    EXPECT_TRUE(res.ok()) << res.error().to_string();
    if (!res.ok()) return outs;
    for (const Output& o : *res) {
      Array a;
      a.dtype = o.dtype();
      a.sizes.assign(o.sizes().begin(), o.sizes().end());
      for (int64_t i = 0; i < o.numel(); ++i) a.v.push_back(element_as_double(o.tensor(), i));
      outs.push_back(std::move(a));
    }
    EXPECT_EQ(outs.size(), g_.outputs.size());
    return outs;
  }

 private:
  struct alignas(64) Block {
    uint8_t b[64];
  };
  int add_value(const Sizes& s, ScalarType dt, ValueRole role) {
    Value v;
    v.name = "v" + std::to_string(g_.values.size());
    v.sizes = s;
    v.dtype = dt;
    v.dynamic_dims.assign(s.size(), false);
    v.role = role;
    return g_.add_value(v);
  }
  Graph g_;
  std::vector<Array> inputs_;
  std::set<std::string> composites_;
  std::vector<Block> file_;
  std::unique_ptr<Module> module_;
};

inline void expect_close(const Array& got, const Array& want, const std::string& what) {
  ASSERT_EQ(got.sizes, want.sizes) << what;
  ASSERT_EQ(got.v.size(), want.v.size()) << what;
  for (size_t i = 0; i < want.v.size(); ++i) {
    if (std::isnan(want.v[i])) {
      EXPECT_TRUE(std::isnan(got.v[i])) << what << " [" << i << "]";
      continue;
    }
    EXPECT_NEAR(got.v[i], want.v[i], 1e-5 * std::max(1.0, std::fabs(want.v[i]))) << what << " [" << i << "]";
  }
}

// Runs `c` (one output per entry of `want`) and compares each output.
inline void run_and_compare(Case& c, const std::vector<Array>& want, const std::string& what) {
  std::vector<Array> got = c.run();
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) expect_close(got[i], want[i], what + " output " + std::to_string(i));
}

// Calls f(index) for every index of `sizes` in row-major order.
template <typename F>
void for_each_index(const Sizes& sizes, F f) {
  if (numel(sizes) == 0) return;
  Sizes idx(sizes.size(), 0);
  while (true) {
    f(idx);
    int d = static_cast<int>(sizes.size()) - 1;
    while (d >= 0 && ++idx[d] == sizes[d]) idx[d--] = 0;
    if (d < 0) return;
  }
}

}  // namespace decompose_test
}  // namespace exporter
}  // namespace ember
