// Module::verify_bundled_cases: runs the test cases `ember export --bundle` embedded in the
// program (schema Program.bundled_cases; validated by extension/bundled before they run) and
// compares their outputs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "extension/bundled/bundled_cases.h"
#include "extension/module/module.h"
#include "extension/module/module_call_guard.h"
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

// Compares output `index` (BundledTolerance in module.h); false with `result.message` set at
// the first failing output.
bool compare(const Tensor& got, const Tensor& want, size_t index, const VerifyOptions& options,
             BundledCaseResult& result) {
  BundledOutputResult o;
  o.dtype = want.dtype;
  const BundledTolerance fallback = default_bundled_tolerance(want.dtype);
  o.tolerance.rtol = options.rtol >= 0 ? options.rtol : fallback.rtol;
  o.tolerance.atol = options.atol >= 0 ? options.atol : fallback.atol;
  if (got.dtype != want.dtype || got.rank != want.rank ||
      std::memcmp(got.sizes, want.sizes, sizeof(int64_t) * want.rank) != 0) {
    result.outputs.push_back(o);
    if (!result.message.empty()) return false;  // keep the first mismatch
    result.message = "output " + std::to_string(index) + " is " + scalar_type_name(got.dtype) +
                     shape_text(got.sizes, got.rank) + ", expected " + scalar_type_name(want.dtype) +
                     shape_text(want.sizes, want.rank);
    return false;
  }
  const int64_t n = want.numel();
  double max_want = 0.0, want_sq = 0.0, err_sq = 0.0;
  int64_t worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double g = element_as_double(got, i), w = element_as_double(want, i);
    if (std::isfinite(w)) {
      max_want = std::max(max_want, std::fabs(w));
      want_sq += w * w;
    }
    if (g == w || (std::isnan(g) && std::isnan(w))) continue;  // also equal infinities
    double err = std::fabs(g - w);
    if (std::isnan(err)) err = INFINITY;
    if (err > o.max_abs_error) {
      o.max_abs_error = err;
      worst = i;
    }
    err_sq += err * err;
    if (w != 0.0 && err / std::fabs(w) > result.max_rel_error) result.max_rel_error = err / std::fabs(w);
  }
  const double rtol = o.tolerance.rtol, atol = o.tolerance.atol;
  o.max_abs_limit = atol + rtol * max_want;
  o.rel_l2_error = want_sq > 0 ? std::sqrt(err_sq / want_sq) : (err_sq > 0 ? INFINITY : 0.0);
  const double rms_err = n > 0 ? std::sqrt(err_sq / n) : 0.0;
  const double rms_want = n > 0 ? std::sqrt(want_sq / n) : 0.0;
  const double rms_limit = atol + rtol * rms_want;
  o.passed = o.max_abs_error <= o.max_abs_limit && rms_err <= rms_limit;
  result.max_abs_error = std::max(result.max_abs_error, o.max_abs_error);
  result.rel_l2_error = std::max(result.rel_l2_error, o.rel_l2_error);
  result.outputs.push_back(o);
  if (o.passed || !result.message.empty()) return o.passed;  // keep the first mismatch
  char text[320];
  if (!(o.max_abs_error <= o.max_abs_limit)) {
    std::snprintf(text, sizeof(text),
                  "output %zu element %lld is %.9g, expected %.9g (|diff| %.3g > %.3g = atol %.3g + rtol %.3g * "
                  "max|expected| %.3g)",
                  index, static_cast<long long>(worst), element_as_double(got, worst), element_as_double(want, worst),
                  o.max_abs_error, o.max_abs_limit, atol, rtol, max_want);
  } else {
    std::snprintf(text, sizeof(text),
                  "output %zu: relative L2 error %.3g (RMS error %.3g > %.3g = atol %.3g + rtol %.3g * "
                  "RMS(expected) %.3g)",
                  index, o.rel_l2_error, rms_err, rms_limit, atol, rtol, rms_want);
  }
  result.message = text;
  return false;
}

}  // namespace

BundledTolerance default_bundled_tolerance(ScalarType dtype) {
  switch (dtype) {
    case ScalarType::Float32:
    case ScalarType::Float64: return {1e-4, 1e-5};
    case ScalarType::Float16: return {1e-2, 1e-3};
    case ScalarType::BFloat16: return {5e-2, 1e-2};
    default: return {0.0, 0.0};  // integers and bool: exact
  }
}

Expected<std::vector<BundledCaseResult>> Module::verify_bundled_cases(const VerifyOptions& options) {
  EMBER_ONE_CALL_AT_A_TIME();
  Status s = load();
  if (!s.ok()) return s;
  const auto* cases = program_->flatbuffer()->bundled_cases();
  if (cases == nullptr || cases->size() == 0) {
    return Status(Error::NotFound, "the program has no bundled test cases; export it with --bundle DIR");
  }
  Diagnostic diag;
  if (Error e = validate_bundled_cases(*program_, &diag); e != Error::Ok) return Status(e, diag.message);
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
      if (!compare(outputs->at(k).tensor(), want.tensor(), k, options, r)) r.passed = false;
    }
    results.push_back(r);
  }
  return results;
}

}  // namespace ember
