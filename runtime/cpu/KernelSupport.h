//===- KernelSupport.h - Shared pieces of the CPU kernels -------*- C++ -*-===//
//
// Bind-time checking (arity, dtypes, shapes, attributes) with messages that
// name the kernel, and the call-time helpers every kernel family uses:
// block-wise conversion between storage and f32, and fixed-order sums.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CPU_KERNELSUPPORT_H
#define ZERO_RUNTIME_CPU_KERNELSUPPORT_H

#include "zero/runtime/CpuKernels.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace zero::rt::cpu {

/// Everything a binder sees.
struct BindRequest {
  absl::string_view name;
  const KernelParams &params;
  absl::Span<const TensorSpec> ins;
  absl::Span<const TensorSpec> outs;

  /// InvalidArgumentError "NAME: pieces...".
  template <typename... Pieces>
  absl::Status invalid(const Pieces &...pieces) const {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", pieces...));
  }
};

using Binder = absl::StatusOr<KernelFn> (*)(const BindRequest &request);

/// `kernel`, checking at each call that it gets `ins` operand and `outs`
/// result buffers: kernels index their buffer lists without looking, so a
/// wrong count is an error here rather than an out-of-bounds read.
KernelFn checkingBufferCounts(KernelFn kernel, absl::string_view name,
                              size_t ins, size_t outs);

/// "tensor<4x8xf32>", as MLIR prints it, so messages match the IR.
std::string specString(const TensorSpec &spec);
std::string shapeString(absl::Span<const int64_t> shape);

/// Checks of one request; each returns an error naming the kernel.
absl::Status checkArity(const BindRequest &request, size_t ins, size_t outs);
/// One float input and a result of its spec.
absl::Status checkUnarySpecs(const BindRequest &request);
absl::Status checkFloat(const BindRequest &request, const TensorSpec &spec,
                        absl::string_view role);
absl::Status checkIndex(const BindRequest &request, const TensorSpec &spec,
                        absl::string_view role);
absl::Status checkShape(const BindRequest &request, const TensorSpec &spec,
                        absl::Span<const int64_t> shape,
                        absl::string_view role);
/// Same dtype and shape.
absl::Status checkSameSpec(const BindRequest &request, const TensorSpec &a,
                           absl::string_view roleA, const TensorSpec &b,
                           absl::string_view roleB);
absl::Status checkSameDType(const BindRequest &request, const TensorSpec &a,
                            absl::string_view roleA, const TensorSpec &b,
                            absl::string_view roleB);
/// Every extent is >= 0 and the element count fits the index types.
absl::Status checkSpecs(const BindRequest &request);

/// Attribute readers. A missing required attribute, or one of another kind,
/// is an InvalidArgumentError.
absl::StatusOr<double> getF64(const BindRequest &request,
                              absl::string_view key);
absl::StatusOr<double> getF64Or(const BindRequest &request,
                                absl::string_view key, double fallback);
/// The integer attribute `key`, or `fallback` where the op has none.
absl::StatusOr<int64_t> getI64Or(const BindRequest &request,
                                 absl::string_view key, int64_t fallback);
absl::StatusOr<int64_t> getI64(const BindRequest &request,
                               absl::string_view key);
/// A UnitAttr (or BoolAttr) flag; absent means false.
absl::StatusOr<bool> getFlag(const BindRequest &request, absl::string_view key);
/// A DenseI64ArrayAttr (or an ArrayAttr of integers).
absl::StatusOr<std::vector<int64_t>> getI64Array(const BindRequest &request,
                                                 absl::string_view key);

/// Elements converted per block: small enough to stay in L1 next to the
/// other operands' blocks, large enough to amortize the loop overhead.
constexpr int64_t kBlock = 512;

/// Reads `count` elements starting at `offset` of a float buffer as f32.
void loadFloats(const void *src, DType dtype, int64_t offset, int64_t count,
                float *dst);
/// Writes `count` f32 values into a float buffer, rounding to nearest even.
void storeFloats(void *dst, DType dtype, int64_t offset, int64_t count,
                 const float *src);
/// `count` elements at `offset` as f32: the buffer itself when it holds
/// f32, else `scratch` after converting into it.
inline const float *viewFloats(const void *src, DType dtype, int64_t offset,
                               int64_t count, float *scratch) {
  if (dtype == DType::f32)
    return static_cast<const float *>(src) + offset;
  loadFloats(src, dtype, offset, count, scratch);
  return scratch;
}

/// Writes `count` copies of `value`.
void fillFloats(void *dst, DType dtype, int64_t offset, int64_t count,
                float value);

/// Sum in a fixed order (eight interleaved partial sums, then a fixed tree):
/// deterministic, and the compiler can keep the partial sums in a vector.
inline float sumFixed(const float *x, int64_t n) {
  float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int lane = 0; lane < 8; ++lane)
      lanes[lane] += x[i + lane];
  float tail = 0.0f;
  for (; i < n; ++i)
    tail += x[i];
  return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
         ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7])) + tail;
}

/// Rows a column reduction adds per chunk. A reduction over the leading
/// dimensions of a row-major tensor (a bias gradient: [rows, features] to
/// [features]) sums each column in chunks of this many rows, each chunk from
/// zero, then the chunks' sums in order: an order that a GPU parallelizes
/// over chunks and columns (runtime/cuda/Shape.cu) and the CPU kernel
/// repeats bit for bit. It depends on the shape alone.
constexpr int64_t kReduceChunkRows = 64;

/// Whether reducing `dims` of `shape` reduces leading dimensions only
/// (unit dimensions aside) over more than one chunk of rows: the input is
/// then [reduced, kept] row-major.
inline bool isChunkedColumnReduction(absl::Span<const int64_t> shape,
                                     absl::Span<const int64_t> dims) {
  bool seenKept = false;
  int64_t reduced = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    bool dropped = std::find(dims.begin(), dims.end(),
                             static_cast<int64_t>(d)) != dims.end();
    if (dropped && seenKept)
      return false;
    seenKept |= !dropped;
    if (dropped)
      reduced *= shape[d];
  }
  return seenKept && reduced > kReduceChunkRows;
}

/// Sum of x[i] * y[i] in the same fixed order.
inline float dotFixed(const float *x, const float *y, int64_t n) {
  float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int lane = 0; lane < 8; ++lane)
      lanes[lane] += x[i + lane] * y[i + lane];
  float tail = 0.0f;
  for (; i < n; ++i)
    tail += x[i] * y[i];
  return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
         ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7])) + tail;
}

inline float maxOf(const float *x, int64_t n) {
  float best = -INFINITY;
  for (int64_t i = 0; i < n; ++i)
    best = x[i] > best ? x[i] : best;
  return best;
}

/// Reads index `position` of an i32 or i64 tensor.
inline int64_t loadIndex(const void *data, DType dtype, int64_t position) {
  if (dtype == DType::i32)
    return static_cast<const int32_t *>(data)[position];
  return static_cast<const int64_t *>(data)[position];
}

/// Checks that every id lies in [0, limit), or equals `ignored` where one is
/// given, before a kernel uses any.
absl::Status checkIds(absl::string_view kernel, const void *ids, DType dtype,
                      int64_t count, int64_t limit, absl::string_view what,
                      std::optional<int64_t> ignored = std::nullopt);

/// Copies raw elements; a no-op when source and destination coincide, so
/// that in-place moves are free.
inline void copyBytes(void *dst, const void *src, int64_t bytes) {
  if (dst != src && bytes > 0)
    std::memmove(dst, src, static_cast<size_t>(bytes));
}

// Binders of each kernel family (one file each).
absl::StatusOr<KernelFn> bindUnary(const BindRequest &request);
absl::StatusOr<KernelFn> bindBinary(const BindRequest &request);
absl::StatusOr<KernelFn> bindScale(const BindRequest &request);
absl::StatusOr<KernelFn> bindBiasAdd(const BindRequest &request);
absl::StatusOr<KernelFn> bindCausalMask(const BindRequest &request);
absl::StatusOr<KernelFn> bindKeyMask(const BindRequest &request);
absl::StatusOr<KernelFn> bindDropout(const BindRequest &request);
absl::StatusOr<KernelFn> bindCast(const BindRequest &request);
absl::StatusOr<KernelFn> bindActivationGrad(const BindRequest &request);
absl::StatusOr<KernelFn> bindFill(const BindRequest &request);
absl::StatusOr<KernelFn> bindStepIndex(const BindRequest &request);

absl::StatusOr<KernelFn> bindMatmul(const BindRequest &request);
// FusedChains.cpp
/// Binds one kernel of a fused op's chain (bindCpuKernel, bindCudaKernel).
using PartBinder = std::function<absl::StatusOr<KernelFn>(
    absl::string_view name, const KernelParams &params,
    absl::Span<const TensorSpec> ins, absl::Span<const TensorSpec> outs)>;
/// A fused matmul (train.matmul_bias, ...) as the chain of kernels it
/// fuses, each bound by `bind`: the CPU's kernel, and the CUDA backend's
/// where no cuBLASLt epilogue serves.
absl::StatusOr<KernelFn> bindMatmulChain(const BindRequest &request,
                                         const PartBinder &bind);
absl::StatusOr<KernelFn> bindFusedMatmul(const BindRequest &request);
/// train.add_layer_norm as train.add, then train.layer_norm of the sum.
absl::StatusOr<KernelFn> bindAddLayerNormChain(const BindRequest &request,
                                               const PartBinder &bind);
absl::StatusOr<KernelFn> bindAddLayerNorm(const BindRequest &request);

absl::StatusOr<KernelFn> bindAttention(const BindRequest &request);
absl::StatusOr<KernelFn> bindAttentionGrad(const BindRequest &request);
absl::StatusOr<KernelFn> bindSoftmax(const BindRequest &request);
absl::StatusOr<KernelFn> bindSoftmaxGrad(const BindRequest &request);
absl::StatusOr<KernelFn> bindLayerNorm(const BindRequest &request);
absl::StatusOr<KernelFn> bindLayerNormGrad(const BindRequest &request);

absl::StatusOr<KernelFn> bindEmbedding(const BindRequest &request);
absl::StatusOr<KernelFn> bindEmbeddingGrad(const BindRequest &request);
absl::StatusOr<KernelFn> bindCountLabels(const BindRequest &request);
absl::StatusOr<KernelFn> bindCrossEntropy(const BindRequest &request);
absl::StatusOr<KernelFn> bindCrossEntropyGrad(const BindRequest &request);

absl::StatusOr<KernelFn> bindReduce(const BindRequest &request);
absl::StatusOr<KernelFn> bindExpand(const BindRequest &request);
absl::StatusOr<KernelFn> bindReshape(const BindRequest &request);
absl::StatusOr<KernelFn> bindTranspose(const BindRequest &request);
absl::StatusOr<KernelFn> bindSlice(const BindRequest &request);
absl::StatusOr<KernelFn> bindSliceRange(const BindRequest &request);
absl::StatusOr<KernelFn> bindPad(const BindRequest &request);
// Quantize.cpp
/// dist.quantize's and dist.dequantize's blocks: `segments` segments of
/// `segmentLength` elements, each in blocks of `block` (the last one
/// possibly shorter), one scale per block; each segment's codes of `bits`
/// bits fill `segmentBytes` bytes.
struct QuantizedLayout {
  int64_t block = 0;
  int64_t segments = 1;
  int64_t bits = 8;
  int64_t segmentLength = 0;
  int64_t segmentBytes = 0;
  int64_t blocksPerSegment = 0;
};
/// The layout of 1-D floating-point `values` (the quantizer's input, the
/// dequantizer's result) and f32 `scales` from the request's `block`,
/// `segments` and `bits`, checked.
absl::StatusOr<QuantizedLayout> getQuantizedLayout(const BindRequest &request,
                                                   const TensorSpec &values,
                                                   const TensorSpec &scales);
absl::StatusOr<KernelFn> bindQuantize(const BindRequest &request);
absl::StatusOr<KernelFn> bindDequantize(const BindRequest &request);
absl::StatusOr<KernelFn> bindConcat(const BindRequest &request);

absl::StatusOr<KernelFn> bindSgd(const BindRequest &request);
absl::StatusOr<KernelFn> bindSumSquares(const BindRequest &request);
absl::StatusOr<KernelFn> bindScaleByNorm(const BindRequest &request);
absl::StatusOr<KernelFn> bindSgdMomentum(const BindRequest &request);
absl::StatusOr<KernelFn> bindAdam(const BindRequest &request);
absl::StatusOr<KernelFn> bindUnscale(const BindRequest &request);
absl::StatusOr<KernelFn> bindUpdateLossScale(const BindRequest &request);

} // namespace zero::rt::cpu

#endif // ZERO_RUNTIME_CPU_KERNELSUPPORT_H
