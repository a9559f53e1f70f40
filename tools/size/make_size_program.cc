// Writes the one-kernel program minimal_runner runs: forward(x f32[4]) = size::add_one(x).
#include <cstdio>

#include "test/support/program_builder.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_size_program OUT.pte\n");
    return 2;
  }
  ember::testing::ProgramBuilder pb;
  ember::testing::MethodBuilder& m = pb.method("forward");
  uint32_t x = m.input_tensor(ember::ScalarType::Float32, {4});
  uint32_t y = m.planned_tensor(ember::ScalarType::Float32, {4});
  m.kernel("size::add_one", "default", {static_cast<int32_t>(x), static_cast<int32_t>(y)});
  m.set_inputs({x}).set_outputs({y});
  ember::testing::PteBytes pte = pb.build();
  FILE* f = std::fopen(argv[1], "wb");
  if (f == nullptr || std::fwrite(pte.data(), 1, pte.size(), f) != pte.size()) return 1;
  std::fclose(f);
  return 0;
}
