//===- Shape.cpp - Reductions, broadcasts and data movement ---------------===//
//
// reduce_sum/mean, expand, reshape, transpose, slice, pad, concat and
// dist.slice. At bind time
// each tensor is collapsed into the fewest runs of dimensions that move
// together, so that a call walks a short odometer and does its work in
// contiguous inner loops.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"
#include "zero/support/Status.h"

#include <algorithm>

namespace zero::rt::cpu {
namespace {

/// Dimensions of the large tensor of a reduction or broadcast, merged into
/// runs that are all kept or all dropped. `stride` is the run's stride in
/// the small tensor (0 for dropped runs).
struct Run {
  int64_t extent;
  bool dropped;
  int64_t stride;
};

std::vector<Run> collapseRuns(absl::Span<const int64_t> shape,
                              absl::Span<const int64_t> dims) {
  std::vector<Run> runs;
  for (size_t d = 0; d < shape.size(); ++d) {
    // Unit dimensions change no index; leaving them out lets neighbours
    // merge.
    if (shape[d] == 1)
      continue;
    bool dropped = std::find(dims.begin(), dims.end(),
                             static_cast<int64_t>(d)) != dims.end();
    if (!runs.empty() && runs.back().dropped == dropped)
      runs.back().extent *= shape[d];
    else
      runs.push_back({shape[d], dropped, 0});
  }
  if (runs.empty())
    runs.push_back({1, false, 0});
  int64_t stride = 1;
  for (auto run = runs.rbegin(); run != runs.rend(); ++run)
    if (!run->dropped) {
      run->stride = stride;
      stride *= run->extent;
    }
  return runs;
}

/// Calls `body(largeOffset, smallOffset)` for each position of all runs but
/// the innermost, in order. `index` is scratch of runs.size() elements.
template <typename Body>
void forEachOuter(const std::vector<Run> &runs, std::vector<int64_t> &index,
                  Body body) {
  size_t outer = runs.size() - 1;
  int64_t inner = runs.back().extent, count = 1;
  for (size_t d = 0; d < outer; ++d)
    count *= runs[d].extent;
  std::fill(index.begin(), index.end(), 0);
  int64_t small = 0;
  for (int64_t position = 0; position < count; ++position) {
    body(position * inner, small);
    for (size_t d = outer; d-- > 0;) {
      small += runs[d].stride;
      if (++index[d] < runs[d].extent)
        break;
      small -= runs[d].stride * runs[d].extent;
      index[d] = 0;
    }
  }
}

/// `dims` are distinct, ascending and below `rank`.
absl::Status checkDims(const BindRequest &request,
                       absl::Span<const int64_t> dims, size_t rank) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= static_cast<int64_t>(rank))
      return request.invalid("has dimension ", dims[i],
                             " out of range for rank ", rank);
    if (i > 0 && dims[i] <= dims[i - 1])
      return request.invalid("needs distinct dims in ascending order, got ",
                             shapeString(dims));
  }
  return absl::OkStatus();
}

std::vector<int64_t> removeDims(absl::Span<const int64_t> shape,
                                absl::Span<const int64_t> dims) {
  std::vector<int64_t> kept;
  for (size_t d = 0; d < shape.size(); ++d)
    if (std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) ==
        dims.end())
      kept.push_back(shape[d]);
  return kept;
}

/// Writes `count` copies of the element at `value` (2, 4 or 8 bytes).
void broadcastElement(char *dst, const char *value, int64_t count,
                      int64_t elementBytes) {
  auto fill = [&](auto word) {
    std::memcpy(&word, value, sizeof(word));
    auto *out = reinterpret_cast<decltype(word) *>(dst);
    for (int64_t i = 0; i < count; ++i)
      out[i] = word;
  };
  if (elementBytes == 2)
    fill(uint16_t{});
  else if (elementBytes == 4)
    fill(uint32_t{});
  else
    fill(uint64_t{});
}

/// Copies `count` elements read `stride` elements apart.
void gatherStrided(char *dst, const char *src, int64_t count, int64_t stride,
                   int64_t elementBytes) {
  auto gather = [&](auto word) {
    using Word = decltype(word);
    auto *out = reinterpret_cast<Word *>(dst);
    const auto *in = reinterpret_cast<const Word *>(src);
    for (int64_t i = 0; i < count; ++i)
      out[i] = in[i * stride];
  };
  if (elementBytes == 2)
    gather(uint16_t{});
  else if (elementBytes == 4)
    gather(uint32_t{});
  else
    gather(uint64_t{});
}

/// Slice, pad and concat move rows: a tensor is `outer` x `extent` rows of
/// `rowBytes` along the sliced dim, `outer` counting the positions of the
/// dims before it.
struct Rows {
  int64_t outer = 1, rowBytes = 0;
};

Rows rowsAround(const TensorSpec &spec, int64_t dim) {
  Rows rows;
  rows.rowBytes = dtypeBytes(spec.dtype);
  for (int64_t d = 0; d < dim; ++d)
    rows.outer *= spec.shape[d];
  for (size_t d = dim + 1; d < spec.shape.size(); ++d)
    rows.rowBytes *= spec.shape[d];
  return rows;
}

/// Checks that `part` lies at `offset` of `dim` of `whole`, as the ops'
/// verifiers do.
absl::Status checkWindow(const BindRequest &request, const TensorSpec &whole,
                         const TensorSpec &part, int64_t dim, int64_t offset) {
  ZERO_RETURN_IF_ERROR(checkSameDType(request, request.ins[0], "input",
                                      request.outs[0], "result"));
  if (dim < 0 || dim >= static_cast<int64_t>(whole.shape.size()))
    return request.invalid("dim ", dim, " is out of range for ",
                           specString(whole));
  std::vector<int64_t> expected = whole.shape;
  expected[dim] = part.shape.size() == whole.shape.size() ? part.shape[dim] : 0;
  if (part.shape != expected)
    return request.invalid("needs ", specString(part), " to differ from ",
                           specString(whole), " only in dim ", dim);
  if (offset < 0 || offset > whole.shape[dim] - part.shape[dim])
    return request.invalid("positions [", offset, ", ",
                           offset + part.shape[dim], ") of dim ", dim,
                           " do not fit in its ", whole.shape[dim]);
  return absl::OkStatus();
}

} // namespace

absl::StatusOr<KernelFn> bindReduce(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 1, 1));
  const TensorSpec &in = request.ins[0], &out = request.outs[0];
  ZERO_RETURN_IF_ERROR(checkFloat(request, in, "input"));
  ZERO_RETURN_IF_ERROR(checkFloat(request, out, "result"));
  ZERO_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                        getI64Array(request, "dims"));
  ZERO_RETURN_IF_ERROR(checkDims(request, dims, in.shape.size()));
  ZERO_RETURN_IF_ERROR(
      checkShape(request, out, removeDims(in.shape, dims), "result"));
  bool mean = request.name == "train.reduce_mean";
  int64_t outCount = out.numElements(), reduced = 1;
  for (int64_t dim : dims)
    reduced *= in.shape[dim];
  float divisor = mean ? static_cast<float>(reduced) : 1.0f;
  std::vector<Run> runs = collapseRuns(in.shape, dims);
  DType inType = in.dtype, outType = out.dtype;
  if (isChunkedColumnReduction(in.shape, dims)) {
    // [reduced, outCount]: each column summed over chunks of rows, each
    // chunk from zero, then the chunks in order (the CUDA kernel's order).
    return KernelFn([=, acc = std::vector<float>(outCount),
                     chunk = std::vector<float>(outCount)](
                        absl::Span<const void *const> ins,
                        absl::Span<void *const> outs,
                        const KernelContext &) mutable -> absl::Status {
      std::fill(acc.begin(), acc.end(), 0.0f);
      float block[kBlock];
      for (int64_t r0 = 0; r0 < reduced; r0 += kReduceChunkRows) {
        int64_t rows = std::min(kReduceChunkRows, reduced - r0);
        std::fill(chunk.begin(), chunk.end(), 0.0f);
        for (int64_t r = r0; r < r0 + rows; ++r)
          for (int64_t j0 = 0; j0 < outCount; j0 += kBlock) {
            int64_t n = std::min(kBlock, outCount - j0);
            const float *x =
                viewFloats(ins[0], inType, r * outCount + j0, n, block);
            for (int64_t j = 0; j < n; ++j)
              chunk[j0 + j] += x[j];
          }
        for (int64_t j = 0; j < outCount; ++j)
          acc[j] += chunk[j];
      }
      if (mean)
        for (float &value : acc)
          value /= divisor;
      storeFloats(outs[0], outType, 0, outCount, acc.data());
      return absl::OkStatus();
    });
  }
  return KernelFn([=, index = std::vector<int64_t>(runs.size()),
                   acc = std::vector<float>(outCount)](
                      absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &) mutable -> absl::Status {
    std::fill(acc.begin(), acc.end(), 0.0f);
    int64_t inner = runs.back().extent;
    bool innerDropped = runs.back().dropped;
    float *sums = acc.data();
    forEachOuter(runs, index, [&](int64_t large, int64_t small) {
      float block[kBlock];
      float rowSum = 0.0f;
      for (int64_t j0 = 0; j0 < inner; j0 += kBlock) {
        int64_t n = std::min(kBlock, inner - j0);
        const float *x = viewFloats(ins[0], inType, large + j0, n, block);
        if (innerDropped) {
          rowSum += sumFixed(x, n);
        } else {
          float *target = sums + small + j0;
          for (int64_t j = 0; j < n; ++j)
            target[j] += x[j];
        }
      }
      if (innerDropped)
        sums[small] += rowSum;
    });
    if (mean)
      for (float &value : acc)
        value /= divisor;
    storeFloats(outs[0], outType, 0, outCount, sums);
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindExpand(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 1, 1));
  const TensorSpec &in = request.ins[0], &out = request.outs[0];
  ZERO_RETURN_IF_ERROR(checkSameDType(request, in, "input", out, "result"));
  ZERO_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                        getI64Array(request, "dims"));
  ZERO_RETURN_IF_ERROR(checkDims(request, dims, out.shape.size()));
  if (removeDims(out.shape, dims) != in.shape)
    return request.invalid("cannot expand ", specString(in), " into ",
                           specString(out), " by inserting dims ",
                           shapeString(dims));
  std::vector<Run> runs = collapseRuns(out.shape, dims);
  int64_t elementBytes = dtypeBytes(in.dtype);
  bool empty = out.numElements() == 0;
  return KernelFn([=, index = std::vector<int64_t>(runs.size())](
                      absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &) mutable -> absl::Status {
    if (empty)
      return absl::OkStatus();
    const char *src = static_cast<const char *>(ins[0]);
    char *dst = static_cast<char *>(outs[0]);
    int64_t inner = runs.back().extent;
    bool innerDropped = runs.back().dropped;
    forEachOuter(runs, index, [&](int64_t large, int64_t small) {
      if (innerDropped)
        broadcastElement(dst + large * elementBytes, src + small * elementBytes,
                         inner, elementBytes);
      else
        std::memcpy(dst + large * elementBytes, src + small * elementBytes,
                    static_cast<size_t>(inner * elementBytes));
    });
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindReshape(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 1, 1));
  const TensorSpec &in = request.ins[0], &out = request.outs[0];
  ZERO_RETURN_IF_ERROR(checkSameDType(request, in, "input", out, "result"));
  if (in.numElements() != out.numElements())
    return request.invalid("reshapes ", in.numElements(), " elements (",
                           specString(in), ") into ", out.numElements(), " (",
                           specString(out), ")");
  int64_t bytes = in.numElements() * dtypeBytes(in.dtype);
  return KernelFn([bytes](absl::Span<const void *const> ins,
                          absl::Span<void *const> outs,
                          const KernelContext &) -> absl::Status {
    copyBytes(outs[0], ins[0], bytes);
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindTranspose(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 1, 1));
  const TensorSpec &in = request.ins[0], &out = request.outs[0];
  ZERO_RETURN_IF_ERROR(checkSameDType(request, in, "input", out, "result"));
  ZERO_ASSIGN_OR_RETURN(std::vector<int64_t> permutation,
                        getI64Array(request, "permutation"));
  size_t rank = in.shape.size();
  if (permutation.size() != rank)
    return request.invalid("needs a permutation of ", rank, " dimensions, got ",
                           shapeString(permutation));
  std::vector<bool> seen(rank, false);
  std::vector<int64_t> expected;
  for (int64_t dim : permutation) {
    if (dim < 0 || dim >= static_cast<int64_t>(rank) || seen[dim])
      return request.invalid("needs each of 0..", rank - 1,
                             " once in the permutation, got ",
                             shapeString(permutation));
    seen[dim] = true;
    expected.push_back(in.shape[dim]);
  }
  ZERO_RETURN_IF_ERROR(checkShape(request, out, expected, "result"));

  std::vector<int64_t> inStrides(rank, 1);
  for (size_t d = rank; d-- > 1;)
    inStrides[d - 1] = inStrides[d] * in.shape[d];
  // Output dimensions in order, each with its stride in the input; a
  // dimension merges into the one before when the input walks them alike.
  struct Dim {
    int64_t extent, stride;
  };
  std::vector<Dim> dimsOut;
  for (size_t i = 0; i < rank; ++i) {
    Dim dim{out.shape[i], inStrides[(permutation)[i]]};
    if (dim.extent == 1)
      continue;
    if (!dimsOut.empty() && dimsOut.back().stride == dim.stride * dim.extent) {
      dimsOut.back().extent *= dim.extent;
      dimsOut.back().stride = dim.stride;
    } else {
      dimsOut.push_back(dim);
    }
  }
  if (dimsOut.empty())
    dimsOut.push_back({1, 1});
  int64_t elementBytes = dtypeBytes(in.dtype);
  bool empty = out.numElements() == 0;
  return KernelFn([=, index = std::vector<int64_t>(dimsOut.size())](
                      absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &) mutable -> absl::Status {
    if (empty)
      return absl::OkStatus();
    const char *src = static_cast<const char *>(ins[0]);
    char *dst = static_cast<char *>(outs[0]);
    size_t outer = dimsOut.size() - 1;
    int64_t inner = dimsOut.back().extent, innerStride = dimsOut.back().stride;
    int64_t count = 1;
    for (size_t d = 0; d < outer; ++d)
      count *= dimsOut[d].extent;
    std::fill(index.begin(), index.end(), 0);
    int64_t from = 0;
    for (int64_t position = 0; position < count; ++position) {
      char *to = dst + position * inner * elementBytes;
      if (innerStride == 1)
        std::memcpy(to, src + from * elementBytes,
                    static_cast<size_t>(inner * elementBytes));
      else
        gatherStrided(to, src + from * elementBytes, inner, innerStride,
                      elementBytes);
      for (size_t d = outer; d-- > 0;) {
        from += dimsOut[d].stride;
        if (++index[d] < dimsOut[d].extent)
          break;
        from -= dimsOut[d].stride * dimsOut[d].extent;
        index[d] = 0;
      }
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindSlice(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 1, 1));
  const TensorSpec &in = request.ins[0], &out = request.outs[0];
  ZERO_RETURN_IF_ERROR(checkSameDType(request, in, "input", out, "result"));
  ZERO_ASSIGN_OR_RETURN(int64_t dim, getI64(request, "dim"));
  int64_t axis = 0;
  if (request.params.contains("axis")) {
    ZERO_ASSIGN_OR_RETURN(int64_t value, getI64(request, "axis"));
    axis = value;
  }
  // On a mesh the slice is the rank's coordinate along `axis`: the grid's
  // extents after it make the stride of that coordinate in the rank.
  int64_t stride = 1, extent = 0;
  if (const KernelParam *grid = request.params.find("grid")) {
    const std::vector<int64_t> &extents = grid->integers;
    if (grid->kind != KernelParam::Kind::integers || axis < 0 ||
        axis >= static_cast<int64_t>(extents.size()))
      return request.invalid("needs 'grid' to be the placement's extents, "
                             "with an entry for axis ",
                             axis);
    for (size_t index = 0; index < extents.size(); ++index) {
      if (extents[index] < 1)
        return request.invalid("needs positive integer 'grid' extents");
      if (static_cast<int64_t>(index) > axis)
        stride *= extents[index];
      else if (static_cast<int64_t>(index) == axis)
        extent = extents[index];
    }
  }
  size_t rank = in.shape.size();
  if (dim < 0 || dim >= static_cast<int64_t>(rank))
    return request.invalid("slices dimension ", dim, " of ", specString(in));
  std::vector<int64_t> expected = in.shape;
  expected[dim] = out.shape.size() == rank ? out.shape[dim] : 0;
  if (out.shape != expected)
    return request.invalid("needs a result that differs from the input ",
                           specString(in), " only in dimension ", dim, ", got ",
                           specString(out));
  int64_t rows = in.shape[dim], chunk = out.shape[dim];
  int64_t outer = 1, rowBytes = dtypeBytes(in.dtype);
  for (int64_t d = 0; d < dim; ++d)
    outer *= in.shape[d];
  for (size_t d = dim + 1; d < rank; ++d)
    rowBytes *= in.shape[d];
  std::string name(request.name);
  return KernelFn([=](absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &ctx) -> absl::Status {
    if (ctx.rank < 0)
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": rank ", ctx.rank, " is negative"));
    int64_t index = static_cast<int64_t>(ctx.rank);
    if (extent > 0)
      index = index / stride % extent;
    int64_t first = index * chunk;
    // Rows past the input's end are the padding of the last shard.
    int64_t present = std::clamp<int64_t>(rows - first, 0, chunk);
    const char *src = static_cast<const char *>(ins[0]);
    char *dst = static_cast<char *>(outs[0]);
    for (int64_t o = 0; o < outer; ++o) {
      char *to = dst + o * chunk * rowBytes;
      if (present > 0)
        std::memcpy(to, src + (o * rows + first) * rowBytes,
                    static_cast<size_t>(present * rowBytes));
      if (present < chunk)
        std::memset(to + present * rowBytes, 0,
                    static_cast<size_t>((chunk - present) * rowBytes));
    }
    return absl::OkStatus();
  });
}

/// train.slice (`part` is the result) and train.pad (`part` is the input).
absl::StatusOr<KernelFn> bindSliceOrPad(const BindRequest &request, bool pad) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 1, 1));
  ZERO_ASSIGN_OR_RETURN(int64_t dim, getI64(request, "dim"));
  ZERO_ASSIGN_OR_RETURN(int64_t offset, getI64(request, "offset"));
  const TensorSpec &whole = pad ? request.outs[0] : request.ins[0];
  const TensorSpec &part = pad ? request.ins[0] : request.outs[0];
  ZERO_RETURN_IF_ERROR(checkWindow(request, whole, part, dim, offset));
  Rows rows = rowsAround(whole, dim);
  int64_t wholeBytes = whole.shape[dim] * rows.rowBytes;
  int64_t partBytes = part.shape[dim] * rows.rowBytes;
  int64_t before = offset * rows.rowBytes;
  int64_t after = wholeBytes - before - partBytes;
  return KernelFn([=](absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &) -> absl::Status {
    const char *src = static_cast<const char *>(ins[0]);
    char *dst = static_cast<char *>(outs[0]);
    // Empty tensors have no buffer: every copy and fill below is skipped
    // when it has no bytes (copyBytes, zeroBytes).
    auto zeroBytes = [](char *at, int64_t bytes) {
      if (bytes > 0)
        std::memset(at, 0, static_cast<size_t>(bytes));
    };
    for (int64_t o = 0; o < rows.outer; ++o) {
      if (!pad) {
        copyBytes(dst + o * partBytes, src + o * wholeBytes + before,
                  partBytes);
        continue;
      }
      // Zero is all bits clear in every element type.
      char *row = dst + o * wholeBytes;
      zeroBytes(row, before);
      copyBytes(row + before, src + o * partBytes, partBytes);
      zeroBytes(row + before + partBytes, after);
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindSliceRange(const BindRequest &request) {
  return bindSliceOrPad(request, /*pad=*/false);
}

absl::StatusOr<KernelFn> bindPad(const BindRequest &request) {
  return bindSliceOrPad(request, /*pad=*/true);
}

absl::StatusOr<KernelFn> bindConcat(const BindRequest &request) {
  if (request.ins.empty() || request.outs.size() != 1)
    return request.invalid("needs at least one operand and one result, got ",
                           request.ins.size(), " and ", request.outs.size());
  ZERO_ASSIGN_OR_RETURN(int64_t dim, getI64(request, "dim"));
  const TensorSpec &out = request.outs[0];
  if (dim < 0 || dim >= static_cast<int64_t>(out.shape.size()))
    return request.invalid("dim ", dim, " is out of range for ",
                           specString(out));
  Rows rows = rowsAround(out, dim);
  std::vector<int64_t> partBytes;
  int64_t total = 0;
  for (size_t i = 0; i < request.ins.size(); ++i) {
    const TensorSpec &in = request.ins[i];
    std::vector<int64_t> expected = out.shape;
    expected[dim] = in.shape.size() == out.shape.size() ? in.shape[dim] : 0;
    if (in.dtype != out.dtype || in.shape != expected)
      return request.invalid("operand ", i, " is ", specString(in),
                             "; operands must match the result ",
                             specString(out), " in type and in every dim but ",
                             dim);
    partBytes.push_back(in.shape[dim] * rows.rowBytes);
    total += in.shape[dim];
  }
  if (total != out.shape[dim])
    return request.invalid("operands add up to ", total, " in dim ", dim,
                           ", but the result ", specString(out), " has ",
                           out.shape[dim]);
  int64_t wholeBytes = total * rows.rowBytes;
  return KernelFn([=](absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &) -> absl::Status {
    char *dst = static_cast<char *>(outs[0]);
    for (int64_t o = 0; o < rows.outer; ++o) {
      char *row = dst + o * wholeBytes;
      for (size_t i = 0; i < partBytes.size(); ++i) {
        copyBytes(row, static_cast<const char *>(ins[i]) + o * partBytes[i],
                  partBytes[i]);
        row += partBytes[i];
      }
    }
    return absl::OkStatus();
  });
}

} // namespace zero::rt::cpu
