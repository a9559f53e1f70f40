// Shared by the hardening tests: exports a model of shared/models once per process (with the
// exporter library and the portable kernels) and reads its reference inputs/outputs.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "exporter/exporter.h"
#include "extension/module/module.h"
#include "test/exporter/shared_dir.h"

namespace ember {
namespace testing {

struct ExportedModel {
  std::vector<uint8_t> pte;   // empty when shared/ is missing or export failed
  std::string error;
  TensorPtr input;            // input_0.npy
  TensorPtr reference;        // output_0.npy
};

// Exports shared/models/<name>/model.pt2 (cached per process). `pte` is empty and `error`
// says why when it cannot (no shared/ -> error is empty: tests skip).
inline const ExportedModel& exported_model(const std::string& name) {
  static std::map<std::string, ExportedModel>* cache = new std::map<std::string, ExportedModel>();
  auto it = cache->find(name);
  if (it != cache->end()) return it->second;
  ExportedModel& m = (*cache)[name];
  std::string shared = shared_dir();
  if (shared.empty()) return m;
  std::string dir = shared + "/models/" + name;
  auto r = exporter::export_pt2_file(dir + "/model.pt2", exporter::ExportOptions());
  if (!r.ok()) {
    m.error = std::string(r.status().message());
    return m;
  }
  m.pte = std::move(r->pte);
  auto in = read_npy(dir + "/input_0.npy");
  auto out = read_npy(dir + "/output_0.npy");
  if (!in.ok() || !out.ok()) {
    m.pte.clear();
    m.error = "cannot read the reference .npy files of " + name;
    return m;
  }
  m.input = *in;
  m.reference = *out;
  return m;
}

// A 64-byte aligned copy of a .pte (Module reads it in place).
class AlignedBytes {
 public:
  explicit AlignedBytes(const std::vector<uint8_t>& bytes) : storage_((bytes.size() + 63) / 64 + 1) {
    std::memcpy(storage_.data(), bytes.data(), bytes.size());
    size_ = bytes.size();
  }
  const void* data() const { return storage_.data(); }
  size_t size() const { return size_; }

 private:
  struct alignas(64) Block { uint8_t b[64]; };
  std::vector<Block> storage_;
  size_t size_ = 0;
};

inline double max_abs_diff(const Output& out, const TensorPtr& ref) {
  if (out.numel() != ref.numel()) return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    double d = std::fabs(element_as_double(out.tensor(), i) - element_as_double(ref.tensor(), i));
    if (!(d <= worst)) worst = d;  // NaN counts as worst
  }
  return worst;
}

}  // namespace testing
}  // namespace ember

#define EMBER_SKIP_OR_FAIL_IF_NO_MODEL(m)                                   \
  do {                                                                       \
    if ((m).pte.empty()) {                                                   \
      if ((m).error.empty()) GTEST_SKIP() << "shared/ data not found";       \
      FAIL() << "export failed: " << (m).error;                              \
    }                                                                        \
  } while (0)
