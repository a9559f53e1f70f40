// Batch normalisation over dim 1 of float32 [N, C, ...] tensors: batch_norm.default,
// native_batch_norm.default, _native_batch_norm_legit{,_no_training,_functional}.default,
// _native_batch_norm_legit.no_stats, _batch_norm_with_update{,_functional}.default, and
// instance_norm.default.
// Evaluation uses running statistics. Training mode normalises with the batch mean and the
// biased variance, returns mean / invstd, and moves the running statistics by `momentum`
// towards the batch mean and the unbiased variance: in place for the ops whose schema marks
// them mutable (batch_norm, native_batch_norm, _native_batch_norm_legit,
// _batch_norm_with_update, instance_norm), as extra outputs for the *_functional ops.
#include <cmath>

#include "kernels/portable/linalg/vector_ops.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/tensor_util.h"
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
  double momentum = 0.1;
  double eps = 1e-5;
  bool update_in_place = false;   // training: update running_mean/var (the (a!) schema args)
  Tensor* out = nullptr;
  Tensor* save_mean = nullptr;    // optional outputs
  Tensor* save_invstd = nullptr;
  Tensor* reserve = nullptr;      // _batch_norm_with_update*: always empty
  Tensor* running_mean_out = nullptr;  // *_functional: updated running statistics
  Tensor* running_var_out = nullptr;
};

bool check_channel_vector(KernelArgs& a, const Tensor* t, int64_t channels) {
  if (t == nullptr) return true;
  if (!require_float(a, t)) return false;
  if (t->numel() != channels) return a.fail("per-channel tensor has the wrong size");
  return true;
}

inline bool planned_empty(const Tensor* t) { return t != nullptr && t->rank == 1 && t->max_sizes[0] == 0; }

// Resizes an optional per-channel statistics output to [C] (or leaves a planned-empty [0],
// as PyTorch returns empty tensors in evaluation mode).
bool prepare_stat(KernelArgs& a, Tensor* t, int64_t channels, bool empty_ok) {
  if (t == nullptr) return true;
  if (!require_float(a, t)) return false;
  if (empty_ok && planned_empty(t)) return true;
  if (t->rank != 1) return a.fail("statistics output must be 1-D");
  const int64_t shape[1] = {channels};
  return resize_out(a, t, shape, 1);
}

inline bool writes(const Tensor* t) { return t != nullptr && t->rank == 1 && t->sizes[0] > 0; }

// [N, C, inner...] extents of a normalisation input.
struct ChannelDims {
  int64_t batch = 0, channels = 0, inner = 1;
};

// Checks float32 `input` (rank >= 2, else `rank_message`) and `out`, and that each given
// per-channel tensor has C elements.
Error check_channel_layout(KernelContext& ctx, KernelArgs& a, const char* rank_message, const Tensor* input,
                           const Tensor* out, const Tensor* const (&per_channel)[4], ChannelDims* dims) {
  if (!require_float(a, input) || !require_float(a, out)) return a.error();
  if (input->rank < 2) return ctx.fail(Error::InvalidArgument, rank_message);
  dims->batch = input->sizes[0];
  dims->channels = input->sizes[1];
  dims->inner = 1;
  for (int d = 2; d < input->rank; ++d) dims->inner *= input->sizes[d];
  for (const Tensor* t : per_channel) {
    if (!check_channel_vector(a, t, dims->channels)) return a.error();
  }
  return Error::Ok;
}

Error run_batch_norm(KernelContext& ctx, KernelArgs& a, BatchNormArgs& b) {
  ChannelDims dims;
  Error e = check_channel_layout(ctx, a, "batch_norm input must be at least 2-D", b.input, b.out,
                                 {b.weight, b.bias, b.running_mean, b.running_var}, &dims);
  if (e != Error::Ok) return e;
  const int64_t batch = dims.batch, channels = dims.channels, inner = dims.inner;
  if (!b.training && (b.running_mean == nullptr || b.running_var == nullptr)) {
    return ctx.fail(Error::InvalidArgument, "evaluation mode needs running_mean and running_var");
  }
  if ((b.running_mean_out != nullptr || b.running_var_out != nullptr) &&
      (b.running_mean == nullptr || b.running_var == nullptr)) {
    return ctx.fail(Error::InvalidArgument, "updated running statistics need running_mean and running_var");
  }
  if (!resize_out(a, b.out, b.input->sizes, b.input->rank)) return a.error();
  if (!prepare_stat(a, b.save_mean, channels, !b.training) || !prepare_stat(a, b.save_invstd, channels, !b.training) ||
      !prepare_stat(a, b.running_mean_out, channels, false) || !prepare_stat(a, b.running_var_out, channels, false)) {
    return a.error();
  }
  if (b.reserve != nullptr) {
    const int64_t zero[1] = {0};
    if (b.reserve->rank != 1 || resize_tensor(*b.reserve, Span<const int64_t>(zero, 1)) != Error::Ok) {
      return ctx.fail(Error::InvalidArgument, "reserve output must be a 1-D empty tensor");
    }
  }
  const float* x = b.input->data_as<float>();
  float* o = b.out->data_as<float>();
  const BatchNormArgs& args = b;
  const double count = static_cast<double>(batch * inner);
  // One channel at a time: statistics (batch or running), normalisation of its N planes,
  // then the per-channel outputs. No scratch memory; parallel over channels.
  parallel_for_range(ctx, channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      double mean, var, invstd;
      const double rm = args.running_mean != nullptr ? args.running_mean->data_as<float>()[c] : 0.0;
      const double rv = args.running_var != nullptr ? args.running_var->data_as<float>()[c] : 1.0;
      if (args.training) {
        double s = 0.0, ss = 0.0;
        for (int64_t nb = 0; nb < batch; ++nb) {
          const float* p = x + (nb * channels + c) * inner;
          for (int64_t i = 0; i < inner; ++i) s += p[i];
        }
        mean = count > 0 ? s / count : 0.0;
        for (int64_t nb = 0; nb < batch; ++nb) {
          const float* p = x + (nb * channels + c) * inner;
          for (int64_t i = 0; i < inner; ++i) ss += (p[i] - mean) * (p[i] - mean);
        }
        var = count > 0 ? ss / count : 0.0;
      } else {
        mean = rm;
        var = rv;
      }
      invstd = 1.0 / std::sqrt(var + args.eps);
      const double w = args.weight != nullptr ? args.weight->data_as<float>()[c] : 1.0;
      const double bb = args.bias != nullptr ? args.bias->data_as<float>()[c] : 0.0;
      const float sc = static_cast<float>(w * invstd), sh = static_cast<float>(bb - mean * w * invstd);
      for (int64_t nb = 0; nb < batch; ++nb) {
        const int64_t plane = nb * channels + c;
        scale_shift(inner, x + plane * inner, sc, sh, o + plane * inner);
      }
      if (writes(args.save_mean)) args.save_mean->data_as<float>()[c] = static_cast<float>(mean);
      if (writes(args.save_invstd)) args.save_invstd->data_as<float>()[c] = static_cast<float>(invstd);
      // Running statistics: biased variance normalises, the unbiased one updates.
      double new_rm = rm, new_rv = rv;
      if (args.training) {
        const double unbiased = count > 1 ? var * count / (count - 1) : var;
        new_rm = (1.0 - args.momentum) * rm + args.momentum * mean;
        new_rv = (1.0 - args.momentum) * rv + args.momentum * unbiased;
      }
      if (args.running_mean_out != nullptr) args.running_mean_out->data_as<float>()[c] = static_cast<float>(new_rm);
      if (args.running_var_out != nullptr) args.running_var_out->data_as<float>()[c] = static_cast<float>(new_rv);
      if (args.training && args.update_in_place) {
        if (args.running_mean != nullptr) args.running_mean->data_as<float>()[c] = static_cast<float>(new_rm);
        if (args.running_var != nullptr) args.running_var->data_as<float>()[c] = static_cast<float>(new_rv);
      }
    }
  });
  return Error::Ok;
}

// Where each argument of one batch-norm overload sits in `args` (-1: the overload has none).
// Every overload starts with (input, weight?, bias?).
struct Layout {
  int num_args;
  int running;            // running_mean; running_var follows
  bool running_optional;  // Tensor? running statistics
  int training;           // -1: fixed to `training_value`
  bool training_value;
  int momentum;
  int eps;
  bool update_in_place;   // training updates the (a!) running statistics
  int out;                // the first output; save_mean, save_invstd follow when `saves`
  bool saves;
  int reserve;
  int running_out;        // *_functional: running_mean_out; running_var_out follows
};

// Reads the arguments in schema order (so the first bad one is the one reported) and runs.
template <const Layout& L>
Error batch_norm_op(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(static_cast<size_t>(L.num_args))) return a.error();
  BatchNormArgs b;
  b.input = a.tensor(0);
  b.weight = a.optional_tensor(1);
  b.bias = a.optional_tensor(2);
  if (L.running >= 0) {
    b.running_mean = L.running_optional ? a.optional_tensor(L.running) : a.tensor(L.running);
    b.running_var = L.running_optional ? a.optional_tensor(L.running + 1) : a.tensor(L.running + 1);
  }
  b.training = L.training >= 0 ? a.bool_value(L.training) : L.training_value;
  if (L.momentum >= 0) b.momentum = a.scalar(L.momentum);
  b.eps = a.scalar(L.eps);
  b.update_in_place = L.update_in_place;
  b.out = a.tensor(L.out);
  if (L.saves) {
    b.save_mean = a.tensor(L.out + 1);
    b.save_invstd = a.tensor(L.out + 2);
  }
  if (L.reserve >= 0) b.reserve = a.tensor(L.reserve);
  if (L.running_out >= 0) {
    b.running_mean_out = a.tensor(L.running_out);
    b.running_var_out = a.tensor(L.running_out + 1);
  }
  if (!a.ok()) return a.error();
  if (L.running < 0 && !b.training) {
    return ctx.fail(Error::InvalidArgument, "no_stats batch norm needs training=True");
  }
  return run_batch_norm(ctx, a, b);
}

// The overloads. Layout fields: num_args, running, running_optional, training, training_value,
// momentum, eps, update_in_place, out, saves, reserve, running_out.
// batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum, eps, cudnn_enabled)
constexpr Layout kBatchNorm{10, 3, true, 5, false, 6, 7, true, 9, false, -1, -1};
// native_batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum, eps)
//   -> (out, save_mean, save_invstd)
constexpr Layout kNativeBatchNorm{11, 3, true, 5, false, 6, 7, true, 8, true, -1, -1};
// _native_batch_norm_legit_no_training(input, weight?, bias?, running_mean, running_var, momentum, eps)
//   -> (out, save_mean, save_invstd)
constexpr Layout kLegitNoTraining{10, 3, false, -1, false, -1, 6, false, 7, true, -1, -1};
// _native_batch_norm_legit(input, weight?, bias?, running_mean(a!), running_var(b!), training,
//   momentum, eps) -> (out, save_mean, save_invstd); _functional takes the running statistics
//   by value and returns their updated values as two more outputs.
constexpr Layout kLegit{11, 3, false, 5, false, 6, 7, true, 8, true, -1, -1};
constexpr Layout kLegitFunctional{13, 3, false, 5, false, 6, 7, false, 8, true, -1, 11};
// _native_batch_norm_legit.no_stats(input, weight?, bias?, training, momentum, eps)
//   -> (out, save_mean, save_invstd); training must be True.
constexpr Layout kLegitNoStats{9, -1, false, 3, false, 4, 5, false, 6, true, -1, -1};
// _batch_norm_with_update(input, weight?, bias?, running_mean(a!), running_var(b!), momentum, eps)
//   -> (out, save_mean, save_invstd, reserve); _functional returns the updated running
//   statistics as two more outputs instead of writing them.
constexpr Layout kWithUpdate{11, 3, false, -1, true, 5, 6, true, 7, true, 10, -1};
constexpr Layout kWithUpdateFunctional{13, 3, false, -1, true, 5, 6, false, 7, true, 10, 11};

// instance_norm(input, weight?, bias?, running_mean?, running_var?, use_input_stats, momentum,
//   eps, cudnn_enabled) -> out. With use_input_stats each (n, c) plane is normalised by its own
//   statistics and the running statistics (when given) move towards the batch average of the
//   per-instance mean / unbiased variance; otherwise the running statistics are used.
Error instance_norm(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(10)) return a.error();
  Tensor* in = a.tensor(0);
  Tensor* weight = a.optional_tensor(1);
  Tensor* bias = a.optional_tensor(2);
  Tensor* rm = a.optional_tensor(3);
  Tensor* rv = a.optional_tensor(4);
  const bool use_input_stats = a.bool_value(5);
  const double momentum = a.scalar(6);
  const double eps = a.scalar(7);
  Tensor* out = a.tensor(9);
  if (!a.ok()) return a.error();
  if (!use_input_stats) {
    BatchNormArgs b;
    b.input = in;
    b.weight = weight;
    b.bias = bias;
    b.running_mean = rm;
    b.running_var = rv;
    b.eps = eps;
    b.out = out;
    return run_batch_norm(ctx, a, b);
  }
  ChannelDims dims;
  Error e = check_channel_layout(ctx, a, "instance_norm input must be at least 2-D", in, out,
                                 {weight, bias, rm, rv}, &dims);
  if (e != Error::Ok) return e;
  const int64_t batch = dims.batch, channels = dims.channels, inner = dims.inner;
  if (!resize_out(a, out, in->sizes, in->rank)) return a.error();
  const float* x = in->data_as<float>();
  float* o = out->data_as<float>();
  const double count = static_cast<double>(inner);
  auto plane_stats = [&](int64_t plane, double* mean, double* var) {
    const float* p = x + plane * inner;
    double s = 0.0, ss = 0.0;
    for (int64_t i = 0; i < inner; ++i) s += p[i];
    *mean = count > 0 ? s / count : 0.0;
    for (int64_t i = 0; i < inner; ++i) ss += (p[i] - *mean) * (p[i] - *mean);
    *var = count > 0 ? ss / count : 0.0;
  };
  parallel_for_range(ctx, batch * channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t c = plane % channels;
      double mean, var;
      plane_stats(plane, &mean, &var);
      const double invstd = 1.0 / std::sqrt(var + eps);
      const double w = weight != nullptr ? weight->data_as<float>()[c] : 1.0;
      const double bb = bias != nullptr ? bias->data_as<float>()[c] : 0.0;
      scale_shift(inner, x + plane * inner, static_cast<float>(w * invstd),
                  static_cast<float>(bb - mean * w * invstd), o + plane * inner);
    }
  });
  if (rm != nullptr || rv != nullptr) {
    for (int64_t c = 0; c < channels; ++c) {
      double mean_sum = 0.0, var_sum = 0.0;
      for (int64_t nb = 0; nb < batch; ++nb) {
        double mean, var;
        plane_stats(nb * channels + c, &mean, &var);
        mean_sum += mean;
        var_sum += count > 1 ? var * count / (count - 1) : var;
      }
      if (batch == 0) continue;
      if (rm != nullptr) {
        float& r = rm->data_as<float>()[c];
        r = static_cast<float>((1.0 - momentum) * r + momentum * mean_sum / static_cast<double>(batch));
      }
      if (rv != nullptr) {
        float& r = rv->data_as<float>()[c];
        r = static_cast<float>((1.0 - momentum) * r + momentum * var_sum / static_cast<double>(batch));
      }
    }
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::batch_norm.default", batch_norm_op<kBatchNorm>);
EMBER_REGISTER_KERNEL("aten::native_batch_norm.default", batch_norm_op<kNativeBatchNorm>);
EMBER_REGISTER_KERNEL("aten::_native_batch_norm_legit_no_training.default", batch_norm_op<kLegitNoTraining>);
EMBER_REGISTER_KERNEL("aten::_native_batch_norm_legit.default", batch_norm_op<kLegit>);
EMBER_REGISTER_KERNEL("aten::_native_batch_norm_legit.no_stats", batch_norm_op<kLegitNoStats>);
EMBER_REGISTER_KERNEL("aten::_native_batch_norm_legit_functional.default", batch_norm_op<kLegitFunctional>);
EMBER_REGISTER_KERNEL("aten::_batch_norm_with_update.default", batch_norm_op<kWithUpdate>);
EMBER_REGISTER_KERNEL("aten::_batch_norm_with_update_functional.default", batch_norm_op<kWithUpdateFunctional>);
EMBER_REGISTER_KERNEL("aten::instance_norm.default", instance_norm);

}  // namespace portable
}  // namespace ember
