// Shared by the QNN delegate's tests: skipping cleanly when Qualcomm's library is absent
// (./setup.sh installs it; test.sh passes its path as EMBER_QNN_LIBRARY), and comparing a QNN
// program's outputs with the portable int8 program's in quantization steps.
#pragma once

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "delegates/qnn/qnn_blob_generated.h"
#include "delegates/qnn/qnn_library.h"
#include "exporter/ir/graph.h"
#include "gtest/gtest.h"

namespace ember {
namespace testing {

// Skips the test when the library cannot be loaded, saying why. When EMBER_QNN_LIBRARY names
// a library (./test.sh sets it after ./setup.sh installed one), a load failure is a failure.
#define EMBER_REQUIRE_QNN()                                                                   \
  do {                                                                                        \
    std::string qnn_error_;                                                                   \
    if (::ember::qnn::QnnLibrary::get(&qnn_error_) == nullptr) {                              \
      const char* env_ = std::getenv("EMBER_QNN_LIBRARY");                                    \
      if (env_ != nullptr && *env_ != '\0') FAIL() << qnn_error_;                             \
      GTEST_SKIP() << qnn_error_;                                                             \
    }                                                                                         \
  } while (0)

// Offset of the (first) QNN blob in a .pte: its FlatBuffer root, 4 bytes before its "EQNN"
// identifier; 0 when there is none.
inline size_t qnn_blob_offset(const std::vector<uint8_t>& pte) {
  for (size_t i = 4; i + 4 <= pte.size(); ++i) {
    if (std::memcmp(pte.data() + i, "EQNN", 4) == 0) return i - 4;
  }
  return 0;
}
inline const qnn::fb::Blob* find_qnn_blob(const std::vector<uint8_t>& pte) {
  const size_t at = qnn_blob_offset(pte);
  return at == 0 ? nullptr : qnn::fb::GetBlob(pte.data() + at);
}

inline double number(const exporter::Arg& a) { return a.kind == exporter::Arg::Kind::Double ? a.d : double(a.i); }

// The scale of the dequantize_per_tensor that produces the graph's first output (0 if none): one
// output step of a quantized program.
inline double output_step(const exporter::Graph& g) {
  if (g.outputs.empty() || g.outputs[0].value < 0) return 0;
  const int producer = g.values[g.outputs[0].value].producer;
  if (producer < 0) return 0;
  const exporter::Node& n = g.nodes[producer];
  if (n.kernel_name() != "quantized_decomposed::dequantize_per_tensor.default" || n.args.size() < 2) return 0;
  return number(n.args[1]);
}

}  // namespace testing
}  // namespace ember
