// Image classification with Ember: reads a PNG, resizes and normalises it the way
// torchvision's ImageNet models expect, runs the model and prints the top-5 classes.
// Usage: classify MODEL.pte IMAGE.png [--threads N]
#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "extension/module/module.h"

namespace {

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // row-major, 3 bytes per pixel
};

// Decodes any PNG (gray, palette, 16-bit, alpha) to 8-bit RGB with libpng's simplified API.
bool read_png(const char* path, Image* image, std::string* error) {
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&png, path)) {
    *error = std::string("cannot read PNG '") + path + "': " + png.message;
    return false;
  }
  png.format = PNG_FORMAT_RGB;
  image->width = static_cast<int>(png.width);
  image->height = static_cast<int>(png.height);
  image->rgb.resize(PNG_IMAGE_SIZE(png));
  if (!png_image_finish_read(&png, nullptr, image->rgb.data(), 0, nullptr)) {
    *error = std::string("cannot decode PNG '") + path + "': " + png.message;
    png_image_free(&png);
    return false;
  }
  return true;
}

// Bilinear resize to size x size, then ImageNet mean/std normalisation into NCHW float.
std::vector<float> preprocess(const Image& img, int size) {
  static const float kMean[3] = {0.485f, 0.456f, 0.406f};
  static const float kStd[3] = {0.229f, 0.224f, 0.225f};
  std::vector<float> out(3 * size * size);
  for (int y = 0; y < size; ++y) {
    float sy = std::max(0.f, (y + 0.5f) * img.height / size - 0.5f);
    int y0 = std::min(static_cast<int>(sy), img.height - 1), y1 = std::min(y0 + 1, img.height - 1);
    float wy = sy - y0;
    for (int x = 0; x < size; ++x) {
      float sx = std::max(0.f, (x + 0.5f) * img.width / size - 0.5f);
      int x0 = std::min(static_cast<int>(sx), img.width - 1), x1 = std::min(x0 + 1, img.width - 1);
      float wx = sx - x0;
      for (int c = 0; c < 3; ++c) {
        auto px = [&](int yy, int xx) { return img.rgb[(yy * img.width + xx) * 3 + c] / 255.f; };
        float v = (1 - wy) * ((1 - wx) * px(y0, x0) + wx * px(y0, x1)) +
                  wy * ((1 - wx) * px(y1, x0) + wx * px(y1, x1));
        out[(c * size + y) * size + x] = (v - kMean[c]) / kStd[c];
      }
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.pte IMAGE.png [--threads N]\n", argv[0]);
    return 2;
  }
  size_t threads = 1;
  if (argc == 5 && std::strcmp(argv[3], "--threads") == 0) threads = std::strtoul(argv[4], nullptr, 10);
  Image image;
  std::string error;
  if (!read_png(argv[2], &image, &error)) return std::fprintf(stderr, "%s\n", error.c_str()), 1;

  ember::Module model(argv[1]);
  ember::Status status = model.set_num_threads(threads == 0 ? 1 : threads);
  if (!status.ok()) return std::fprintf(stderr, "%s\n", status.to_string().c_str()), 1;
  auto meta = model.method_meta("forward");
  if (!meta.ok()) return std::fprintf(stderr, "%s\n", meta.error().to_string().c_str()), 1;
  auto info = meta->input_tensor_info(0);
  if (!info.ok() || info->max_sizes.size() != 4 || info->max_sizes[1] != 3 ||
      info->max_sizes[2] != info->max_sizes[3]) {
    std::fprintf(stderr, "the model's first input must be a 1x3xSxS image tensor\n");
    return 1;
  }
  int size = static_cast<int>(info->max_sizes[2]);
  std::vector<float> pixels = preprocess(image, size);
  auto out = model.forward({ember::from_blob(pixels.data(), {1, 3, size, size})});
  if (!out.ok()) return std::fprintf(stderr, "%s\n", out.error().to_string().c_str()), 1;

  const ember::Output& logits = out->at(0);
  int64_t classes = logits.numel();
  std::vector<int64_t> order(classes);
  std::iota(order.begin(), order.end(), 0);
  const float* v = logits.data<float>();
  int64_t k = std::min<int64_t>(5, classes);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) { return v[a] > v[b]; });
  float max_logit = v[order[0]];
  double denom = 0;
  for (int64_t i = 0; i < classes; ++i) denom += std::exp(v[i] - max_logit);
  std::printf("%s: %dx%d image -> %lld classes; top-%lld:\n", argv[2], image.width, image.height,
              static_cast<long long>(classes), static_cast<long long>(k));
  for (int64_t i = 0; i < k; ++i) {
    std::printf("  class %4lld  logit %8.4f  p %.4f\n", static_cast<long long>(order[i]), v[order[i]],
                std::exp(v[order[i]] - max_logit) / denom);
  }
  return 0;
}
