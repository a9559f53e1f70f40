// Runs a program that calls the custom operator ember_example::scaled_tanh through the
// Module API. The kernel is scaled_tanh_kernel.cc, linked into this binary: it registers at
// start-up, before the program loads. Usage: custom_op_app MODEL.pte INPUT.npy
#include <cstdio>

#include "extension/module/module.h"

int main(int argc, char** argv) {
  if (argc != 3) return std::fprintf(stderr, "usage: %s MODEL.pte INPUT.npy\n", argv[0]), 2;
  auto input = ember::read_npy(argv[2]);
  if (!input.ok()) return std::fprintf(stderr, "%s\n", input.error().to_string().c_str()), 1;
  ember::Module model(argv[1]);
  auto out = model.forward({*input});
  if (!out.ok()) return std::fprintf(stderr, "%s\n", out.error().to_string().c_str()), 1;
  const ember::Output& y = out->at(0);
  std::printf("output 0 (%lld values):", static_cast<long long>(y.numel()));
  for (int64_t i = 0; i < y.numel(); ++i) std::printf(" %.6f", y.data<float>()[i]);
  std::printf("\n");
  return 0;
}
