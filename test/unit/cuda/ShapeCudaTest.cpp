//===- ShapeCudaTest.cpp - Reductions and data movement against CPU -------===//
//
// reduce_sum/mean over every kind of dimension set (both reduction
// strategies of the CUDA kernel), expand, reshape, transpose (also of ids),
// slice, pad and concat, and dist.slice for every rank, padded shards
// included.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include <algorithm>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

std::vector<int64_t> without(const std::vector<int64_t> &shape,
                             const std::vector<int64_t> &dims) {
  std::vector<int64_t> kept;
  for (size_t d = 0; d < shape.size(); ++d)
    if (std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) ==
        dims.end())
      kept.push_back(shape[d]);
  return kept;
}

TEST(ShapeCuda, Reductions) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 1;
  std::vector<int64_t> shape = {3, 5, 1, 67};
  for (const char *name : {"train.reduce_sum", "train.reduce_mean"})
    for (DType dtype : floatTypes())
      for (DType outType : {dtype, DType::f32})
        for (const std::vector<int64_t> &dims : {std::vector<int64_t>{0},
                                                 {1},
                                                 {3},
                                                 {0, 2},
                                                 {1, 3},
                                                 {0, 1, 2, 3},
                                                 {}}) {
          Tensor x = randomTensor(dtype, shape, seed++);
          EXPECT_TRUE(matchesCpu({name,
                                  dict({{"dims", i64s(dims)}}),
                                  {x},
                                  {Tensor(outType, without(shape, dims))}}))
              << dtypeLabel(dtype) << " dims " << dims.size();
        }
  // A long reduction to a scalar, and over the rows of a wide matrix.
  for (auto [big, dims] :
       {std::pair<std::vector<int64_t>, std::vector<int64_t>>{{100003}, {0}},
        {{2000, 33}, {0}}}) {
    Tensor x = randomTensor(DType::f32, big, seed++);
    EXPECT_TRUE(matchesCpu({"train.reduce_sum",
                            dict({{"dims", i64s(dims)}}),
                            {x},
                            {Tensor(DType::f32, without(big, dims))}}));
  }
}

// Reductions over leading dimensions (bias gradients) run the two-pass
// chunked kernel, in the CPU kernel's order: bit for bit equal, on the
// shapes of GPT-2 124M's step (8192 rows of 768 and 3072 features) and on
// row counts that are not a multiple of the chunk.
TEST(ShapeCuda, ColumnReductionsBitwise) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 100;
  for (auto [shape, dims] :
       {std::pair<std::vector<int64_t>, std::vector<int64_t>>{{8192, 768}, {0}},
        {{8192, 3072}, {0}},
        {{8, 1024, 768}, {0, 1}},
        {{1, 65, 1, 7}, {1}},
        {{1000, 3, 1, 5}, {0}},
        {{129, 50257}, {0}}})
    for (DType dtype : floatTypes())
      for (const char *name : {"train.reduce_sum", "train.reduce_mean"}) {
        // The large shapes once, so that the part stays in its time limit
        // under compute-sanitizer (scripts/gpu-check.sh).
        int64_t elements = 1;
        for (int64_t extent : shape)
          elements *= extent;
        if (elements > (1 << 20) && std::string(name) != "train.reduce_sum")
          continue;
        Tensor x = randomTensor(dtype, shape, seed++);
        KernelCase kernel{name,
                          dict({{"dims", i64s(dims)}}),
                          {x},
                          {Tensor(dtype == DType::f32 ? DType::f32 : dtype,
                                  without(shape, dims))}};
        kernel.bitwise = true;
        EXPECT_TRUE(matchesCpu(kernel))
            << dtypeLabel(dtype) << " " << name << " rows " << shape[0];
        kernel.outs = {Tensor(DType::f32, without(shape, dims))};
        EXPECT_TRUE(matchesCpu(kernel))
            << dtypeLabel(dtype) << " into f32 " << name;
      }
}

TEST(ShapeCuda, Expand) {
  SKIP_WITHOUT_CUDA_GPU();
  for (DType dtype : {DType::f32, DType::bf16, DType::f16, DType::i64})
    for (auto [in, out, dims] :
         {std::tuple<std::vector<int64_t>, std::vector<int64_t>,
                     std::vector<int64_t>>{{5}, {3, 5}, {0}},
          {{3, 5}, {3, 4, 5}, {1}},
          {{3, 5}, {3, 5, 2}, {2}},
          {{7}, {2, 7, 3}, {0, 2}},
          {{}, {4, 3}, {0, 1}}}) {
      Tensor x = dtype == DType::i64 ? randomIds(dtype, in, 3, 1000)
                                     : randomTensor(dtype, in, 3);
      EXPECT_TRUE(matchesCpu({"train.expand",
                              dict({{"dims", i64s(dims)}}),
                              {x},
                              {Tensor(dtype, out)}}));
    }
}

TEST(ShapeCuda, ReshapeAndTranspose) {
  SKIP_WITHOUT_CUDA_GPU();
  for (DType dtype : {DType::f32, DType::bf16, DType::f16, DType::i32}) {
    Tensor x = dtype == DType::i32 ? randomIds(dtype, {3, 4, 5}, 1, 1000)
                                   : randomTensor(dtype, {3, 4, 5}, 1);
    EXPECT_TRUE(
        matchesCpu({"train.reshape", {}, {x}, {Tensor(dtype, {12, 5})}}));
    EXPECT_TRUE(matchesCpu(
        {"train.reshape", {}, {x}, {Tensor(dtype, {3, 4, 5})}, {{0, 0}}}));
    for (const std::vector<int64_t> &permutation :
         {std::vector<int64_t>{1, 0, 2},
          {2, 0, 1},
          {0, 2, 1},
          {2, 1, 0},
          {0, 1, 2}}) {
      std::vector<int64_t> out;
      for (int64_t d : permutation)
        out.push_back(x.shape()[d]);
      EXPECT_TRUE(matchesCpu({"train.transpose",
                              dict({{"permutation", i64s(permutation)}}),
                              {x},
                              {Tensor(dtype, out)}}));
    }
  }
}

TEST(ShapeCuda, SliceEveryRank) {
  SKIP_WITHOUT_CUDA_GPU();
  for (DType dtype : {DType::f32, DType::bf16})
    for (int64_t dim : {0, 1}) {
      // 10 rows in shards of 3: rank 3 holds one row and padding, rank 4
      // only padding.
      std::vector<int64_t> in = {10, 10, 3}, out = in;
      out[dim] = 3;
      Tensor x = randomTensor(dtype, in, 5);
      for (int rank = 0; rank < 5; ++rank) {
        KernelCase slice{"dist.slice",
                         dict({{"axis", i64(0)}, {"dim", i64(dim)}}),
                         {x},
                         {Tensor(dtype, out)}};
        slice.ctx.rank = rank;
        EXPECT_TRUE(matchesCpu(slice)) << "dim " << dim << " rank " << rank;
      }
    }
}

// train.slice and train.pad on a leading, middle and last dim (a window of
// one position included), and train.concat of unequal parts, one empty.
TEST(ShapeCuda, SlicePadConcat) {
  SKIP_WITHOUT_CUDA_GPU();
  for (DType dtype : {DType::f32, DType::bf16, DType::i64})
    for (auto [dim, offset, extent] :
         {std::tuple<int64_t, int64_t, int64_t>{0, 1, 2},
          {1, 3, 4},
          {2, 64, 64},
          {2, 127, 1}}) {
      std::vector<int64_t> whole = {3, 9, 192}, part = whole;
      part[dim] = extent;
      Tensor x = dtype == DType::i64 ? randomIds(dtype, whole, 9, 1000)
                                     : randomTensor(dtype, whole, 9);
      Tensor p = dtype == DType::i64 ? randomIds(dtype, part, 10, 1000)
                                     : randomTensor(dtype, part, 10);
      auto params = dict({{"dim", i64(dim)}, {"offset", i64(offset)}});
      EXPECT_TRUE(
          matchesCpu({"train.slice", params, {x}, {Tensor(dtype, part)}}))
          << "slice dim " << dim;
      EXPECT_TRUE(
          matchesCpu({"train.pad", params, {p}, {Tensor(dtype, whole)}}))
          << "pad dim " << dim;
    }
  for (DType dtype : {DType::f32, DType::f16}) {
    std::vector<Tensor> parts = {randomTensor(dtype, {2, 3, 5}, 11),
                                 randomTensor(dtype, {2, 0, 5}, 12),
                                 randomTensor(dtype, {2, 6, 5}, 13)};
    EXPECT_TRUE(matchesCpu({"train.concat",
                            dict({{"dim", i64(1)}}),
                            parts,
                            {Tensor(dtype, {2, 9, 5})}}));
  }
}

} // namespace
