//===- CpuKernels.h - CPU kernels of the runtime ----------------*- C++ -*-===//
//
// The runtime binds each instruction of a lowered program to a kernel once,
// when it loads the program, and replays the bound kernels every step. All
// parsing, shape checking and scratch allocation happens at bind time so
// that a step does no host work beyond the arithmetic.
//
// Kernels store f32, bf16 or f16 and compute in f32; every reduction runs
// in a fixed order, so the same inputs give the same bits on every call.
//
// Aliasing: an output may be the very buffer of an input of the same shape
// and element size for the elementwise kernels (unary, binary, scale, bias_add,
// the activation gradients, casts between types of one width), causal_mask,
// softmax, softmax_grad, layer_norm's result, layer_norm_grad's input
// gradient, softmax_cross_entropy_grad, reshape and the update ops. Other
// kernels need outputs that do not overlap their inputs.
//
// A bound kernel owns its scratch, so one bound kernel must not run on two
// threads at once; bind it twice for that.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CPUKERNELS_H
#define ZERO_RUNTIME_CPUKERNELS_H

#include "zero/runtime/DType.h"
#include "zero/runtime/KernelParams.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace zero::rt {

struct TensorSpec {
  DType dtype;
  std::vector<int64_t> shape;
  int64_t numElements() const {
    int64_t count = 1;
    for (int64_t extent : shape)
      count *= extent;
    return count;
  }
};

/// What a kernel may read about the running program.
struct KernelContext {
  int64_t step = 1; // 1-based optimizer step
  int rank = 0;
  int groupSize = 1;
  /// The rank's slice of the global batch: its index along the placement
  /// axes the batch is split over (the rank itself without tensor
  /// parallelism; tensor-parallel ranks share one). Dropout keys its mask
  /// by the element's index in the global batch from it.
  int batchRank = 0;
  /// The same step as an i64 in device memory, followed by the micro-step,
  /// or null. CUDA kernels that depend on them (train.step_index, the
  /// learning-rate schedule, train.dropout) read them there when it is set,
  /// so that a step captured as a CUDA graph replays with the step of each
  /// launch. CPU kernels ignore it.
  const int64_t *deviceStep = nullptr;
  /// What every update's rate is multiplied by (Executor::
  /// setLearningRateFactor: a learning rate changed between steps). At 1
  /// the rates are exactly the compiled ones.
  double learningRateFactor = 1.0;
  /// The trainer's seed and the micro-step within the step (0 without
  /// accumulation): with `step`, what train.dropout's mask is drawn from.
  uint64_t seed = 0;
  int64_t microStep = 0;
};

/// A bound kernel: shapes, dtypes and attributes are resolved once at bind
/// time; calls do no parsing or allocation.
using KernelFn = std::function<absl::Status(absl::Span<const void *const> ins,
                                            absl::Span<void *const> outs,
                                            const KernelContext &ctx)>;

/// Binds kernel `name` (e.g. "train.matmul") for these operand/result specs
/// and attribute dictionary. Unknown names give UnimplementedError; bad
/// shapes, dtypes or attributes give InvalidArgumentError naming the kernel
/// and what is wrong.
absl::StatusOr<KernelFn> bindCpuKernel(absl::string_view name,
                                       const KernelParams &params,
                                       absl::Span<const TensorSpec> ins,
                                       absl::Span<const TensorSpec> outs);

/// A learning-rate schedule as the update kernels take it, from the params
/// `schedule` ("constant", "linear" or "cosine"), `warmup`, `total` and
/// `min_lr` that `zero-lower-to-runtime` adds for a `train.optimizer` with a
/// varying rate.
struct LrSchedule {
  enum class Kind { constant, linear, cosine };
  Kind kind = Kind::constant;
  int64_t warmup = 0; // steps of linear warmup from 0
  int64_t total = 0;  // linear/cosine: the step at which the rate is minLr
  double minLr = 0.0;
};

/// The learning rate at 1-based step `step` for peak rate `lr`, in double:
/// `lr * step / warmup` during the warmup, then `lr` (constant) or a linear
/// or cosine decay to `minLr` at `total`, and `minLr` after it. Every rank
/// passes the same step, so every rank (and ZeRO stage) gets the same bits.
double scheduledLearningRate(const LrSchedule &schedule, double lr,
                             int64_t step);

/// Threads BLAS may use (the runtime sets 1 when several ranks share the
/// cores).
/// The instruction set the vectorized CPU kernels run with on this CPU
/// ("AVX2", "AVX3" for AVX-512, ...), picked at run time.
const char *cpuVectorTarget();
void setCpuKernelThreads(int threads);

} // namespace zero::rt

#endif // ZERO_RUNTIME_CPUKERNELS_H
