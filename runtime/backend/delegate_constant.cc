// delegate_constant() lives with the program library: it reads the program's segments.
#include <cstring>

#include "runtime/backend/backend.h"
#include "runtime/program/program.h"

namespace ember {

Result<Span<const uint8_t>> delegate_constant(const BackendInitContext& context,
                                              Span<const CompileSpecView> compile_specs,
                                              uint32_t slot) {
  if (context.program == nullptr) return Error::InvalidArgument;
  for (const CompileSpecView& spec : compile_specs) {
    if (spec.key == nullptr || std::strcmp(spec.key, kConstantSegmentsSpec) != 0) continue;
    if (spec.value.size() % 4 != 0 || slot >= spec.value.size() / 4) return Error::InvalidProgram;
    const uint8_t* p = spec.value.data() + 4 * slot;
    uint32_t segment = static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                       (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
    return context.program->segment(segment);
  }
  return Error::InvalidProgram;
}

}  // namespace ember
