// The scalar table: every CPU; also the reference the SIMD tables are tested against.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/optimized/llm_simd.h"
#include "kernels/optimized/llm_simd_body.h"

namespace ember {
namespace optimized {

const LlmMath* llm_math_scalar() { return make_table<ScalarOps>(LlmIsa::Scalar, "scalar"); }

}  // namespace optimized
}  // namespace ember
