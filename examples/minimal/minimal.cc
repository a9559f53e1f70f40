// The smallest useful Ember program: load a classifier, run it on one image-sized input.
// Usage: minimal MODEL.pte
#include <cstdio>
#include <vector>

#include "extension/module/module.h"

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: %s MODEL.pte\n", argv[0]), 2;
  ember::Module model(argv[1]);  // nothing loaded until first use
  auto meta = model.method_meta("forward");
  if (!meta.ok()) return std::fprintf(stderr, "%s\n", meta.error().to_string().c_str()), 1;
  auto info = meta->input_tensor_info(0);
  std::vector<int64_t> sizes(info->max_sizes.begin(), info->max_sizes.end());
  std::vector<float> pixels(info->nbytes / sizeof(float), 0.5f);
  auto out = model.forward({ember::from_blob(pixels.data(), sizes)});
  if (!out.ok()) return std::fprintf(stderr, "%s\n", out.error().to_string().c_str()), 1;
  const float* logits = out->at(0).data<float>();
  std::printf("output 0: %lld values, first %f\n", static_cast<long long>(out->at(0).numel()), logits[0]);
  return 0;
}
