// Shared by the custom-operator tests: paths of the example's files, the exported program.
#pragma once

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "exporter/exporter.h"
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

// The signatures in op_schemas.txt (make_model.py writes it from PyTorch's registration).
inline std::vector<std::string> example_schemas() {
  std::vector<std::string> out;
  std::ifstream f(example_file("op_schemas.txt"));
  for (std::string line; std::getline(f, line);) {
    if (!line.empty() && line[0] != '#') out.push_back(line);
  }
  return out;
}

// Exports model.pt2 with the example's schemas to `path`; the export's status.
inline absl::Status export_example(const std::string& path) {
  exporter::ExportOptions options;
  options.custom_op_schemas = example_schemas();
  auto r = exporter::export_pt2_file(example_file("model.pt2"), options);
  if (!r.ok()) return r.status();
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(r->pte.data()), static_cast<std::streamsize>(r->pte.size()));
  return f ? absl::OkStatus() : absl::InternalError("cannot write " + path);
}

}  // namespace custom_op_example
}  // namespace ember
