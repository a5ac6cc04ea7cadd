//===- Updates.cpp - Optimizer update kernels -----------------------------===//
//
// sgd, sgd_momentum, adam and adamw on whole tensors or shards alike. The
// parameter may be 16-bit or f32, the gradient 16-bit, the moments f32; the
// arithmetic is f32 throughout. Each block reads every input before it
// writes, so results may overwrite their inputs in place. A loss-scaled step
// passes its overflow flag last (`skip_if`): when it is set the update
// leaves the parameter and its state as they were.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"
#include "UpdateLoops.h"
#include "zero/support/Status.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

namespace zero::rt::cpu {
namespace {

/// Operands [0, ins) and results [0, outs) are float tensors of one shape,
/// and result i has the type of operand i.
absl::Status checkUpdateSpecs(const BindRequest &request, size_t ins,
                              size_t outs) {
  static constexpr absl::string_view kRoles[] = {"parameter", "gradient",
                                                 "first state", "second state"};
  const TensorSpec &param = request.ins[0];
  for (size_t i = 0; i < ins; ++i) {
    const TensorSpec &spec = request.ins[i];
    ZERO_RETURN_IF_ERROR(checkFloat(request, spec, kRoles[i]));
    if (spec.shape != param.shape)
      return request.invalid("needs every operand in the shape of the "
                             "parameter ",
                             specString(param), ", got ", specString(spec),
                             " for the ", kRoles[i]);
  }
  for (size_t i = 0; i < outs; ++i) {
    size_t operand = i == 0 ? 0 : i + 1; // Results skip the gradient.
    ZERO_RETURN_IF_ERROR(checkSameSpec(request, request.ins[operand],
                                       kRoles[operand], request.outs[i],
                                       "its updated value"));
  }
  return absl::OkStatus();
}

struct Hyper {
  float lr, weightDecay, momentum, beta1, beta2, eps;
};

absl::StatusOr<Hyper> readHyper(const BindRequest &request, bool momentum) {
  Hyper hyper{};
  struct Entry {
    absl::string_view key;
    float *slot;
    std::optional<double> fallback;
  };
  Entry entries[] = {{"lr", &hyper.lr, std::nullopt},
                     {"weight_decay", &hyper.weightDecay, 0.0},
                     {"beta1", &hyper.beta1, 0.9},
                     {"beta2", &hyper.beta2, 0.999},
                     {"eps", &hyper.eps, 1e-8},
                     {"momentum", &hyper.momentum,
                      momentum ? std::nullopt : std::optional<double>(0.0)}};
  for (const Entry &entry : entries) {
    ZERO_ASSIGN_OR_RETURN(double value,
                          entry.fallback
                              ? getF64Or(request, entry.key, *entry.fallback)
                              : getF64(request, entry.key));
    *entry.slot = static_cast<float>(value);
  }
  return hyper;
}

/// The schedule params, or nullopt without `schedule` (a constant rate:
/// the kernels then use `lr` exactly as given).
absl::StatusOr<std::optional<LrSchedule>>
readSchedule(const BindRequest &request) {
  const KernelParam *kind = request.params.find("schedule");
  if (!kind) {
    for (absl::string_view key : {"warmup", "total", "min_lr"})
      if (request.params.contains(key))
        return request.invalid("takes '", key, "' only with a 'schedule'");
    return std::optional<LrSchedule>();
  }
  bool named = kind->kind == KernelParam::Kind::string;
  LrSchedule schedule;
  if (named && kind->string == "constant")
    schedule.kind = LrSchedule::Kind::constant;
  else if (named && kind->string == "linear")
    schedule.kind = LrSchedule::Kind::linear;
  else if (named && kind->string == "cosine")
    schedule.kind = LrSchedule::Kind::cosine;
  else
    return request.invalid("needs 'schedule' to be \"constant\", \"linear\" "
                           "or \"cosine\"");
  if (request.params.contains("warmup")) {
    ZERO_ASSIGN_OR_RETURN(int64_t warmup, getI64(request, "warmup"));
    schedule.warmup = warmup;
  }
  if (schedule.warmup < 0)
    return request.invalid("needs warmup >= 0, got ", schedule.warmup);
  if (schedule.kind != LrSchedule::Kind::constant) {
    ZERO_ASSIGN_OR_RETURN(int64_t total, getI64(request, "total"));
    ZERO_ASSIGN_OR_RETURN(double minLr, getF64Or(request, "min_lr", 0.0));
    schedule.total = total;
    schedule.minLr = minLr;
    if (schedule.total <= schedule.warmup)
      return request.invalid("needs total > warmup, got total ", schedule.total,
                             " and warmup ", schedule.warmup);
  }
  return std::optional<LrSchedule>(schedule);
}

/// The rate of a call: `lr` itself without a schedule (bitwise today's),
/// else the scheduled rate computed in double from the exact `lr` param;
/// times the runtime's learning-rate factor when it is not 1.
struct StepLr {
  float lr;
  double exactLr;
  std::optional<LrSchedule> schedule;

  float at(const KernelContext &ctx) const {
    double factor = ctx.learningRateFactor;
    if (!schedule)
      return factor == 1.0 ? lr : static_cast<float>(exactLr * factor);
    return static_cast<float>(
        scheduledLearningRate(*schedule, exactLr, ctx.step) * factor);
  }
};

absl::StatusOr<StepLr> readStepLr(const BindRequest &request, float lr) {
  ZERO_ASSIGN_OR_RETURN(std::optional<LrSchedule> schedule,
                        readSchedule(request));
  ZERO_ASSIGN_OR_RETURN(double exactLr, getF64(request, "lr"));
  return StepLr{lr, exactLr, schedule};
}

/// Binds `bindUpdate` on the first `ins` operands; a trailing f32 scalar
/// operand is the `skip_if` flag of a loss-scaled step. A set flag (non-zero,
/// or NaN) makes the call keep result i equal to its operand (operand 0 for
/// the parameter, i + 1 for slot i), copying only where the result is
/// another buffer.
absl::StatusOr<KernelFn> bindSkippable(const BindRequest &request, size_t ins,
                                       Binder bindUpdate) {
  if (request.ins.size() != ins + 1)
    return bindUpdate(request);
  const TensorSpec &flag = request.ins.back();
  if (flag.dtype != DType::f32 || !flag.shape.empty())
    return request.invalid("needs the skip_if flag as tensor<f32>, got ",
                           specString(flag));
  BindRequest inner = request;
  inner.ins = request.ins.first(ins);
  absl::StatusOr<KernelFn> update = bindUpdate(inner);
  if (!update.ok())
    return update.status();
  std::vector<int64_t> bytes;
  for (const TensorSpec &out : request.outs)
    bytes.push_back(out.numElements() * dtypeBytes(out.dtype));
  return KernelFn([update = *std::move(update), bytes,
                   ins](absl::Span<const void *const> inBuffers,
                        absl::Span<void *const> outBuffers,
                        const KernelContext &ctx) -> absl::Status {
    float skip = *static_cast<const float *>(inBuffers[ins]);
    if (skip == 0.0f)
      return update(inBuffers.first(ins), outBuffers, ctx);
    for (size_t i = 0; i < outBuffers.size(); ++i) {
      const void *old = inBuffers[i == 0 ? 0 : i + 1];
      if (outBuffers[i] != old)
        std::memmove(outBuffers[i], old, bytes[i]);
    }
    return absl::OkStatus();
  });
}

/// The gradient with L2 weight decay; without decay the term is left out,
/// not added as 0 * p, so that an infinite parameter stays infinite, as in
/// PyTorch's optimizers (0 * inf is NaN).
float withDecay(float grad, float wd, float param) {
  return wd != 0.0f ? grad + wd * param : grad;
}

absl::StatusOr<KernelFn> bindSgdStep(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 2, 1));
  ZERO_RETURN_IF_ERROR(checkUpdateSpecs(request, 2, 1));
  ZERO_ASSIGN_OR_RETURN(Hyper hyper, readHyper(request, /*momentum=*/false));
  int64_t count = request.ins[0].numElements();
  DType paramType = request.ins[0].dtype, gradType = request.ins[1].dtype;
  ZERO_ASSIGN_OR_RETURN(StepLr stepLr, readStepLr(request, hyper.lr));
  float wd = hyper.weightDecay;
  StepLr rate = stepLr;
  return KernelFn([=](absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &ctx) -> absl::Status {
    float lr = rate.at(ctx);
    float pBlock[kBlock], gBlock[kBlock], out[kBlock];
    for (int64_t offset = 0; offset < count; offset += kBlock) {
      int64_t n = std::min(kBlock, count - offset);
      const float *p = viewFloats(ins[0], paramType, offset, n, pBlock);
      const float *g = viewFloats(ins[1], gradType, offset, n, gBlock);
      for (int64_t i = 0; i < n; ++i)
        out[i] = p[i] - lr * withDecay(g[i], wd, p[i]);
      storeFloats(outs[0], paramType, offset, n, out);
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindSgdMomentumStep(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 3, 2));
  ZERO_RETURN_IF_ERROR(checkUpdateSpecs(request, 3, 2));
  ZERO_ASSIGN_OR_RETURN(Hyper hyper, readHyper(request, /*momentum=*/true));
  int64_t count = request.ins[0].numElements();
  DType paramType = request.ins[0].dtype, gradType = request.ins[1].dtype,
        bufType = request.ins[2].dtype;
  ZERO_ASSIGN_OR_RETURN(StepLr stepLr, readStepLr(request, hyper.lr));
  float wd = hyper.weightDecay, mu = hyper.momentum;
  StepLr rate = stepLr;
  return KernelFn([=](absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &ctx) -> absl::Status {
    float lr = rate.at(ctx);
    float pBlock[kBlock], gBlock[kBlock], bBlock[kBlock];
    float newP[kBlock], newB[kBlock];
    for (int64_t offset = 0; offset < count; offset += kBlock) {
      int64_t n = std::min(kBlock, count - offset);
      const float *p = viewFloats(ins[0], paramType, offset, n, pBlock);
      const float *g = viewFloats(ins[1], gradType, offset, n, gBlock);
      const float *b = viewFloats(ins[2], bufType, offset, n, bBlock);
      for (int64_t i = 0; i < n; ++i) {
        newB[i] = mu * b[i] + withDecay(g[i], wd, p[i]);
        newP[i] = p[i] - lr * newB[i];
      }
      storeFloats(outs[0], paramType, offset, n, newP);
      storeFloats(outs[1], bufType, offset, n, newB);
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindAdamStep(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 5, 3));
  ZERO_RETURN_IF_ERROR(checkUpdateSpecs(request, 4, 3));
  for (int i = 2; i < 4; ++i)
    if (request.ins[i].dtype != DType::f32)
      return request.invalid("needs f32 moments, got ",
                             specString(request.ins[i]));
  const TensorSpec &step = request.ins[4];
  if (step.dtype != DType::i64 || !step.shape.empty())
    return request.invalid("needs a tensor<i64> step, got ", specString(step));
  ZERO_ASSIGN_OR_RETURN(Hyper hyper, readHyper(request, /*momentum=*/false));
  bool decoupled = request.name == "train.adamw";
  int64_t count = request.ins[0].numElements();
  DType paramType = request.ins[0].dtype, gradType = request.ins[1].dtype;
  ZERO_ASSIGN_OR_RETURN(StepLr stepLr, readStepLr(request, hyper.lr));
  Hyper h = hyper;
  StepLr rate = stepLr;
  std::string name(request.name);
  return KernelFn([=](absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &ctx) -> absl::Status {
    int64_t t = *static_cast<const int64_t *>(ins[4]);
    if (t < 1)
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": the step is 1-based, got ", t));
    // The rate follows the runtime's step, as the sgd kernels' does.
    float lr = rate.at(ctx);
    // The PyTorch form: lr / (1 - beta1^t) * m / (sqrt(v / (1 - beta2^t))
    // + eps), with sqrt(1 - beta2^t) factored out of the square root.
    double t64 = static_cast<double>(t);
    float stepSize = static_cast<float>(
        lr / (1.0 - std::pow(static_cast<double>(h.beta1), t64)));
    float correction2Sqrt = static_cast<float>(
        std::sqrt(1.0 - std::pow(static_cast<double>(h.beta2), t64)));
    float wdGrad = decoupled ? 0.0f : h.weightDecay;
    float shrink = decoupled ? 1.0f - lr * h.weightDecay : 1.0f;
    AdamCoefficients coefficients{wdGrad,   h.beta1,        1.0f - h.beta1,
                                  h.beta2,  1.0f - h.beta2, correction2Sqrt,
                                  stepSize, h.eps,          shrink};
    const float *mIn = static_cast<const float *>(ins[2]);
    const float *vIn = static_cast<const float *>(ins[3]);
    float *mOut = static_cast<float *>(outs[1]);
    float *vOut = static_cast<float *>(outs[2]);
    float pBlock[kBlock], gBlock[kBlock], newP[kBlock];
    for (int64_t offset = 0; offset < count; offset += kBlock) {
      int64_t n = std::min(kBlock, count - offset);
      const float *p = viewFloats(ins[0], paramType, offset, n, pBlock);
      const float *g = viewFloats(ins[1], gradType, offset, n, gBlock);
      adamBlock(coefficients, n, p, g, mIn + offset, vIn + offset, newP,
                mOut + offset, vOut + offset);
      storeFloats(outs[0], paramType, offset, n, newP);
    }
    return absl::OkStatus();
  });
}

} // namespace

absl::StatusOr<KernelFn> bindSgd(const BindRequest &request) {
  return bindSkippable(request, 2, bindSgdStep);
}

absl::StatusOr<KernelFn> bindSgdMomentum(const BindRequest &request) {
  return bindSkippable(request, 3, bindSgdMomentumStep);
}

absl::StatusOr<KernelFn> bindAdam(const BindRequest &request) {
  return bindSkippable(request, 5, bindAdamStep);
}

} // namespace zero::rt::cpu

namespace zero::rt {

double scheduledLearningRate(const LrSchedule &schedule, double lr,
                             int64_t step) {
  double t = static_cast<double>(step);
  if (schedule.warmup > 0 && step <= schedule.warmup)
    return lr * t / static_cast<double>(schedule.warmup);
  if (schedule.kind == LrSchedule::Kind::constant)
    return lr;
  if (step >= schedule.total)
    return schedule.minLr;
  double progress = (t - static_cast<double>(schedule.warmup)) /
                    static_cast<double>(schedule.total - schedule.warmup);
  progress = std::clamp(progress, 0.0, 1.0);
  double remaining =
      schedule.kind == LrSchedule::Kind::linear
          ? 1.0 - progress
          : 0.5 * (1.0 + std::cos(3.14159265358979323846 * progress));
  return schedule.minLr + (lr - schedule.minLr) * remaining;
}

} // namespace zero::rt
