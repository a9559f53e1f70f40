// Module::verify_bundled_cases: runs the test cases `ember export --bundle` embedded in the
// program (schema Program.bundled_cases; validated at load) and compares their outputs.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/module/module.h"
#include "schema/program_generated.h"

namespace ember {
namespace {

std::string shape_text(const int64_t* sizes, size_t rank) {
  std::string s = "[";
  for (size_t i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

// An owning, aligned copy of a bundled tensor (its bytes in the FlatBuffer may be unaligned).
// Full verification checked dtype, sizes and byte count at load; they are checked again here
// so a minimally verified (trusted) file cannot make the copy overrun.
bool to_tensor(const schema::BundledTensor* t, TensorPtr* out, std::string* why) {
  std::vector<int64_t> sizes;
  if (t->sizes() != nullptr) sizes.assign(t->sizes()->begin(), t->sizes()->end());
  const size_t bytes = t->data() != nullptr ? t->data()->size() : 0;
  uint64_t numel = 1;
  bool sane = is_valid_scalar_type(static_cast<int>(t->dtype())) && sizes.size() <= static_cast<size_t>(kMaxRank);
  for (int64_t s : sizes) {
    sane = sane && s >= 0 && s <= (int64_t{1} << 40) && (s == 0 || numel <= (uint64_t{1} << 40) / s);
    if (sane) numel *= static_cast<uint64_t>(s);
  }
  if (!sane || bytes != numel * element_size(static_cast<ScalarType>(t->dtype()))) {
    *why = "a bundled tensor's bytes do not match its dtype and sizes; re-export the bundle";
    return false;
  }
  *out = empty(sizes, static_cast<ScalarType>(t->dtype()));
  if (bytes > 0) std::memcpy(out->raw_data(), t->data()->data(), bytes);
  return true;
}

// Compares output `index`; false with `result.message` set at the first mismatch.
bool compare(const Tensor& got, const Tensor& want, size_t index, double rtol, double atol, BundledCaseResult& result) {
  if (got.dtype != want.dtype || got.rank != want.rank ||
      std::memcmp(got.sizes, want.sizes, sizeof(int64_t) * want.rank) != 0) {
    if (!result.message.empty()) return false;  // keep the first mismatch
    result.message = "output " + std::to_string(index) + " is " + scalar_type_name(got.dtype) +
                     shape_text(got.sizes, got.rank) + ", expected " + scalar_type_name(want.dtype) +
                     shape_text(want.sizes, want.rank);
    return false;
  }
  bool ok = true;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = element_as_double(got, i), w = element_as_double(want, i);
    if (std::isnan(g) && std::isnan(w)) continue;
    const double err = std::fabs(g - w);
    if (!(err <= result.max_abs_error)) result.max_abs_error = std::isnan(err) ? INFINITY : err;
    if (w != 0.0 && err / std::fabs(w) > result.max_rel_error) result.max_rel_error = err / std::fabs(w);
    if (ok && !(err <= atol + rtol * std::fabs(w))) {
      ok = false;
      if (!result.message.empty()) continue;  // keep the first mismatch
      char text[200];
      std::snprintf(text, sizeof(text), "output %zu element %lld is %.9g, expected %.9g (|diff| %.3g > atol %.3g + rtol %.3g * |expected|)",
                    index, static_cast<long long>(i), g, w, err, atol, rtol);
      result.message = text;
    }
  }
  return ok;
}

}  // namespace

Expected<std::vector<BundledCaseResult>> Module::verify_bundled_cases(double rtol, double atol) {
  Status s = load();
  if (!s.ok()) return s;
  const auto* cases = program_->flatbuffer()->bundled_cases();
  if (cases == nullptr || cases->size() == 0) {
    return Status(Error::NotFound, "the program has no bundled test cases; export it with --bundle DIR");
  }
  std::vector<BundledCaseResult> results;
  for (const schema::BundledCase* c : *cases) {
    BundledCaseResult r;
    r.name = c->name() ? c->name()->str() : "";
    r.method = c->method() ? c->method()->str() : "forward";
    std::vector<TensorPtr> inputs;
    bool readable = true;
    if (c->inputs() != nullptr) {
      for (const schema::BundledTensor* t : *c->inputs()) {
        inputs.emplace_back();
        readable = readable && to_tensor(t, &inputs.back(), &r.message);
      }
    }
    if (!readable) {
      results.push_back(r);
      continue;
    }
    // Each case starts from the initial state (a KV cache filled by an earlier case would
    // change the outputs).
    Status loaded = load_method(r.method);
    if (loaded.ok()) loaded = reset_state(r.method);
    if (!loaded.ok()) return loaded;
    Expected<Outputs> outputs = execute(r.method, std::vector<Input>(inputs.begin(), inputs.end()));
    if (!outputs.ok()) {
      r.message = "execute failed: " + outputs.error().to_string();
      results.push_back(r);
      continue;
    }
    r.passed = true;
    const uint32_t n = c->expected_outputs() ? c->expected_outputs()->size() : 0;
    for (uint32_t k = 0; k < n; ++k) {
      TensorPtr want;
      if (!to_tensor(c->expected_outputs()->Get(k), &want, &r.message)) {
        r.passed = false;
        break;
      }
      if (k >= outputs->size() || !outputs->at(k).is_tensor()) {
        r.passed = false;
        r.message = "output " + std::to_string(k) + " is not a tensor";
        break;
      }
      if (!compare(outputs->at(k).tensor(), want.tensor(), k, rtol, atol, r)) r.passed = false;
    }
    results.push_back(r);
  }
  return results;
}

}  // namespace ember
