//===- EmbeddingLoss.cpp - Embedding lookups and cross-entropy ------------===//
//
// The kernels that index with integer tensors. Every id is checked against
// its range before anything is read or written, so a bad id is an error at
// call time and never an out-of-bounds access.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"
#include "runtime/cpu/ActivationLoops.h"
#include "zero/support/Status.h"

#include <algorithm>
#include <cmath>

namespace zero::rt::cpu {
namespace {

/// `ids` shape followed by the feature extent: the rows a table lookup gives.
absl::Status checkLookupShapes(const BindRequest &request,
                               const TensorSpec &table, const TensorSpec &ids,
                               const TensorSpec &rows,
                               absl::string_view rowsRole) {
  ZERO_RETURN_IF_ERROR(checkFloat(request, table, "table"));
  ZERO_RETURN_IF_ERROR(checkFloat(request, rows, rowsRole));
  ZERO_RETURN_IF_ERROR(checkIndex(request, ids, "ids"));
  if (table.shape.size() != 2)
    return request.invalid("needs a 2-D [vocabulary, features] table, got ",
                           specString(table));
  std::vector<int64_t> expected = ids.shape;
  expected.push_back(table.shape[1]);
  return checkShape(request, rows, expected, rowsRole);
}

/// Logits [S..., C] and labels [S...]; returns the number of label
/// positions.
absl::StatusOr<int64_t> checkLabels(const BindRequest &request,
                                    const TensorSpec &logits,
                                    const TensorSpec &labels) {
  ZERO_RETURN_IF_ERROR(checkFloat(request, logits, "logits"));
  ZERO_RETURN_IF_ERROR(checkIndex(request, labels, "labels"));
  if (logits.shape.empty() || logits.shape.back() == 0)
    return request.invalid("needs logits with a non-empty class dimension, "
                           "got ",
                           specString(logits));
  std::vector<int64_t> expected(logits.shape.begin(), logits.shape.end() - 1);
  ZERO_RETURN_IF_ERROR(checkShape(request, labels, expected, "labels"));
  int64_t count = labels.numElements();
  if (count == 0)
    return request.invalid("averages over no label positions (",
                           specString(labels), ")");
  return count;
}

absl::Status checkScalarF32(const BindRequest &request, const TensorSpec &spec,
                            absl::string_view role) {
  if (spec.dtype != DType::f32 || !spec.shape.empty())
    return request.invalid("needs a tensor<f32> ", role, ", got ",
                           specString(spec));
  return absl::OkStatus();
}

/// Overwrites `x` with exp(x - max) and returns log(sum) + max.
float expShifted(float *x, int64_t n) {
  float max = maxOf(x, n);
  expShiftedBlock(n, x, max, x);
  return std::log(sumFixed(x, n)) + max;
}

} // namespace

absl::StatusOr<KernelFn> bindEmbedding(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 2, 1));
  const TensorSpec &table = request.ins[0], &ids = request.ins[1],
                   &out = request.outs[0];
  ZERO_RETURN_IF_ERROR(checkLookupShapes(request, table, ids, out, "result"));
  ZERO_RETURN_IF_ERROR(checkSameDType(request, table, "table", out, "result"));
  int64_t vocabulary = table.shape[0];
  int64_t rowBytes = table.shape[1] * dtypeBytes(table.dtype);
  int64_t count = ids.numElements();
  DType idType = ids.dtype;
  std::string name(request.name);
  return KernelFn([=](absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &) -> absl::Status {
    ZERO_RETURN_IF_ERROR(
        checkIds(name, ins[1], idType, count, vocabulary, "id"));
    const char *src = static_cast<const char *>(ins[0]);
    char *dst = static_cast<char *>(outs[0]);
    for (int64_t position = 0; position < count; ++position)
      copyBytes(dst + position * rowBytes,
                src + loadIndex(ins[1], idType, position) * rowBytes, rowBytes);
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindEmbeddingGrad(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 2, 1));
  const TensorSpec &dy = request.ins[0], &ids = request.ins[1],
                   &table = request.outs[0];
  ZERO_RETURN_IF_ERROR(
      checkLookupShapes(request, table, ids, dy, "result gradient"));
  int64_t vocabulary = table.shape[0], features = table.shape[1];
  int64_t count = ids.numElements();
  // -1: every row takes its gradient (the verifier keeps a set index in
  // range; a hand-written program is checked here as well).
  ZERO_ASSIGN_OR_RETURN(int64_t paddingIdx,
                        getI64Or(request, "padding_idx", -1));
  if (paddingIdx < -1 || paddingIdx >= vocabulary)
    return request.invalid("padding_idx ", paddingIdx, " is not a row of the ",
                           vocabulary, "-row table");
  int64_t padding = paddingIdx;
  DType idType = ids.dtype, dyType = dy.dtype, tableType = table.dtype;
  std::string name(request.name);
  // Positions grouped by id (a counting sort) let each table row be summed
  // in f32 scratch of one row, in position order, whatever the output type;
  // a V x D f32 accumulator would cost more than the table itself.
  return KernelFn([=, ends = std::vector<int64_t>(vocabulary),
                   order = std::vector<int64_t>(count),
                   scratch = std::vector<float>(2 * features)](
                      absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &) mutable -> absl::Status {
    ZERO_RETURN_IF_ERROR(
        checkIds(name, ins[1], idType, count, vocabulary, "id"));
    std::fill(ends.begin(), ends.end(), 0);
    for (int64_t position = 0; position < count; ++position)
      ++ends[loadIndex(ins[1], idType, position)];
    int64_t start = 0;
    for (int64_t &slot : ends) {
      int64_t size = slot;
      slot = start; // The next free place for this id, then its end.
      start += size;
    }
    for (int64_t position = 0; position < count; ++position)
      order[ends[loadIndex(ins[1], idType, position)]++] = position;

    float *sum = scratch.data(), *row = sum + features;
    int64_t begin = 0;
    for (int64_t id = 0; id < vocabulary; ++id) {
      int64_t end = ends[id];
      if (begin == end || id == padding) {
        begin = end;
        fillFloats(outs[0], tableType, id * features, features, 0.0f);
        continue;
      }
      loadFloats(ins[0], dyType, order[begin] * features, features, sum);
      for (int64_t i = begin + 1; i < end; ++i) {
        loadFloats(ins[0], dyType, order[i] * features, features, row);
        for (int64_t j = 0; j < features; ++j)
          sum[j] += row[j];
      }
      storeFloats(outs[0], tableType, id * features, features, sum);
      begin = end;
    }
    return absl::OkStatus();
  });
}

namespace {

/// A loss's `ignore_index`, when it has one; it then takes the count of the
/// labels not ignored as a third operand (after the loss gradient, for the
/// gradient).
absl::StatusOr<std::optional<int64_t>>
getIgnoredLabel(const BindRequest &request, size_t operands) {
  if (!request.params.contains("ignore_index"))
    return std::optional<int64_t>();
  ZERO_ASSIGN_OR_RETURN(int64_t ignored, getI64(request, "ignore_index"));
  if (request.ins.size() != operands + 1)
    return request.invalid("ignores label ", ignored,
                           " but is not given the count of the labels not "
                           "ignored");
  ZERO_RETURN_IF_ERROR(checkScalarF32(request, request.ins[operands], "count"));
  return std::optional<int64_t>(ignored);
}

} // namespace

/// A loss's label_smoothing (PyTorch's), 0 where it has none.
static absl::StatusOr<float> getLabelSmoothing(const BindRequest &request) {
  ZERO_ASSIGN_OR_RETURN(double smoothing,
                        getF64Or(request, "label_smoothing", 0.0));
  if (!(smoothing >= 0.0 && smoothing <= 1.0))
    return request.invalid("needs a label_smoothing in [0, 1], got ",
                           smoothing);
  return static_cast<float>(smoothing);
}

absl::StatusOr<KernelFn> bindCountLabels(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 1, 1));
  const TensorSpec &labels = request.ins[0];
  ZERO_RETURN_IF_ERROR(checkIndex(request, labels, "labels"));
  ZERO_RETURN_IF_ERROR(checkScalarF32(request, request.outs[0], "count"));
  absl::StatusOr<int64_t> ignored = getI64(request, "ignore_index");
  if (!ignored.ok())
    return ignored.status();
  int64_t count = labels.numElements();
  DType labelType = labels.dtype;
  return KernelFn([=, ignored = *ignored](absl::Span<const void *const> ins,
                                          absl::Span<void *const> outs,
                                          const KernelContext &) {
    int64_t kept = 0;
    for (int64_t r = 0; r < count; ++r)
      kept += loadIndex(ins[0], labelType, r) != ignored;
    *static_cast<float *>(outs[0]) = static_cast<float>(kept);
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindCrossEntropy(const BindRequest &request) {
  absl::StatusOr<std::optional<int64_t>> ignored = getIgnoredLabel(request, 2);
  if (!ignored.ok())
    return ignored.status();
  ZERO_RETURN_IF_ERROR(checkArity(request, *ignored ? 3 : 2, 1));
  const TensorSpec &logits = request.ins[0], &labels = request.ins[1];
  ZERO_ASSIGN_OR_RETURN(int64_t rows, checkLabels(request, logits, labels));
  ZERO_RETURN_IF_ERROR(checkScalarF32(request, request.outs[0], "loss"));
  absl::StatusOr<float> smoothing = getLabelSmoothing(request);
  if (!smoothing.ok())
    return smoothing.status();
  int64_t count = rows, classes = logits.shape.back();
  DType dtype = logits.dtype, labelType = labels.dtype;
  std::string name(request.name);
  return KernelFn([=, ignored = *ignored, smoothing = *smoothing,
                   row = std::vector<float>(classes)](
                      absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &) mutable -> absl::Status {
    ZERO_RETURN_IF_ERROR(
        checkIds(name, ins[1], labelType, count, classes, "label", ignored));
    // Row terms in f32; their mean in double, so that a large batch does
    // not lose the small per-row differences.
    double total = 0.0;
    for (int64_t r = 0; r < count; ++r) {
      int64_t label = loadIndex(ins[1], labelType, r);
      if (label == ignored)
        continue;
      loadFloats(ins[0], dtype, r * classes, classes, row.data());
      float target = row[label];
      if (smoothing != 0.0f)
        target = (1.0f - smoothing) * target +
                 smoothing * (sumFixed(row.data(), classes) /
                              static_cast<float>(classes));
      float logSum = expShifted(row.data(), classes);
      total += static_cast<double>(logSum - target);
    }
    // With ignored labels, 0 / 0 is PyTorch's NaN for a batch of none.
    double divisor = ignored ? *static_cast<const float *>(ins[2])
                             : static_cast<double>(count);
    *static_cast<float *>(outs[0]) = static_cast<float>(total / divisor);
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindCrossEntropyGrad(const BindRequest &request) {
  absl::StatusOr<std::optional<int64_t>> ignored = getIgnoredLabel(request, 3);
  if (!ignored.ok())
    return ignored.status();
  ZERO_RETURN_IF_ERROR(checkArity(request, *ignored ? 4 : 3, 1));
  const TensorSpec &logits = request.ins[0], &labels = request.ins[1];
  ZERO_ASSIGN_OR_RETURN(int64_t rows, checkLabels(request, logits, labels));
  ZERO_RETURN_IF_ERROR(
      checkScalarF32(request, request.ins[2], "loss gradient"));
  ZERO_RETURN_IF_ERROR(
      checkSameSpec(request, logits, "logits", request.outs[0], "result"));
  ZERO_ASSIGN_OR_RETURN(float smoothing, getLabelSmoothing(request));
  int64_t count = rows, classes = logits.shape.back();
  DType dtype = logits.dtype, labelType = labels.dtype;
  std::string name(request.name);
  // The target: 1 - e on the label, e / C on every class.
  float onLabel = 1.0f - smoothing,
        onEvery = smoothing / static_cast<float>(classes);
  return KernelFn([=, ignored = *ignored, row = std::vector<float>(classes)](
                      absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &) mutable -> absl::Status {
    ZERO_RETURN_IF_ERROR(
        checkIds(name, ins[1], labelType, count, classes, "label", ignored));
    float divisor = ignored ? *static_cast<const float *>(ins[3])
                            : static_cast<float>(count);
    float scale = *static_cast<const float *>(ins[2]) / divisor;
    float *x = row.data();
    for (int64_t r = 0; r < count; ++r) {
      int64_t label = loadIndex(ins[1], labelType, r);
      // An ignored row has no gradient, even where the count is 0.
      if (label == ignored) {
        fillFloats(outs[0], dtype, r * classes, classes, 0.0f);
        continue;
      }
      loadFloats(ins[0], dtype, r * classes, classes, x);
      float max = maxOf(x, classes);
      expShiftedBlock(classes, x, max, x);
      float inverse = 1.0f / sumFixed(x, classes);
      for (int64_t j = 0; j < classes; ++j)
        x[j] *= inverse;
      if (onEvery != 0.0f) {
        for (int64_t j = 0; j < classes; ++j)
          x[j] -= onEvery;
        x[label] -= onLabel;
      } else {
        x[label] -= 1.0f;
      }
      for (int64_t j = 0; j < classes; ++j)
        x[j] *= scale;
      storeFloats(outs[0], dtype, r * classes, classes, x);
    }
    return absl::OkStatus();
  });
}

} // namespace zero::rt::cpu
