// A model runner as an application would write it, for measuring what a selective kernel
// build saves (tools/size/measure_selective.sh): load a program with the Module API, run
// "forward" on an .npy input, compare with an expected .npy output.
//
//   model_runner PROGRAM.pte INPUT.npy EXPECTED.npy   ->  "ok: max abs diff 1.2e-06"
// Exit 1 with the runtime's one-line message when the program does not load or run (e.g. an
// operator that is not in this build), 3 when the output differs by more than 1e-3.
#include <cmath>
#include <cstdio>

#include "extension/module/module.h"
#include "extension/module/tensor_ptr.h"

int main(int argc, char** argv) {
  using namespace ember;  // NOLINT
  if (argc != 4) {
    std::fprintf(stderr, "usage: model_runner PROGRAM.pte INPUT.npy EXPECTED.npy\n");
    return 2;
  }
  Expected<TensorPtr> input = read_npy(argv[2]);
  Expected<TensorPtr> expected = read_npy(argv[3]);
  if (!input.ok() || !expected.ok()) {
    std::fprintf(stderr, "model_runner: %s\n", (!input.ok() ? input : expected).error().to_string().c_str());
    return 1;
  }
  Module module(argv[1]);
  Expected<Outputs> outputs = module.forward({*input});
  if (!outputs.ok()) {
    std::fprintf(stderr, "model_runner: %s\n", outputs.error().to_string().c_str());
    return 1;
  }
  const Output& out = (*outputs)[0];
  if (!out.is_tensor() || out.numel() != expected->numel()) {
    std::fprintf(stderr, "model_runner: output 0 has %lld elements, expected %lld\n",
                 static_cast<long long>(out.is_tensor() ? out.numel() : 0),
                 static_cast<long long>(expected->numel()));
    return 3;
  }
  double max_diff = 0;
  for (int64_t i = 0; i < out.numel(); ++i) {
    max_diff = std::fmax(max_diff, std::fabs(element_as_double(out.tensor(), i) -
                                             element_as_double(expected->tensor(), i)));
  }
  std::printf("%s: max abs diff %.3g\n", max_diff <= 1e-3 ? "ok" : "MISMATCH", max_diff);
  return max_diff <= 1e-3 ? 0 : 3;
}
