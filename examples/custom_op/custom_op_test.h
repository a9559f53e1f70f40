// Shared by the custom-operator tests: paths of the example's files, the exported program.
#pragma once

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "exporter/exporter.h"
#include "exporter/ops/op_schemas.h"
#include "test/support/repo_path.h"

namespace ember {
namespace custom_op_example {

inline std::string example_file(const std::string& name) {
  return testing::repo_path("examples/custom_op/" + name);
}

inline std::string tmp_file(const std::string& name) {
  const char* t = std::getenv("TEST_TMPDIR");
  return std::string(t ? t : "/tmp") + "/" + name;
}

// Exports model.pt2 with the signatures of op_schemas.txt (make_model.py writes it from
// PyTorch's registration) to `path`; the export's status.
inline absl::Status export_example(const std::string& path) {
  auto schemas = exporter::read_custom_op_schemas(example_file("op_schemas.txt"));
  if (!schemas.ok()) return schemas.status();
  exporter::ExportOptions options;
  options.custom_op_schemas = *schemas;
  auto r = exporter::export_pt2_file(example_file("model.pt2"), options);
  if (!r.ok()) return r.status();
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(r->pte.data()), static_cast<std::streamsize>(r->pte.size()));
  return f ? absl::OkStatus() : absl::InternalError("cannot write " + path);
}

}  // namespace custom_op_example
}  // namespace ember
