#include "test/delegates/xnnpack/xnnpack_kernel_selection.h"

#include <xnnpack.h>

#include <cstring>

#include "xnnpack/config.h"
#include "xnnpack/gemm.h"
#include "xnnpack/hardware-config.h"
#include "xnnpack/igemm.h"

// XNNPACK's x32 GOI packing microkernels (their header, xnnpack/packw.h, includes generated
// lists that are not installed), with xnn_packw_gemm_goi_ukernel_fn's signature.
#define EMBER_DECLARE_PACKW(name)                                                                       \
  extern "C" void xnn_x32_packw_gemm_goi_ukernel_##name(size_t, size_t, size_t, size_t, size_t, size_t, \
                                                        const uint32_t*, const uint32_t*, const void*,  \
                                                        uint32_t*, size_t, const void*);
#if XNN_ARCH_X86_64
EMBER_DECLARE_PACKW(x32__avx512f_u4_prfm)
EMBER_DECLARE_PACKW(x16s4__avx_u4)
EMBER_DECLARE_PACKW(x16__avx_u4)
EMBER_DECLARE_PACKW(x8__sse2_u4)
#endif
#undef EMBER_DECLARE_PACKW

namespace ember {
namespace testing {

namespace {

#if XNN_ARCH_X86_64
// gemm-config.c's x86 qd8-f32-qb4w branches, most capable first. The packing function and the
// parameter initialiser are the same for all of them; tile shape and kernels differ.
struct Qb4wConfig {
  const char* name;
  const char* needs;
  bool (*supported)(const xnn_hardware_config&);
  xnn_dqgemm_ukernel_fn one_row, many_rows;
  uint8_t mr, nr, log2_kr, planes;
};

xnn_dqgemm_ukernel_fn fn(decltype(&xnn_qd8_f32_qb4w_gemm_minmax_ukernel_3x8c8__avx2) f) {
  return reinterpret_cast<xnn_dqgemm_ukernel_fn>(f);
}

const std::vector<Qb4wConfig>& qb4w_configs() {
  static const std::vector<Qb4wConfig> configs = {
      {"14x16c8__avx512vnnigfni_prfm", "avx512vnni gfni",
       [](const xnn_hardware_config& h) { return h.use_x86_avx512vnnigfni; },
       fn(xnn_qd8_f32_qb4w_gemm_minmax_ukernel_1x16c8__avx512vnnigfni_prfm),
       fn(xnn_qd8_f32_qb4w_gemm_minmax_ukernel_14x16c8__avx512vnnigfni_prfm), 14, 16, 3, 2},
      {"8x16c8__avx512vnni_prfm", "avx512vnni", [](const xnn_hardware_config& h) { return h.use_x86_avx512vnni; },
       fn(xnn_qd8_f32_qb4w_gemm_minmax_ukernel_1x16c8__avx512vnni_prfm),
       fn(xnn_qd8_f32_qb4w_gemm_minmax_ukernel_8x16c8__avx512vnni_prfm), 8, 16, 3, 2},
      {"3x8c8__avx2", "avx2", [](const xnn_hardware_config& h) { return h.use_x86_avx2; },
       fn(xnn_qd8_f32_qb4w_gemm_minmax_ukernel_1x8c8__avx2), fn(xnn_qd8_f32_qb4w_gemm_minmax_ukernel_3x8c8__avx2), 3,
       8, 3, 2},
      {"4x4c8__avx_ld128", "avx", [](const xnn_hardware_config& h) { return h.use_x86_avx; },
       fn(xnn_qd8_f32_qb4w_gemm_minmax_ukernel_1x4c8__avx_ld128),
       fn(xnn_qd8_f32_qb4w_gemm_minmax_ukernel_4x4c8__avx_ld128), 4, 4, 3, 1},
      {"3x4c8__sse41_ld128", "sse4.1", [](const xnn_hardware_config& h) { return h.use_x86_sse4_1; },
       fn(xnn_qd8_f32_qb4w_gemm_minmax_ukernel_1x4c8__sse41_ld128),
       fn(xnn_qd8_f32_qb4w_gemm_minmax_ukernel_3x4c8__sse41_ld128), 3, 4, 3, 1},
      {"4x4c8__sse2_ld128", "sse2", [](const xnn_hardware_config&) { return true; },
       fn(xnn_qd8_f32_qb4w_gemm_minmax_ukernel_1x4c8__sse2_ld128),
       fn(xnn_qd8_f32_qb4w_gemm_minmax_ukernel_4x4c8__sse2_ld128), 4, 4, 3, 1},
  };
  return configs;
}

// gemm-config.c's x86 fp32 branches, most capable first (the FMA3 one with sr = 4 is what it
// picks on AMD Zen).
struct F32GemmConfig {
  const char* name;
  const char* needs;
  bool (*supported)(const xnn_hardware_config&);
  xnn_gemm_ukernel_fn gemm_1, gemm_mr;
  xnn_igemm_ukernel_fn igemm_1, igemm_mr;
  xnn_packw_gemm_goi_ukernel_fn pack;
  uint8_t mr, nr, log2_sr;
};

#define EMBER_F32_GEMM(one, many) \
  reinterpret_cast<xnn_gemm_ukernel_fn>(xnn_f32_gemm_minmax_ukernel_##one), \
      reinterpret_cast<xnn_gemm_ukernel_fn>(xnn_f32_gemm_minmax_ukernel_##many)
#define EMBER_F32_IGEMM(one, many) \
  reinterpret_cast<xnn_igemm_ukernel_fn>(xnn_f32_igemm_minmax_ukernel_##one), \
      reinterpret_cast<xnn_igemm_ukernel_fn>(xnn_f32_igemm_minmax_ukernel_##many)
#define EMBER_PACKW(name) reinterpret_cast<xnn_packw_gemm_goi_ukernel_fn>(xnn_x32_packw_gemm_goi_ukernel_##name)

const std::vector<F32GemmConfig>& f32_gemm_configs() {
  static const std::vector<F32GemmConfig> configs = {
      {"7x32__avx512f_broadcast", "avx512f", [](const xnn_hardware_config& h) { return h.use_x86_avx512f; },
       EMBER_F32_GEMM(1x32__avx512f_broadcast, 7x32__avx512f_broadcast),
       EMBER_F32_IGEMM(1x32__avx512f_broadcast, 7x32__avx512f_broadcast), EMBER_PACKW(x32__avx512f_u4_prfm), 7, 32, 0},
      {"4x16s4__fma3_broadcast", "fma3", [](const xnn_hardware_config& h) { return h.use_x86_fma3; },
       EMBER_F32_GEMM(1x16s4__fma3_broadcast, 4x16s4__fma3_broadcast),
       EMBER_F32_IGEMM(1x16s4__fma3_broadcast, 4x16s4__fma3_broadcast), EMBER_PACKW(x16s4__avx_u4), 4, 16, 2},
      {"5x16__fma3_broadcast", "fma3", [](const xnn_hardware_config& h) { return h.use_x86_fma3; },
       EMBER_F32_GEMM(1x16__fma3_broadcast, 5x16__fma3_broadcast),
       EMBER_F32_IGEMM(1x16__fma3_broadcast, 5x16__fma3_broadcast_prfm), EMBER_PACKW(x16__avx_u4), 5, 16, 0},
      {"5x16__avx_broadcast", "avx", [](const xnn_hardware_config& h) { return h.use_x86_avx; },
       EMBER_F32_GEMM(1x16__avx_broadcast, 5x16__avx_broadcast),
       EMBER_F32_IGEMM(1x16__avx_broadcast, 5x16__avx_broadcast), EMBER_PACKW(x16__avx_u4), 5, 16, 0},
      {"4x8__sse_load1", "sse", [](const xnn_hardware_config&) { return true; },
       EMBER_F32_GEMM(1x8__sse_load1, 4x8__sse_load1), EMBER_F32_IGEMM(1x8__sse_load1, 4x8__sse_load1),
       EMBER_PACKW(x8__sse2_u4), 4, 8, 0},
  };
  return configs;
}
#undef EMBER_F32_GEMM
#undef EMBER_F32_IGEMM
#undef EMBER_PACKW
#endif

const xnn_hardware_config* hardware() {
  xnn_initialize(nullptr);
  return xnn_init_hardware_config();
}

std::string qb4w_kernel_name(const xnn_gemm_config& c) {
#if XNN_ARCH_X86_64
  if (c.mr == 0) return "";
  const xnn_dqgemm_ukernel_fn many = c.minmax.dqgemm[c.mr - 1].function[0];
  for (const Qb4wConfig& q : qb4w_configs()) {
    if (q.many_rows == many) return q.name;
  }
#else
  (void)c;
#endif
  return "";
}

GemmSelection describe(const char* path, const xnn_gemm_config* c, bool qd8) {
  GemmSelection s;
  s.path = path;
  s.reads_row_params = qd8;
  if (c == nullptr) return s;  // XNNPACK has no such GEMM on this CPU
  s.mr = c->mr;
  s.nr = c->nr;
  s.kr = 1 << c->log2_kr;
  s.planes = c->planes;
  if (std::strcmp(path, "qd8-f32-qb4w") == 0) s.kernel = qb4w_kernel_name(*c);
  return s;
}

}  // namespace

std::vector<GemmSelection> quantized_gemm_selections() {
  hardware();
  return {
      describe("qd8-f32-qb4w", xnn_init_qd8_f32_qb4w_gemm_config(), true),  // int4 weight-only
      describe("qd8-f32-qc8w", xnn_init_qd8_f32_qc8w_gemm_config(), true),  // int8 weight-only
      describe("qd8-f32-qc4w", xnn_init_qd8_f32_qc4w_gemm_config(), true),
      describe("qs8-qc8w", xnn_init_qs8_qc8w_gemm_config(), false),  // static int8
  };
}

bool native_fp16_arithmetic() {
  const xnn_hardware_config* h = hardware();
  if (h == nullptr) return false;
#if XNN_ARCH_X86_64
  return h->use_x86_avx512fp16;
#elif XNN_ARCH_ARM64
  return h->use_arm_neon_fp16_arith;
#else
  return false;
#endif
}

std::string cpu_features() {
  const xnn_hardware_config* h = hardware();
  std::string s;
  if (h == nullptr) return s;
#if XNN_ARCH_X86_64
  const std::pair<bool, const char*> flags[] = {
      {h->use_x86_sse4_1, "sse4.1"},       {h->use_x86_avx, "avx"},
      {h->use_x86_fma3, "fma3"},           {h->use_x86_avx2, "avx2"},
      {h->use_x86_avxvnni, "avxvnni"},     {h->use_x86_avx256skx, "avx256skx"},
      {h->use_x86_avx512f, "avx512f"},     {h->use_x86_avx512skx, "avx512skx"},
      {h->use_x86_avx512vbmi, "avx512vbmi"}, {h->use_x86_avx512vnni, "avx512vnni"},
      {h->use_x86_avx512vnnigfni, "avx512vnni+gfni"}, {h->use_x86_avx512fp16, "avx512fp16"},
      {h->use_x86_avx512amx, "amx"},
  };
  for (const auto& [on, name] : flags) {
    if (on) s += std::string(s.empty() ? "" : " ") + name;
  }
#elif XNN_ARCH_ARM64
  const std::pair<bool, const char*> flags[] = {
      {h->use_arm_neon_dot, "dotprod"}, {h->use_arm_neon_i8mm, "i8mm"}, {h->use_arm_neon_fp16_arith, "fp16"}};
  for (const auto& [on, name] : flags) {
    if (on) s += std::string(s.empty() ? "" : " ") + name;
  }
#endif
  return s;
}

int extra_quantization_params() { return XNN_EXTRA_QUANTIZATION_PARAMS; }

namespace {

#if XNN_ARCH_X86_64
// The variants of `configs` with whether this CPU runs each.
template <typename Config>
std::vector<GemmVariant> variants_of(const std::vector<Config>& configs) {
  std::vector<GemmVariant> v;
  const xnn_hardware_config* h = hardware();
  for (const Config& c : configs) v.push_back({c.name, h != nullptr && c.supported(*h), c.needs});
  return v;
}

// Overwrites XNNPACK's configuration `current` (XNNPACK hands out this one static
// configuration to every operator it creates) by `apply(config, variant)` for the variant
// `name` of `configs`; returns a copy of what it was, or null (nothing changed).
template <typename Config, typename Apply>
void* force_variant(const xnn_gemm_config* current, const std::vector<Config>& configs, const std::string& name,
                    Apply apply) {
  const xnn_hardware_config* h = hardware();
  if (h == nullptr || current == nullptr) return nullptr;
  for (const Config& c : configs) {
    if (name != c.name || !c.supported(*h)) continue;
    xnn_gemm_config* config = const_cast<xnn_gemm_config*>(current);
    xnn_gemm_config* saved = new xnn_gemm_config(*config);
    apply(config, c);
    return saved;
  }
  return nullptr;
}
#endif

void restore_config(void* saved, const xnn_gemm_config* current) {
  if (saved == nullptr) return;
  *const_cast<xnn_gemm_config*>(current) = *static_cast<xnn_gemm_config*>(saved);
  delete static_cast<xnn_gemm_config*>(saved);
}

}  // namespace

std::vector<Qb4wVariant> qb4w_variants() {
#if XNN_ARCH_X86_64
  return variants_of(qb4w_configs());
#else
  return {};
#endif
}

ScopedQb4wVariant::ScopedQb4wVariant(const std::string& name) {
#if XNN_ARCH_X86_64
  saved_ = force_variant(xnn_init_qd8_f32_qb4w_gemm_config(), qb4w_configs(), name,
                         [](xnn_gemm_config* config, const Qb4wConfig& q) {
                           std::memset(&config->minmax, 0, sizeof config->minmax);
                           config->minmax.dqgemm[0] = xnn_init_hmp_dqgemm_ukernel(q.one_row);
                           config->minmax.dqgemm[q.mr - 1] = xnn_init_hmp_dqgemm_ukernel(q.many_rows);
                           config->mr = q.mr;
                           config->nr = q.nr;
                           config->log2_kr = q.log2_kr;
                           config->planes = q.planes;
                         });
#else
  (void)name;
#endif
}

ScopedQb4wVariant::~ScopedQb4wVariant() { restore_config(saved_, xnn_init_qd8_f32_qb4w_gemm_config()); }

std::vector<F32GemmVariant> f32_gemm_variants() {
#if XNN_ARCH_X86_64
  return variants_of(f32_gemm_configs());
#else
  return {};
#endif
}

ScopedF32GemmVariant::ScopedF32GemmVariant(const std::string& name) {
#if XNN_ARCH_X86_64
  saved_ = force_variant(xnn_init_f32_gemm_config(), f32_gemm_configs(), name,
                         [](xnn_gemm_config* config, const F32GemmConfig& c) {
                           std::memset(&config->minmax, 0, sizeof config->minmax);
                           std::memset(&config->linear, 0, sizeof config->linear);
                           std::memset(&config->relu, 0, sizeof config->relu);
                           config->minmax.gemm[0] = xnn_init_hmp_gemm_ukernel(c.gemm_1);
                           config->minmax.gemm[c.mr - 1] = xnn_init_hmp_gemm_ukernel(c.gemm_mr);
                           config->minmax.igemm[0] = xnn_init_hmp_igemm_ukernel(c.igemm_1);
                           config->minmax.igemm[c.mr - 1] = xnn_init_hmp_igemm_ukernel(c.igemm_mr);
                           config->pack_gemm_goi = c.pack;
                           config->mr = c.mr;
                           config->nr = c.nr;
                           config->log2_kr = 0;
                           config->log2_sr = c.log2_sr;
                         });
#else
  (void)name;
#endif
}

ScopedF32GemmVariant::~ScopedF32GemmVariant() { restore_config(saved_, xnn_init_f32_gemm_config()); }

}  // namespace testing
}  // namespace ember
