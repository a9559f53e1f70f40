// An app outside Ember's Bazel build, built against an installed SDK (find_package(Ember) or
// pkg-config): runs a .pte on an input .npy and checks output 0 against a reference .npy.
// Usage: ember_app MODEL.pte INPUT.npy REFERENCE.npy [MAX_REL_L2 (default 1e-4)] [THREADS]
// Exit status: 0 match, 1 mismatch or error, 2 usage.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "extension/module/module.h"
#include "runtime/version.h"

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6) {
    std::fprintf(stderr, "usage: %s MODEL.pte INPUT.npy REFERENCE.npy [MAX_REL_L2] [THREADS]\n", argv[0]);
    return 2;
  }
  const double tolerance = argc > 4 ? std::atof(argv[4]) : 1e-4;
  const int threads = argc > 5 ? std::atoi(argv[5]) : 1;
  if (!(tolerance > 0) || threads < 1) {
    std::fprintf(stderr, "MAX_REL_L2 must be > 0 and THREADS >= 1\n");
    return 2;
  }
  auto input = ember::read_npy(argv[2]);
  auto reference = ember::read_npy(argv[3]);
  if (!input.ok()) return std::fprintf(stderr, "%s\n", input.error().to_string().c_str()), 1;
  if (!reference.ok()) return std::fprintf(stderr, "%s\n", reference.error().to_string().c_str()), 1;

  ember::Module model(argv[1]);
  ember::Status st = model.set_num_threads(static_cast<size_t>(threads));
  if (!st.ok()) return std::fprintf(stderr, "%s\n", st.to_string().c_str()), 1;
  // Fails naming the missing kernels if the static registrations were not linked.
  auto out = model.forward({*input});
  if (!out.ok()) return std::fprintf(stderr, "%s\n", out.error().to_string().c_str()), 1;
  const ember::Output& o = out->at(0);
  if (o.dtype() != ember::ScalarType::Float32 || reference->dtype() != ember::ScalarType::Float32 ||
      o.numel() != reference->numel()) {
    std::fprintf(stderr, "output 0 (%lld values) does not match the reference's shape or dtype (%lld values)\n",
                 static_cast<long long>(o.numel()), static_cast<long long>(reference->numel()));
    return 1;
  }
  double num = 0, den = 0;
  const float* a = o.data<float>();
  const float* r = reference->data<float>();
  for (int64_t i = 0; i < o.numel(); ++i) {
    const double d = static_cast<double>(a[i]) - r[i];
    num += d * d;
    den += static_cast<double>(r[i]) * r[i];
  }
  const double rel_l2 = std::sqrt(num) / std::max(std::sqrt(den), 1e-12);
  const bool ok = rel_l2 <= tolerance;
  std::printf("ember %s: %s output 0: %lld values, rel. L2 %.3g (max %.3g): %s\n", EMBER_VERSION_STRING, argv[1],
              static_cast<long long>(o.numel()), rel_l2, tolerance, ok ? "MATCH" : "MISMATCH");
  return ok ? 0 : 1;
}
