//===- EmbeddingLossCudaTest.cpp - Lookups and cross-entropy against CPU --===//
//
// i32 and i64 ids, repeated ids (the gradient sums them in position order,
// bit for bit the CPU's), vocabularies wider than a CUDA block, and the
// NaN results the CUDA kernels give for ids out of range where the CPU
// kernels return an error.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include <cmath>

#include <cuda_runtime_api.h>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

TEST(EmbeddingLossCuda, Embedding) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 1;
  for (DType dtype : floatTypes())
    for (DType idType : {DType::i32, DType::i64})
      for (auto [vocabulary, features] :
           {std::pair<int64_t, int64_t>{11, 5}, {300, 130}}) {
        Tensor table = randomTensor(dtype, {vocabulary, features}, seed++);
        Tensor ids = randomIds(idType, {2, 7}, seed++, vocabulary);
        EXPECT_TRUE(matchesCpu({"train.embedding",
                                {},
                                {table, ids},
                                {Tensor(dtype, {2, 7, features})}}));
      }
}

TEST(EmbeddingLossCuda, EmbeddingGrad) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 100;
  for (DType dyType : floatTypes())
    for (DType tableType : floatTypes())
      for (DType idType : {DType::i32, DType::i64})
        for (auto [vocabulary, features, count] :
             {std::tuple<int64_t, int64_t, int64_t>{11, 5, 9},
              {40, 300, 600},
              {7, 3, 1}}) {
          Tensor dy = randomTensor(dyType, {count, features}, seed++);
          // Fewer ids than rows, many repeats: both paths of the kernel.
          Tensor ids = randomIds(idType, {count}, seed++, vocabulary / 2 + 1);
          EXPECT_TRUE(
              matchesCpu({"train.embedding_grad",
                          {},
                          {dy, ids},
                          {Tensor(tableType, {vocabulary, features})}}));
          // PyTorch's padding_idx: row 0 (among the ids in most cases)
          // gets no gradient.
          EXPECT_TRUE(
              matchesCpu({"train.embedding_grad",
                          dict({{"padding_idx", i64(0)}}),
                          {dy, ids},
                          {Tensor(tableType, {vocabulary, features})}}));
        }
}

// The ids sorted on the device (CUB's stable radix sort), each row summed in
// position order: bit for bit the CPU kernel, at GPT-2 124M's shapes (8192
// positions into 50257 rows of 768) with a skewed id distribution (a few
// ids repeated hundreds of times, most never), and with padding_idx.
TEST(EmbeddingLossCuda, EmbeddingGradBitwise) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 300;
  for (auto [count, vocabulary, features, idRange] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t>{8192, 50257, 768, 50257},
        {8192, 50257, 64, 40},
        {1000, 16, 300, 16},
        {3, 5, 1, 5}})
    for (DType dyType : floatTypes())
      for (DType idType : {DType::i32, DType::i64})
        for (int64_t padding : {int64_t{-1}, int64_t{3}}) {
          Tensor dy = randomTensor(dyType, {count, features}, seed++);
          Tensor ids = randomIds(idType, {count}, seed++, idRange);
          KernelCase kernel{"train.embedding_grad",
                            padding < 0 ? mlir::DictionaryAttr()
                                        : dict({{"padding_idx", i64(padding)}}),
                            {dy, ids},
                            {Tensor(dyType, {vocabulary, features})}};
          kernel.bitwise = true;
          EXPECT_TRUE(matchesCpu(kernel))
              << count << " ids into " << vocabulary << " x " << features << " "
              << dtypeLabel(dyType) << " padding " << padding;
        }
}

TEST(EmbeddingLossCuda, CrossEntropyAndGradient) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 200;
  for (DType dtype : floatTypes())
    for (DType labelType : {DType::i32, DType::i64})
      for (const std::vector<int64_t> &shape :
           {std::vector<int64_t>{1, 3}, {4, 17}, {2, 3, 1000}}) {
        Tensor logits = randomTensor(dtype, shape, seed++, -6.0, 6.0);
        Tensor labels = randomIds(
            labelType, std::vector<int64_t>(shape.begin(), shape.end() - 1),
            seed++, shape.back());
        Tensor loss(DType::f32, {});
        EXPECT_TRUE(matchesCpu(
            {"train.softmax_cross_entropy", {}, {logits, labels}, {loss}}));
        Tensor lossGrad = fromValues(DType::f32, {}, {0.75});
        EXPECT_TRUE(matchesCpu({"train.softmax_cross_entropy_grad",
                                {},
                                {logits, labels, lossGrad},
                                {logits}}));
        EXPECT_TRUE(matchesCpu({"train.softmax_cross_entropy_grad",
                                {},
                                {logits, labels, lossGrad},
                                {logits},
                                {{0, 0}}}));
      }
}

/// PyTorch's ignore_index (with the count of labels kept) and
/// label_smoothing, against the CPU kernels.
TEST(EmbeddingLossCuda, IgnoredLabelsAndSmoothing) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 300;
  for (DType dtype : floatTypes())
    for (DType labelType : {DType::i32, DType::i64})
      for (double smoothing : {0.0, 0.1}) {
        Tensor logits = randomTensor(dtype, {6, 300}, seed++, -6.0, 6.0);
        Tensor labels = fromValues(labelType, {6}, {3, -100, 0, 299, -100, 17});
        mlir::DictionaryAttr ignore = dict(
            {{"ignore_index", i64(-100)}, {"label_smoothing", f64(smoothing)}});
        Tensor count = fromValues(DType::f32, {}, {4.0});
        EXPECT_TRUE(matchesCpu({"train.count_labels",
                                dict({{"ignore_index", i64(-100)}}),
                                {labels},
                                {Tensor(DType::f32, {})}}));
        EXPECT_TRUE(matchesCpu({"train.softmax_cross_entropy",
                                ignore,
                                {logits, labels, count},
                                {Tensor(DType::f32, {})}}));
        Tensor lossGrad = fromValues(DType::f32, {}, {0.75});
        EXPECT_TRUE(matchesCpu({"train.softmax_cross_entropy_grad",
                                ignore,
                                {logits, labels, lossGrad, count},
                                {logits}}));
      }
}

TEST(EmbeddingLossCuda, IdsOutOfRangeGiveNaN) {
  SKIP_WITHOUT_CUDA_GPU();
  Tensor table = randomTensor(DType::f32, {4, 3}, 1);
  Tensor ids = fromValues(DType::i32, {2}, {1, 4});
  std::vector<TensorSpec> ins = {table.spec(), ids.spec()};
  std::vector<TensorSpec> outs = {TensorSpec{DType::f32, {2, 3}}};
  absl::StatusOr<KernelFn> kernel =
      bindCudaKernel("train.embedding", {}, ins, outs, nullptr);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  void *deviceTable = nullptr, *deviceIds = nullptr, *deviceOut = nullptr;
  ASSERT_EQ(cudaMalloc(&deviceTable, 12 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&deviceIds, 2 * sizeof(int32_t)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&deviceOut, 6 * sizeof(float)), cudaSuccess);
  cudaMemcpy(deviceTable, table.data(), 12 * sizeof(float),
             cudaMemcpyHostToDevice);
  cudaMemcpy(deviceIds, ids.data(), 2 * sizeof(int32_t),
             cudaMemcpyHostToDevice);
  std::vector<const void *> inPtrs = {deviceTable, deviceIds};
  std::vector<void *> outPtrs = {deviceOut};
  EXPECT_TRUE((*kernel)(inPtrs, outPtrs, {}).ok());
  std::vector<float> out(6);
  cudaMemcpy(out.data(), deviceOut, 6 * sizeof(float), cudaMemcpyDeviceToHost);
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(out[j], table.at(3 + j));
    EXPECT_TRUE(std::isnan(out[3 + j]));
  }
  cudaFree(deviceTable);
  cudaFree(deviceIds);
  cudaFree(deviceOut);
}

} // namespace
