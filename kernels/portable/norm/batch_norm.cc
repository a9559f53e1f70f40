// Batch normalisation over dim 1 of float32 [N, C, ...] tensors:
// batch_norm.default, native_batch_norm.default, _native_batch_norm_legit_no_training.default.
// Evaluation uses running statistics; training mode (batch statistics) is computed but the
// running statistics are not updated (inference runtime).
#include <cmath>

#include "kernels/portable/linalg/vector_ops.h"
#include "kernels/portable/nn/op_helpers.h"
#include "kernels/portable/util/kernel_args.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

struct BatchNormArgs {
  Tensor* input = nullptr;
  Tensor* weight = nullptr;
  Tensor* bias = nullptr;
  Tensor* running_mean = nullptr;
  Tensor* running_var = nullptr;
  bool training = false;
  double eps = 1e-5;
  Tensor* out = nullptr;
  Tensor* save_mean = nullptr;    // optional outputs
  Tensor* save_invstd = nullptr;
};

bool check_channel_vector(KernelArgs& a, const Tensor* t, int64_t channels) {
  if (t == nullptr) return true;
  if (!require_float(a, t)) return false;
  if (t->numel() != channels) return a.fail("per-channel tensor has the wrong size");
  return true;
}

// Writes per-channel statistics to an optional [C] output, or leaves it empty ([0]) when it
// was planned empty (PyTorch returns empty tensors in evaluation mode).
bool write_stat(KernelArgs& a, Tensor* t, const float* values, int64_t channels, bool empty_ok) {
  if (t == nullptr) return true;
  if (!require_float(a, t)) return false;
  if (t->rank == 1 && t->sizes[0] == 0 && empty_ok) return true;
  if (values == nullptr) return channels == 0 || a.fail("missing statistics", Error::Internal);
  const int64_t shape[1] = {channels};
  if (t->rank != 1) return a.fail("statistics output must be 1-D");
  if (!resize_out(a, t, shape, 1)) return false;
  for (int64_t c = 0; c < channels; ++c) t->data_as<float>()[c] = values[c];
  return true;
}

Error run_batch_norm(KernelContext& ctx, KernelArgs& a, BatchNormArgs& b) {
  if (!require_float(a, b.input) || !require_float(a, b.out)) return a.error();
  if (b.input->rank < 2) return ctx.fail(Error::InvalidArgument, "batch_norm input must be at least 2-D");
  const int64_t batch = b.input->sizes[0], channels = b.input->sizes[1];
  int64_t inner = 1;
  for (int d = 2; d < b.input->rank; ++d) inner *= b.input->sizes[d];
  if (!check_channel_vector(a, b.weight, channels) || !check_channel_vector(a, b.bias, channels) ||
      !check_channel_vector(a, b.running_mean, channels) || !check_channel_vector(a, b.running_var, channels)) {
    return a.error();
  }
  if (!b.training && (b.running_mean == nullptr || b.running_var == nullptr)) {
    return ctx.fail(Error::InvalidArgument, "evaluation mode needs running_mean and running_var");
  }
  if (!resize_out(a, b.out, b.input->sizes, b.input->rank)) return a.error();
  const float* x = b.input->data_as<float>();
  // Training mode needs batch statistics first: 2 * C floats of scratch (mean, invstd).
  float* stats = nullptr;
  if (b.training) {
    stats = static_cast<float*>(ctx.allocate_temp(sizeof(float) * 2 * static_cast<size_t>(channels)));
    if (stats == nullptr && channels > 0) {
      return ctx.fail(Error::OutOfMemory, "training-mode batch_norm needs 8 * channels bytes of temp memory");
    }
    const double count = static_cast<double>(batch * inner);
    for (int64_t c = 0; c < channels; ++c) {
      double s = 0.0, ss = 0.0;
      for (int64_t nb = 0; nb < batch; ++nb) {
        const float* p = x + (nb * channels + c) * inner;
        for (int64_t i = 0; i < inner; ++i) s += p[i];
      }
      const double mean = count > 0 ? s / count : 0.0;
      for (int64_t nb = 0; nb < batch; ++nb) {
        const float* p = x + (nb * channels + c) * inner;
        for (int64_t i = 0; i < inner; ++i) ss += (p[i] - mean) * (p[i] - mean);
      }
      const double var = count > 0 ? ss / count : 0.0;
      stats[c] = static_cast<float>(mean);
      stats[channels + c] = static_cast<float>(1.0 / std::sqrt(var + b.eps));
    }
  }
  const BatchNormArgs& args = b;
  float* o = b.out->data_as<float>();
  parallel_for_range(ctx, batch * channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t c = plane % channels;
      double mean, invstd;
      if (stats != nullptr) {
        mean = stats[c];
        invstd = stats[channels + c];
      } else {
        mean = args.running_mean->data_as<float>()[c];
        invstd = 1.0 / std::sqrt(static_cast<double>(args.running_var->data_as<float>()[c]) + args.eps);
      }
      const double w = args.weight != nullptr ? args.weight->data_as<float>()[c] : 1.0;
      const double bb = args.bias != nullptr ? args.bias->data_as<float>()[c] : 0.0;
      const float sc = static_cast<float>(w * invstd), sh = static_cast<float>(bb - mean * w * invstd);
      scale_shift(inner, x + plane * inner, sc, sh, o + plane * inner);
    }
  });
  // Statistics outputs: batch statistics in training mode; in evaluation mode PyTorch returns
  // empty tensors, so a planned [0] stays empty and a planned [C] gets the running statistics.
  float* mean_out = nullptr;
  float* invstd_out = nullptr;
  if (b.save_mean != nullptr || b.save_invstd != nullptr) {
    if (stats == nullptr && channels > 0) {
      bool want = (b.save_mean != nullptr && !(b.save_mean->rank == 1 && b.save_mean->sizes[0] == 0)) ||
                  (b.save_invstd != nullptr && !(b.save_invstd->rank == 1 && b.save_invstd->sizes[0] == 0));
      if (want) {
        stats = static_cast<float*>(ctx.allocate_temp(sizeof(float) * 2 * static_cast<size_t>(channels)));
        if (stats == nullptr) return ctx.fail(Error::OutOfMemory, "statistics outputs need temp memory");
        for (int64_t c = 0; c < channels; ++c) {
          stats[c] = b.running_mean->data_as<float>()[c];
          stats[channels + c] = static_cast<float>(
              1.0 / std::sqrt(static_cast<double>(b.running_var->data_as<float>()[c]) + b.eps));
        }
      }
    }
    mean_out = stats;
    invstd_out = stats != nullptr ? stats + channels : nullptr;
  }
  if (!write_stat(a, b.save_mean, mean_out, channels, !b.training) ||
      !write_stat(a, b.save_invstd, invstd_out, channels, !b.training)) {
    return a.error();
  }
  return Error::Ok;
}

// batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum, eps, cudnn_enabled)
Error batch_norm(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(10)) return a.error();
  BatchNormArgs b;
  b.input = a.tensor(0);
  b.weight = a.optional_tensor(1);
  b.bias = a.optional_tensor(2);
  b.running_mean = a.optional_tensor(3);
  b.running_var = a.optional_tensor(4);
  b.training = a.bool_value(5);
  b.eps = a.scalar(7);
  b.out = a.tensor(9);
  if (!a.ok()) return a.error();
  return run_batch_norm(ctx, a, b);
}

// native_batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum, eps)
//   -> (out, save_mean, save_invstd)
Error native_batch_norm(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(11)) return a.error();
  BatchNormArgs b;
  b.input = a.tensor(0);
  b.weight = a.optional_tensor(1);
  b.bias = a.optional_tensor(2);
  b.running_mean = a.optional_tensor(3);
  b.running_var = a.optional_tensor(4);
  b.training = a.bool_value(5);
  b.eps = a.scalar(7);
  b.out = a.tensor(8);
  b.save_mean = a.tensor(9);
  b.save_invstd = a.tensor(10);
  if (!a.ok()) return a.error();
  return run_batch_norm(ctx, a, b);
}

// _native_batch_norm_legit_no_training(input, weight?, bias?, running_mean, running_var, momentum, eps)
//   -> (out, save_mean, save_invstd)
Error native_batch_norm_legit_no_training(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(10)) return a.error();
  BatchNormArgs b;
  b.input = a.tensor(0);
  b.weight = a.optional_tensor(1);
  b.bias = a.optional_tensor(2);
  b.running_mean = a.tensor(3);
  b.running_var = a.tensor(4);
  b.eps = a.scalar(6);
  b.out = a.tensor(7);
  b.save_mean = a.tensor(8);
  b.save_invstd = a.tensor(9);
  if (!a.ok()) return a.error();
  return run_batch_norm(ctx, a, b);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::batch_norm.default", batch_norm);
EMBER_REGISTER_KERNEL("aten::native_batch_norm.default", native_batch_norm);
EMBER_REGISTER_KERNEL("aten::_native_batch_norm_legit_no_training.default",
                      native_batch_norm_legit_no_training);

}  // namespace portable
}  // namespace ember
