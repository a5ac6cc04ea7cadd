//===- ShapeTest.cpp - Reductions, broadcasts and data movement -----------===//

#include "KernelTestSupport.h"

#include <algorithm>
#include <numeric>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

const DType kFloatTypes[] = {DType::f32, DType::bf16, DType::f16};

/// Multi-index of flat position `flat` in `shape`.
std::vector<int64_t> unflatten(int64_t flat,
                               const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

int64_t flatten(const std::vector<int64_t> &index,
                const std::vector<int64_t> &shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    flat = flat * shape[d] + index[d];
  return flat;
}

std::vector<int64_t> without(const std::vector<int64_t> &values,
                             const std::vector<int64_t> &dims) {
  std::vector<int64_t> kept;
  for (size_t d = 0; d < values.size(); ++d)
    if (std::find(dims.begin(), dims.end(), (int64_t)d) == dims.end())
      kept.push_back(values[d]);
  return kept;
}

struct ReduceCase {
  std::vector<int64_t> shape, dims;
};

const ReduceCase kReduceCases[] = {
    {{32, 17}, {0}},         // A bias gradient.
    {{200, 33}, {0}},        // One over several chunks of rows.
    {{3, 70, 1, 9}, {0, 1}}, // Leading dims merged, then chunked.
    {{4, 700}, {1}},         // A long inner reduction (several blocks).
    {{3, 4, 5}, {0, 2}},     // Alternating kept and reduced runs.
    {{3, 1, 4, 5}, {1, 2}},  // Unit dimensions merge away.
    {{2, 3, 4}, {0, 1, 2}},  // Everything: a scalar.
    {{2, 3}, {}},            // Nothing: a copy.
    {{2, 0, 3}, {1}},        // An empty reduction.
};

TEST(ShapeTest, ReductionsMatchReference) {
  for (bool mean : {false, true})
    for (const ReduceCase &c : kReduceCases)
      for (DType dtype : kFloatTypes) {
        SCOPED_TRACE(::testing::Message()
                     << (mean ? "mean " : "sum ") << dtypeLabel(dtype)
                     << " dims " << c.dims.size() << " of rank "
                     << c.shape.size());
        std::vector<int64_t> outShape = without(c.shape, c.dims);
        Tensor x = randomTensor(dtype, c.shape, 71);
        Tensor y(dtype, outShape);
        y.poison();
        ASSERT_TRUE(runKernel(mean ? "train.reduce_mean" : "train.reduce_sum",
                              dict({{"dims", i64s(c.dims)}}), {&x}, {&y})
                        .ok());
        std::vector<double> want(static_cast<size_t>(y.size()), 0.0);
        int64_t count = 1;
        for (int64_t d : c.dims)
          count *= c.shape[d];
        for (int64_t i = 0; i < x.size(); ++i)
          want[flatten(without(unflatten(i, c.shape), c.dims), outShape)] +=
              x.at(i);
        if (mean)
          for (double &value : want)
            value = count == 0 ? NAN : value / count;
        if (count == 0 && mean) {
          for (int64_t i = 0; i < y.size(); ++i)
            EXPECT_TRUE(std::isnan(y.at(i)));
          continue;
        }
        EXPECT_TRUE(allClose(y, want, 1e-5, relativeTolerance(dtype)));
      }
}

// A reduction over leading dimensions adds each column in chunks of 64
// rows, each from zero, then the chunks in order: the order the CUDA
// kernel parallelizes (runtime/cuda/Shape.cu), pinned here bit for bit.
TEST(ShapeTest, ColumnReductionOrder) {
  const int64_t rows = 200, columns = 33, chunk = 64;
  Tensor x = randomTensor(DType::f32, {rows, columns}, 5);
  Tensor y(DType::f32, {columns});
  ASSERT_TRUE(
      runKernel("train.reduce_sum", dict({{"dims", i64s({0})}}), {&x}, {&y})
          .ok());
  const float *in = static_cast<const float *>(x.data());
  int64_t differsFromSequential = 0;
  for (int64_t c = 0; c < columns; ++c) {
    float total = 0.0f, sequential = 0.0f;
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
      float part = 0.0f;
      for (int64_t r = r0; r < std::min(rows, r0 + chunk); ++r)
        part += in[r * columns + c];
      total += part;
    }
    for (int64_t r = 0; r < rows; ++r)
      sequential += in[r * columns + c];
    EXPECT_EQ(y.at(c), total) << "column " << c;
    differsFromSequential += sequential != total;
  }
  // The order is visible: a plain running sum rounds otherwise somewhere.
  EXPECT_GT(differsFromSequential, 0);
}

TEST(ShapeTest, ExpandInvertsReduceShapes) {
  for (const ReduceCase &c : kReduceCases)
    for (DType dtype : kFloatTypes) {
      std::vector<int64_t> small = without(c.shape, c.dims);
      Tensor x = randomTensor(dtype, small, 72);
      Tensor y(dtype, c.shape);
      y.poison();
      ASSERT_TRUE(
          runKernel("train.expand", dict({{"dims", i64s(c.dims)}}), {&x}, {&y})
              .ok());
      std::vector<double> want;
      for (int64_t i = 0; i < y.size(); ++i)
        want.push_back(
            x.at(flatten(without(unflatten(i, c.shape), c.dims), small)));
      EXPECT_TRUE(allClose(y, want, 0.0, 0.0));
    }
}

TEST(ShapeTest, TransposeMatchesReference) {
  struct Case {
    std::vector<int64_t> shape, permutation;
  };
  const Case cases[] = {
      {{2, 16, 4, 8}, {0, 2, 1, 3}}, // Attention heads.
      {{5, 7}, {1, 0}},
      {{2, 3, 4}, {2, 0, 1}},
      {{2, 3, 4}, {0, 1, 2}},
      {{3, 1, 4}, {1, 2, 0}},
  };
  for (const Case &c : cases)
    for (DType dtype : {DType::f32, DType::bf16, DType::i64}) {
      std::vector<int64_t> outShape;
      for (int64_t d : c.permutation)
        outShape.push_back(c.shape[d]);
      Tensor x = randomTensor(dtype, c.shape, 73, -1000, 1000);
      Tensor y(dtype, outShape);
      y.poison();
      ASSERT_TRUE(runKernel("train.transpose",
                            dict({{"permutation", i64s(c.permutation)}}), {&x},
                            {&y})
                      .ok());
      std::vector<double> want;
      for (int64_t i = 0; i < y.size(); ++i) {
        std::vector<int64_t> outIndex = unflatten(i, outShape),
                             inIndex(c.shape.size());
        for (size_t d = 0; d < outIndex.size(); ++d)
          inIndex[c.permutation[d]] = outIndex[d];
        want.push_back(x.at(flatten(inIndex, c.shape)));
      }
      EXPECT_TRUE(allClose(y, want, 0.0, 0.0));
    }
}

TEST(ShapeTest, ReshapeKeepsBytes) {
  Tensor x = randomTensor(DType::bf16, {2, 16, 64}, 74);
  Tensor y(DType::bf16, {2, 16, 4, 16});
  ASSERT_TRUE(runKernel("train.reshape", {}, {&x}, {&y}).ok());
  EXPECT_TRUE(allClose(y, x.values(), 0.0, 0.0));
  Tensor wrong(DType::bf16, {2, 16, 63});
  EXPECT_EQ(runKernel("train.reshape", {}, {&x}, {&wrong}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ShapeTest, SliceTakesThisRanksRowsAndZeroPads) {
  // A flat tensor of 10 over 4 ranks: chunks of 3, the last with 2 of
  // padding.
  Tensor flat = randomTensor(DType::f32, {10}, 75);
  for (int rank = 0; rank < 4; ++rank) {
    Tensor out(DType::f32, {3});
    out.poison();
    KernelContext ctx;
    ctx.rank = rank;
    ctx.groupSize = 4;
    ASSERT_TRUE(runKernel("dist.slice",
                          dict({{"axis", i64(0)}, {"dim", i64(0)}}), {&flat},
                          {&out}, ctx)
                    .ok());
    std::vector<double> want;
    for (int64_t j = 0; j < 3; ++j)
      want.push_back(rank * 3 + j < 10 ? flat.at(rank * 3 + j) : 0.0);
    EXPECT_TRUE(allClose(out, want, 0.0, 0.0)) << "rank " << rank;
  }
  // Dimension 1 of [2, 5, 3] over 2 ranks: rows [3, 6) of 5 for rank 1.
  Tensor x = randomTensor(DType::bf16, {2, 5, 3}, 76);
  Tensor out(DType::bf16, {2, 3, 3});
  out.poison();
  KernelContext ctx;
  ctx.rank = 1;
  ctx.groupSize = 2;
  ASSERT_TRUE(runKernel("dist.slice", dict({{"axis", i64(0)}, {"dim", i64(1)}}),
                        {&x}, {&out}, ctx)
                  .ok());
  std::vector<double> want;
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t r = 3; r < 6; ++r)
      for (int64_t c = 0; c < 3; ++c)
        want.push_back(r < 5 ? x.at((a * 5 + r) * 3 + c) : 0.0);
  EXPECT_TRUE(allClose(out, want, 0.0, 0.0));
  // The result may differ from the input only along `dim`.
  Tensor bad(DType::bf16, {2, 3, 2});
  EXPECT_FALSE(runKernel("dist.slice",
                         dict({{"axis", i64(0)}, {"dim", i64(1)}}), {&x},
                         {&bad}, ctx)
                   .ok());
  EXPECT_FALSE(runKernel("dist.slice",
                         dict({{"axis", i64(0)}, {"dim", i64(3)}}), {&x},
                         {&out}, ctx)
                   .ok());
}

struct WindowCase {
  std::vector<int64_t> whole;
  int64_t dim, offset, extent;
};

const WindowCase kWindowCases[] = {
    {{6, 3}, 0, 2, 3},        // Leading dim: one contiguous block.
    {{2, 5, 3}, 1, 1, 3},     // Middle dim: a block per outer position.
    {{2, 3, 192}, 2, 64, 64}, // GPT-2's key out of a fused Q/K/V.
    {{4, 7}, 1, 6, 1},        // The last position (a shifted target).
    {{3, 4}, 1, 2, 0},        // Empty.
};

const DType kMovableTypes[] = {DType::f32, DType::bf16, DType::f16, DType::i32,
                               DType::i64};

std::vector<int64_t> windowShape(const WindowCase &c) {
  std::vector<int64_t> part = c.whole;
  part[c.dim] = c.extent;
  return part;
}

TEST(ShapeTest, SliceAndPadMoveTheWindow) {
  for (const WindowCase &c : kWindowCases)
    for (DType dtype : kMovableTypes) {
      SCOPED_TRACE("dim " + std::to_string(c.dim) + " offset " +
                   std::to_string(c.offset) + " " + dtypeLabel(dtype));
      std::vector<int64_t> part = windowShape(c);
      auto params = dict({{"dim", i64(c.dim)}, {"offset", i64(c.offset)}});
      Tensor x = isFloat(dtype) ? randomTensor(dtype, c.whole, 81)
                                : randomIds(dtype, c.whole, 81, 1000);
      Tensor sliced(dtype, part);
      sliced.poison();
      ASSERT_TRUE(runKernel("train.slice", params, {&x}, {&sliced}).ok());
      std::vector<double> want;
      for (int64_t i = 0; i < sliced.size(); ++i) {
        std::vector<int64_t> index = unflatten(i, part);
        index[c.dim] += c.offset;
        want.push_back(x.at(flatten(index, c.whole)));
      }
      EXPECT_TRUE(allClose(sliced, want, 0.0, 0.0));
      // Padding the slice back gives the input inside the window, zero
      // around it.
      Tensor padded(dtype, c.whole);
      padded.poison();
      ASSERT_TRUE(runKernel("train.pad", params, {&sliced}, {&padded}).ok());
      want.clear();
      for (int64_t i = 0; i < x.size(); ++i) {
        int64_t position = unflatten(i, c.whole)[c.dim];
        bool inside = position >= c.offset && position < c.offset + c.extent;
        want.push_back(inside ? x.at(i) : 0.0);
      }
      EXPECT_TRUE(allClose(padded, want, 0.0, 0.0));
    }
}

TEST(ShapeTest, ConcatJoinsInOperandOrder) {
  for (DType dtype : kMovableTypes) {
    SCOPED_TRACE(dtypeLabel(dtype));
    // Unequal parts along a middle dim, one of them empty.
    std::vector<std::vector<int64_t>> shapes = {
        {2, 1, 3}, {2, 4, 3}, {2, 0, 3}, {2, 2, 3}};
    std::vector<Tensor> parts;
    for (size_t i = 0; i < shapes.size(); ++i)
      parts.push_back(isFloat(dtype)
                          ? randomTensor(dtype, shapes[i], 90 + i)
                          : randomIds(dtype, shapes[i], 90 + i, 1000));
    std::vector<const Tensor *> ins;
    for (const Tensor &part : parts)
      ins.push_back(&part);
    Tensor joined(dtype, {2, 7, 3});
    joined.poison();
    ASSERT_TRUE(
        runKernel("train.concat", dict({{"dim", i64(1)}}), ins, {&joined})
            .ok());
    std::vector<double> want;
    for (int64_t a = 0; a < 2; ++a)
      for (const Tensor &part : parts)
        for (int64_t r = 0; r < part.shape()[1]; ++r)
          for (int64_t c = 0; c < 3; ++c)
            want.push_back(part.at((a * part.shape()[1] + r) * 3 + c));
    EXPECT_TRUE(allClose(joined, want, 0.0, 0.0));
  }
}

TEST(ShapeTest, RejectsWindowsThatDoNotFit) {
  Tensor x(DType::f32, {4, 6}), y(DType::f32, {4, 2}), z(DType::f32, {3, 2});
  auto at = [](int64_t dim, int64_t offset) {
    return dict({{"dim", i64(dim)}, {"offset", i64(offset)}});
  };
  EXPECT_TRUE(bindKernel("train.slice", at(1, 4), {&x}, {&y}).ok());
  EXPECT_FALSE(bindKernel("train.slice", at(1, 5), {&x}, {&y}).ok());
  EXPECT_FALSE(bindKernel("train.slice", at(1, -1), {&x}, {&y}).ok());
  EXPECT_FALSE(bindKernel("train.slice", at(2, 0), {&x}, {&y}).ok());
  EXPECT_FALSE(bindKernel("train.slice", at(1, 0), {&x}, {&z}).ok());
  EXPECT_FALSE(bindKernel("train.pad", at(1, 5), {&y}, {&x}).ok());
  EXPECT_FALSE(
      bindKernel("train.slice", dict({{"dim", i64(1)}}), {&x}, {&y}).ok());
  Tensor h(DType::bf16, {4, 2});
  EXPECT_FALSE(bindKernel("train.slice", at(1, 0), {&x}, {&h}).ok());
  // Concat: parts that do not add up, or disagree outside `dim`.
  Tensor w(DType::f32, {4, 4});
  EXPECT_TRUE(
      bindKernel("train.concat", dict({{"dim", i64(1)}}), {&y, &w}, {&x}).ok());
  EXPECT_FALSE(
      bindKernel("train.concat", dict({{"dim", i64(1)}}), {&y, &y}, {&x}).ok());
  EXPECT_FALSE(
      bindKernel("train.concat", dict({{"dim", i64(1)}}), {&z, &w}, {&x}).ok());
  EXPECT_FALSE(
      bindKernel("train.concat", dict({{"dim", i64(1)}}), {&h, &w}, {&x}).ok());
  EXPECT_FALSE(
      bindKernel("train.concat", dict({{"dim", i64(1)}}), {}, {&x}).ok());
}

TEST(ShapeTest, RejectsBadDims) {
  Tensor x(DType::f32, {3, 4}), y(DType::f32, {4}), z(DType::f32, {3});
  EXPECT_TRUE(
      bindKernel("train.reduce_sum", dict({{"dims", i64s({0})}}), {&x}, {&y})
          .ok());
  EXPECT_FALSE(
      bindKernel("train.reduce_sum", dict({{"dims", i64s({0})}}), {&x}, {&z})
          .ok());
  EXPECT_FALSE(
      bindKernel("train.reduce_sum", dict({{"dims", i64s({2})}}), {&x}, {&y})
          .ok());
  EXPECT_FALSE(
      bindKernel("train.reduce_sum", dict({{"dims", i64s({1, 0})}}), {&x}, {&y})
          .ok());
  EXPECT_FALSE(bindKernel("train.reduce_sum", {}, {&x}, {&y}).ok());
  EXPECT_FALSE(
      bindKernel("train.expand", dict({{"dims", i64s({1})}}), {&y}, {&x}).ok());
  Tensor t(DType::f32, {4, 3});
  EXPECT_TRUE(bindKernel("train.transpose",
                         dict({{"permutation", i64s({1, 0})}}), {&x}, {&t})
                  .ok());
  EXPECT_FALSE(bindKernel("train.transpose",
                          dict({{"permutation", i64s({0, 0})}}), {&x}, {&t})
                   .ok());
  EXPECT_FALSE(bindKernel("train.transpose", dict({{"permutation", i64s({1})}}),
                          {&x}, {&t})
                   .ok());
  EXPECT_FALSE(bindKernel("train.transpose",
                          dict({{"permutation", i64s({0, 1})}}), {&x}, {&t})
                   .ok());
}

} // namespace
