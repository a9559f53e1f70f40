#include "extension/bundled/bundled_cases.h"

#include <cstdint>
#include <cstring>

#include "runtime/core/scalar_type.h"
#include "runtime/core/tensor.h"
#include "schema/program_generated.h"

namespace ember {
namespace {

using flatbuffers::uoffset_t;

// See elements_aligned in runtime/program/program_validator.cc: the FlatBuffer verifier
// checks a vector's 4-byte length for alignment, not its 8-byte elements.
template <typename T>
bool elements_aligned(const flatbuffers::Vector<T>* v) {
  return v == nullptr || v->size() == 0 || reinterpret_cast<uintptr_t>(v->data()) % alignof(T) == 0;
}

// One bundled tensor: known dtype, sane sizes, exactly numel * element size bytes.
Error check_bundled_tensor(const schema::BundledTensor* t, uoffset_t c, const char* what, uoffset_t k,
                           Diagnostic* diag) {
  auto bad = [&](const char* why) {
    return fail(diag, Error::InvalidProgram, "invalid program: bundled case %u %s %u %s; re-export the bundle", c,
                what, k, why);
  };
  if (!is_valid_scalar_type(static_cast<int>(t->dtype()))) return bad("has an unknown dtype");
  const uint32_t rank = t->sizes() ? t->sizes()->size() : 0;
  if (rank > static_cast<uint32_t>(kMaxRank) || !elements_aligned(t->sizes())) return bad("has invalid sizes");
  uint64_t numel = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    const int64_t s = t->sizes()->Get(d);
    if (s < 0 || s > (int64_t{1} << 40)) return bad("has invalid sizes");
    if (s != 0 && numel > (uint64_t{1} << 40) / static_cast<uint64_t>(s)) return bad("is too large");
    numel *= static_cast<uint64_t>(s);
  }
  const uint64_t bytes = t->data() ? t->data()->size() : 0;
  if (bytes != numel * element_size(static_cast<ScalarType>(t->dtype()))) {
    return bad("has a data size that does not match its dtype and sizes");
  }
  return Error::Ok;
}

// Bundled test cases name an existing method and give it one tensor per input and output.
Error validate_cases(const schema::Program* program, Diagnostic* diag) {
  const auto* cases = program->bundled_cases();
  if (cases == nullptr) return Error::Ok;
  for (uoffset_t c = 0; c < cases->size(); ++c) {
    const schema::BundledCase* bc = cases->Get(c);
    const schema::Method* method = nullptr;
    for (uoffset_t i = 0; bc->method() != nullptr && i < program->methods()->size(); ++i) {
      const flatbuffers::String* name = program->methods()->Get(i)->name();
      if (name->size() == bc->method()->size() && std::memcmp(name->data(), bc->method()->data(), name->size()) == 0) {
        method = program->methods()->Get(i);
      }
    }
    if (method == nullptr) {
      return fail(diag, Error::InvalidProgram, "invalid program: bundled case %u names no method of the program", c);
    }
    const uint32_t num_in = bc->inputs() ? bc->inputs()->size() : 0;
    const uint32_t num_out = bc->expected_outputs() ? bc->expected_outputs()->size() : 0;
    const uint32_t want_in = method->inputs() ? method->inputs()->size() : 0;
    const uint32_t want_out = method->outputs() ? method->outputs()->size() : 0;
    if (num_in != want_in || num_out != want_out) {
      return fail(diag, Error::InvalidProgram,
                  "invalid program: bundled case %u has %u inputs and %u outputs; its method takes %u and gives %u",
                  c, num_in, num_out, want_in, want_out);
    }
    for (uoffset_t k = 0; k < num_in; ++k) EMBER_TRY(check_bundled_tensor(bc->inputs()->Get(k), c, "input", k, diag));
    for (uoffset_t k = 0; k < num_out; ++k) {
      EMBER_TRY(check_bundled_tensor(bc->expected_outputs()->Get(k), c, "output", k, diag));
    }
  }
  return Error::Ok;
}

}  // namespace

Error validate_bundled_cases(const Program& program, Diagnostic* diag) {
  return validate_cases(program.flatbuffer(), diag);
}

}  // namespace ember
