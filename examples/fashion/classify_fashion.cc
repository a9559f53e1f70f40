// Classifies Fashion-MNIST pictures (28x28 grayscale PNGs) with a trained Ember program and
// prints each picture's predicted class. Pictures named NN_<class>.png (as in images/) are
// checked against their name, and the last line counts the matches.
// Usage: classify_fashion MODEL.pte IMAGE.png... [--threads N]
#include <png.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "extension/module/module.h"

namespace {

const char* const kClasses[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                  "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

// "T-shirt/top" -> "t_shirt_top": how the class appears in the pictures' file names.
std::string slug(const char* name) {
  std::string s;
  for (const char* p = name; *p; ++p) s += std::isalnum(static_cast<unsigned char>(*p)) ? static_cast<char>(std::tolower(*p)) : '_';
  return s;
}

// A 28x28 picture as the model's input: gray levels / 255, [1, 1, 28, 28].
bool read_picture(const char* path, std::vector<float>* pixels, std::string* error) {
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&png, path)) {
    *error = std::string("cannot read PNG '") + path + "': " + png.message;
    return false;
  }
  if (png.width != 28 || png.height != 28) {
    *error = std::string(path) + " is " + std::to_string(png.width) + "x" + std::to_string(png.height) +
             "; the model takes 28x28 pictures";
    png_image_free(&png);
    return false;
  }
  png.format = PNG_FORMAT_GRAY;
  std::vector<uint8_t> gray(PNG_IMAGE_SIZE(png));
  if (!png_image_finish_read(&png, nullptr, gray.data(), 0, nullptr)) {
    *error = std::string("cannot decode PNG '") + path + "': " + png.message;
    png_image_free(&png);
    return false;
  }
  pixels->resize(gray.size());
  for (size_t i = 0; i < gray.size(); ++i) (*pixels)[i] = static_cast<float>(gray[i]) / 255.0f;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<const char*> pictures;
  const char* model_path = nullptr;
  size_t threads = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = static_cast<size_t>(std::atoi(argv[++i]));
    } else if (model_path == nullptr) {
      model_path = argv[i];
    } else {
      pictures.push_back(argv[i]);
    }
  }
  if (model_path == nullptr || pictures.empty()) {
    std::fprintf(stderr, "usage: classify_fashion MODEL.pte IMAGE.png... [--threads N]\n");
    return 2;
  }
  ember::Module model(model_path);
  ember::Status s = model.set_num_threads(threads == 0 ? 1 : threads);
  if (!s.ok()) return std::fprintf(stderr, "%s\n", s.to_string().c_str()), 1;
  int named = 0, matched = 0;
  for (const char* path : pictures) {
    std::vector<float> pixels;
    std::string error;
    if (!read_picture(path, &pixels, &error)) return std::fprintf(stderr, "%s\n", error.c_str()), 1;
    auto out = model.forward({ember::from_blob(pixels.data(), {1, 1, 28, 28})});
    if (!out.ok()) return std::fprintf(stderr, "%s\n", out.error().to_string().c_str()), 1;
    const ember::Output& logits = out->at(0);
    if (logits.numel() != 10 || logits.dtype() != ember::ScalarType::Float32) {
      return std::fprintf(stderr, "the model must return 10 float scores\n"), 1;
    }
    const float* v = logits.data<float>();
    int best = 0;
    for (int c = 1; c < 10; ++c) best = v[c] > v[best] ? c : best;
    double denom = 0;
    for (int c = 0; c < 10; ++c) denom += std::exp(static_cast<double>(v[c] - v[best]));
    const std::string name = std::strrchr(path, '/') ? std::strrchr(path, '/') + 1 : path;
    std::printf("%-22s %-12s p %.3f\n", name.c_str(), kClasses[best], 1.0 / denom);
    // NN_<class>.png: the class the picture shows.
    if (name.size() > 7 && name[2] == '_' && name.compare(name.size() - 4, 4, ".png") == 0) {
      named++;
      matched += name.substr(3, name.size() - 7) == slug(kClasses[best]) ? 1 : 0;
    }
  }
  if (named > 0) std::printf("%d of %d pictures classified as their file name says\n", matched, named);
  return 0;
}
