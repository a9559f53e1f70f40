#include "tools/devtools/bundle.h"

#include <sys/stat.h>

#include <cstring>
#include <memory>

#include "extension/bundled/bundled_cases.h"
#include "extension/module/module.h"
#include "runtime/loader/buffer_data_loader.h"

namespace ember {
namespace tools {
namespace {

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// A 64-byte aligned copy of a program (Module uses its buffer in place).
struct AlignedProgram {
  explicit AlignedProgram(const std::vector<uint8_t>& pte) : storage(pte.size() + 64) {
    const uintptr_t p = reinterpret_cast<uintptr_t>(storage.data());
    data = storage.data() + (64 - p % 64) % 64;
    if (!pte.empty()) std::memcpy(data, pte.data(), pte.size());
    size = pte.size();
  }
  std::vector<uint8_t> storage;
  uint8_t* data = nullptr;
  size_t size = 0;
};

std::vector<exporter::NpyArray> read_series(const std::string& dir, const std::string& prefix,
                                            absl::Status* status) {
  std::vector<exporter::NpyArray> out;
  for (int i = 0;; ++i) {
    const std::string path = dir + "/" + prefix + std::to_string(i) + ".npy";
    if (!exists(path)) break;
    auto a = exporter::read_npy(path);
    if (!a.ok()) {
      *status = absl::InvalidArgumentError(path + ": " + std::string(a.status().message()));
      return {};
    }
    out.push_back(std::move(*a));
  }
  return out;
}

}  // namespace

absl::StatusOr<exporter::BundledCaseData> read_bundle_dir(const std::string& dir) {
  exporter::BundledCaseData c;
  std::string trimmed = dir;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  const size_t slash = trimmed.rfind('/');
  c.name = slash == std::string::npos ? trimmed : trimmed.substr(slash + 1);
  absl::Status status;
  c.inputs = read_series(dir, "input_", &status);
  if (!status.ok()) return status;
  if (c.inputs.empty()) {
    return absl::InvalidArgumentError("--bundle " + dir + ": no input_0.npy there (a bundle directory holds " +
                                      "input_<i>.npy and optionally output_<i>.npy)");
  }
  c.expected_outputs = read_series(dir, "output_", &status);
  if (!status.ok()) return status;
  return c;
}

absl::Status compute_expected_outputs(const std::vector<uint8_t>& portable_pte, const std::string& method,
                                      std::vector<exporter::BundledCaseData>* cases) {
  AlignedProgram program(portable_pte);
  Module module(program.data, program.size);
  for (exporter::BundledCaseData& c : *cases) {
    if (!c.expected_outputs.empty()) continue;
    std::vector<TensorPtr> tensors;
    for (exporter::NpyArray& a : c.inputs) tensors.push_back(from_blob(a.data.data(), a.shape, a.dtype));
    Status reset = module.load_method(method);
    if (reset.ok()) reset = module.reset_state(method);
    if (!reset.ok()) return absl::InternalError(reset.to_string());
    Expected<Outputs> outputs = module.execute(method, std::vector<Input>(tensors.begin(), tensors.end()));
    if (!outputs.ok()) {
      return absl::InvalidArgumentError("bundle '" + c.name + "': the portable kernels could not run it: " +
                                        outputs.error().to_string());
    }
    for (size_t k = 0; k < outputs->size(); ++k) {
      if (!outputs->at(k).is_tensor()) {
        return absl::InvalidArgumentError("bundle '" + c.name + "': output " + std::to_string(k) +
                                          " is not a tensor; only tensor outputs can be bundled");
      }
      const Tensor& t = outputs->at(k).tensor();
      exporter::NpyArray a;
      a.dtype = t.dtype;
      a.shape.assign(t.sizes, t.sizes + t.rank);
      const uint8_t* bytes = static_cast<const uint8_t*>(t.data);
      a.data.assign(bytes, bytes + t.nbytes());
      c.expected_outputs.push_back(std::move(a));
    }
  }
  return absl::OkStatus();
}

absl::Status check_program(const std::vector<uint8_t>& pte, const std::vector<uint8_t>& ptd) {
  AlignedProgram program(pte);
  BufferDataLoader loader(program.data, program.size);
  Diagnostic diag;
  AlignedProgram data_bytes(ptd);
  BufferDataLoader data_loader(data_bytes.data, data_bytes.size);
  Result<DataFile> data = DataFile::load(&data_loader, DataFile::Verification::Full, &diag);
  if (!ptd.empty() && !data.ok()) {
    return absl::InvalidArgumentError(std::string("data file: ") + error_name(data.error()) + ": " + diag.message);
  }
  const DataFile* files[1] = {ptd.empty() ? nullptr : &*data};
  Program::ExternalData external;
  external.files = Span<const DataFile* const>(files, ptd.empty() ? 0 : 1);
  Result<Program> loaded = Program::load(&loader, Program::Verification::Full, &diag, external);
  if (!loaded.ok()) return absl::InvalidArgumentError(std::string(error_name(loaded.error())) + ": " + diag.message);
  // Program::load does not read the bundled cases: extension/bundled checks them.
  if (validate_bundled_cases(*loaded, &diag) != Error::Ok) {
    return absl::InvalidArgumentError(std::string("InvalidProgram: ") + diag.message);
  }
  return absl::OkStatus();
}

}  // namespace tools
}  // namespace ember
