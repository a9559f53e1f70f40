// `ember eval MODEL.pte --images X.npy --labels Y.npy [--method NAME] [--threads N]
//  [--predictions OUT.npy]`: classification accuracy of a program on a labelled set.
// X is [N, ...] float32 whose trailing sizes are the method's first input's without its batch
// dimension; Y is [N] integer class labels. The images run in batches of the input's batch
// size (the last batch padded with zeros, its padding ignored); the predicted class of an
// image is the argmax of the first output's row ([B, classes]). Prints top-1 accuracy and the
// per-class recall; --predictions writes the predicted classes as int64 [N].
// Exit 0 on success, 1 on a load/run error, 2 on usage errors.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "extension/module/module.h"
#include "tools/commands/command_registry.h"
#include "tools/commands/command_util.h"

namespace ember {
namespace tools {
namespace {

int64_t label_at(const TensorPtr& labels, int64_t i) {
  switch (labels.dtype()) {
    case ScalarType::Int64: return labels.data<int64_t>()[i];
    case ScalarType::Int32: return labels.data<int32_t>()[i];
    case ScalarType::UInt8: return labels.data<uint8_t>()[i];
    default: return labels.data<int8_t>()[i];
  }
}

// Argmax of one row of the output; ties go to the lowest index (as torch.argmax).
int64_t argmax_row(const Output& out, int64_t row, int64_t classes) {
  const float* p = out.data<float>() + row * classes;
  int64_t best = 0;
  for (int64_t c = 1; c < classes; ++c) {
    if (p[c] > p[best]) best = c;
  }
  return best;
}

}  // namespace

int eval_command(int argc, char** argv) {
  std::string model_path, images_path, labels_path, predictions_path, method = "forward";
  size_t threads = 1;
  ModuleOptions module_options;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ember eval: %s needs a value\n", flag);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--images") {
      images_path = value("--images");
    } else if (a == "--labels") {
      labels_path = value("--labels");
    } else if (a == "--method") {
      method = value("--method");
    } else if (a == "--predictions") {
      predictions_path = value("--predictions");
    } else if (a == "--threads") {
      if (!parse_count(value("--threads"), &threads)) return usage_error("eval", "--threads must be a positive integer");
    } else if (take_data_flag(a, [&] { return value(a.c_str()); }, &module_options)) {
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: ember eval MODEL.pte --images X.npy --labels Y.npy [--method NAME] [--threads N]\n"
                  "                  [--predictions OUT.npy]\n"
                  "Top-1 accuracy of a classifier: X is [N, ...] float32 (the input's sizes without its batch\n"
                  "dimension), Y is [N] integer labels; the argmax of the first output is the prediction.\n%s",
                  kDataFlagsUsage);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("eval", ("unknown flag " + a).c_str());
    } else if (model_path.empty()) {
      model_path = a;
    } else {
      return usage_error("eval", ("unexpected argument " + a).c_str());
    }
  }
  if (model_path.empty() || images_path.empty() || labels_path.empty()) {
    return usage_error("eval", "needs MODEL.pte, --images X.npy and --labels Y.npy");
  }
  Expected<TensorPtr> images = read_npy(images_path);
  if (!images.ok()) return report_error("eval", images.error());
  Expected<TensorPtr> labels = read_npy(labels_path);
  if (!labels.ok()) return report_error("eval", labels.error());

  Module module(model_path, module_options);
  Status status = module.set_num_threads(threads);
  if (!status.ok()) return report_error("eval", status);
  Expected<MethodMeta> meta = module.method_meta(method);
  if (!meta.ok()) return report_error("eval", meta.error());
  if (meta->num_inputs() != 1 || meta->input_tag(0) != ValueTag::Tensor) {
    return report_error("eval", Status(Error::InvalidArgument, "ember eval needs a method with one tensor input"));
  }
  Result<TensorInfo> info = meta->input_tensor_info(0);
  if (!info.ok() || info->dtype != ScalarType::Float32 || info->max_sizes.size() < 1) {
    return report_error("eval", Status(Error::InvalidArgument, "the method's input must be a float32 tensor with a batch dimension"));
  }
  const std::vector<int64_t> in_sizes(info->max_sizes.begin(), info->max_sizes.end());
  const int64_t batch = in_sizes[0];

  // Shapes: X [N, in_sizes[1:]...] float32, Y [N] integers.
  const std::vector<int64_t>& xs = images->sizes();
  bool shape_ok = images->dtype() == ScalarType::Float32 && xs.size() == in_sizes.size() && batch > 0;
  for (size_t d = 1; shape_ok && d < xs.size(); ++d) shape_ok = xs[d] == in_sizes[d];
  if (!shape_ok) {
    std::string want = "[N";
    for (size_t d = 1; d < in_sizes.size(); ++d) want += ", " + std::to_string(in_sizes[d]);
    return report_error("eval", Status(Error::InvalidArgument, "--images must be float32 " + want + "]: the input's sizes without the batch dimension"));
  }
  const int64_t n = xs[0];
  const ScalarType lt = labels->dtype();
  if (labels->sizes().size() != 1 || labels->sizes()[0] != n ||
      (lt != ScalarType::Int64 && lt != ScalarType::Int32 && lt != ScalarType::UInt8 && lt != ScalarType::Int8)) {
    return report_error("eval", Status(Error::InvalidArgument, "--labels must be [N] integers, N the number of images"));
  }

  const int64_t per_image = images->numel() / (n > 0 ? n : 1);
  TensorPtr batch_input = zeros(in_sizes);
  std::vector<int64_t> predictions(static_cast<size_t>(n), 0);
  int64_t classes = -1, correct = 0;
  std::vector<int64_t> class_total, class_correct;
  for (int64_t start = 0; start < n; start += batch) {
    const int64_t count = n - start < batch ? n - start : batch;
    std::memset(batch_input.raw_data(), 0, batch_input.nbytes());
    std::memcpy(batch_input.raw_data(), images->data<float>() + start * per_image,
                static_cast<size_t>(count * per_image) * sizeof(float));
    Expected<Outputs> outs = module.execute(method, {batch_input});
    if (!outs.ok()) return report_error("eval", outs.error());
    const Output& out = outs->at(0);
    if (!out.is_tensor() || out.dtype() != ScalarType::Float32 || out.sizes().size() != 2 || out.sizes()[0] != batch ||
        out.sizes()[1] < 1) {
      return report_error("eval", Status(Error::InvalidArgument, "the first output must be float32 [batch, classes] scores"));
    }
    if (classes < 0) {
      classes = out.sizes()[1];
      class_total.assign(static_cast<size_t>(classes), 0);
      class_correct.assign(static_cast<size_t>(classes), 0);
    }
    for (int64_t r = 0; r < count; ++r) {
      const int64_t label = label_at(*labels, start + r);
      if (label < 0 || label >= classes) {
        return report_error("eval", Status(Error::InvalidArgument, "label " + std::to_string(label) + " of image " +
                                                                       std::to_string(start + r) + " is not a class of the model's output"));
      }
      const int64_t p = argmax_row(out, r, classes);
      predictions[static_cast<size_t>(start + r)] = p;
      class_total[static_cast<size_t>(label)]++;
      if (p == label) {
        correct++;
        class_correct[static_cast<size_t>(label)]++;
      }
    }
  }
  std::printf("accuracy: %.2f%% (%lld of %lld)\n", n > 0 ? 100.0 * static_cast<double>(correct) / static_cast<double>(n) : 0.0,
              static_cast<long long>(correct), static_cast<long long>(n));
  for (int64_t c = 0; c < classes; ++c) {
    if (class_total[static_cast<size_t>(c)] == 0) continue;
    std::printf("  class %lld: %.2f%% of %lld\n", static_cast<long long>(c),
                100.0 * static_cast<double>(class_correct[static_cast<size_t>(c)]) / static_cast<double>(class_total[static_cast<size_t>(c)]),
                static_cast<long long>(class_total[static_cast<size_t>(c)]));
  }
  if (!predictions_path.empty()) {
    TensorPtr p = from_blob(predictions.data(), {n}, ScalarType::Int64);
    Status s = write_npy(predictions_path, p.tensor());
    if (!s.ok()) return report_error("eval", s);
  }
  return 0;
}

}  // namespace tools
}  // namespace ember

EMBER_REGISTER_COMMAND(eval, "top-1 accuracy of a classifier program on a labelled .npy set",
                       ember::tools::eval_command);
