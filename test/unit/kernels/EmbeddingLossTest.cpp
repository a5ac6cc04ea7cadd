//===- EmbeddingLossTest.cpp - Lookups, cross-entropy and bad ids ---------===//

#include "KernelTestSupport.h"

#include <cmath>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

const DType kFloatTypes[] = {DType::f32, DType::bf16, DType::f16};
const DType kIndexTypes[] = {DType::i32, DType::i64};

TEST(EmbeddingLossTest, EmbeddingCopiesRows) {
  for (DType dtype : kFloatTypes)
    for (DType idType : kIndexTypes) {
      Tensor table = randomTensor(dtype, {11, 6}, 51);
      Tensor ids = randomIds(idType, {2, 5}, 52, 11);
      Tensor out(dtype, {2, 5, 6});
      out.poison();
      ASSERT_TRUE(
          runKernel("train.embedding", {}, {&table, &ids}, {&out}).ok());
      std::vector<double> want;
      for (int64_t p = 0; p < ids.size(); ++p)
        for (int64_t j = 0; j < 6; ++j)
          want.push_back(table.at(static_cast<int64_t>(ids.at(p)) * 6 + j));
      EXPECT_TRUE(allClose(out, want, 0.0, 0.0));
    }
}

TEST(EmbeddingLossTest, EmbeddingGradScatterAdds) {
  for (DType dtype : kFloatTypes)
    for (DType idType : kIndexTypes) {
      SCOPED_TRACE(dtypeLabel(dtype) + " ids " + dtypeLabel(idType));
      const int64_t vocab = 9, features = 5;
      // More positions than rows: ids repeat, and some rows get none.
      Tensor ids = randomIds(idType, {3, 8}, 53, vocab - 2);
      Tensor dy = randomTensor(dtype, {3, 8, features}, 54);
      Tensor table(dtype, {vocab, features});
      table.poison();
      ASSERT_TRUE(
          runKernel("train.embedding_grad", {}, {&dy, &ids}, {&table}).ok());
      std::vector<double> want(vocab * features, 0.0);
      for (int64_t p = 0; p < ids.size(); ++p)
        for (int64_t j = 0; j < features; ++j)
          want[static_cast<int64_t>(ids.at(p)) * features + j] +=
              dy.at(p * features + j);
      EXPECT_TRUE(allClose(table, want, 1e-6, relativeTolerance(dtype)));
    }
}

TEST(EmbeddingLossTest, EmbeddingGradSkipsThePaddingRow) {
  // PyTorch's nn.Embedding(padding_idx=2): the row is looked up like any
  // other but gets no gradient; every other row gets its scatter-add.
  for (DType dtype : kFloatTypes) {
    SCOPED_TRACE(dtypeLabel(dtype));
    const int64_t vocab = 6, features = 3, padding = 2;
    Tensor ids = fromValues(DType::i64, {8}, {2, 0, 2, 5, 2, 1, 0, 2});
    Tensor dy = randomTensor(dtype, {8, features}, 58);
    Tensor table(dtype, {vocab, features});
    table.poison();
    ASSERT_TRUE(runKernel("train.embedding_grad",
                          dict({{"padding_idx", i64(padding)}}), {&dy, &ids},
                          {&table})
                    .ok());
    std::vector<double> want(vocab * features, 0.0);
    for (int64_t p = 0; p < ids.size(); ++p) {
      int64_t row = static_cast<int64_t>(ids.at(p));
      if (row != padding)
        for (int64_t j = 0; j < features; ++j)
          want[row * features + j] += dy.at(p * features + j);
    }
    EXPECT_TRUE(allClose(table, want, 1e-6, relativeTolerance(dtype)));
  }
}

TEST(EmbeddingLossTest, PaddingRowOutsideTheTableIsAnError) {
  Tensor ids = fromValues(DType::i64, {2}, {0, 1});
  Tensor dy = randomTensor(DType::f32, {2, 3}, 59);
  Tensor table(DType::f32, {4, 3});
  absl::Status status =
      runKernel("train.embedding_grad", dict({{"padding_idx", i64(4)}}),
                {&dy, &ids}, {&table});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(status.message()).find("padding_idx 4"),
            std::string::npos)
      << status.message();
}

TEST(EmbeddingLossTest, EmbeddingGradMatchesFiniteDifferences) {
  Tensor table = randomTensor(DType::f32, {7, 4}, 55);
  Tensor ids = fromValues(DType::i64, {6}, {3, 0, 3, 6, 1, 3});
  Tensor w = randomTensor(DType::f32, {6, 4}, 56);
  auto loss = [&](const Tensor &t) {
    Tensor out(DType::f32, {6, 4});
    EXPECT_TRUE(runKernel("train.embedding", {}, {&t, &ids}, {&out}).ok());
    return weightedSum(out, w.values());
  };
  Tensor grad(DType::f32, {7, 4});
  ASSERT_TRUE(runKernel("train.embedding_grad", {}, {&w, &ids}, {&grad}).ok());
  EXPECT_TRUE(checkGradient(table, loss, grad.values(), 1e-2, 1e-4, 1e-3));
}

TEST(EmbeddingLossTest, OutOfRangeIdsAreErrors) {
  for (DType idType : kIndexTypes)
    for (double bad : {11.0, -1.0}) {
      Tensor table = randomTensor(DType::f32, {11, 6}, 57);
      Tensor ids = fromValues(idType, {3}, {2, bad, 4});
      Tensor out(DType::f32, {3, 6});
      absl::Status status =
          runKernel("train.embedding", {}, {&table, &ids}, {&out});
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
      std::string message(status.message());
      EXPECT_NE(message.find("train.embedding"), std::string::npos) << message;
      EXPECT_NE(message.find(std::to_string(static_cast<int64_t>(bad))),
                std::string::npos)
          << message;
      EXPECT_NE(message.find("[0, 11)"), std::string::npos) << message;

      Tensor dy(DType::f32, {3, 6}), grad(DType::f32, {11, 6});
      EXPECT_EQ(
          runKernel("train.embedding_grad", {}, {&dy, &ids}, {&grad}).code(),
          absl::StatusCode::kInvalidArgument);

      Tensor logits(DType::f32, {3, 11}), loss(DType::f32, {});
      EXPECT_EQ(
          runKernel("train.softmax_cross_entropy", {}, {&logits, &ids}, {&loss})
              .code(),
          absl::StatusCode::kInvalidArgument);
      Tensor one = fromValues(DType::f32, {}, {1.0});
      Tensor dlogits(DType::f32, {3, 11});
      EXPECT_EQ(runKernel("train.softmax_cross_entropy_grad", {},
                          {&logits, &ids, &one}, {&dlogits})
                    .code(),
                absl::StatusCode::kInvalidArgument);
    }
}

double crossEntropyRef(const Tensor &logits, const Tensor &labels) {
  int64_t rows = labels.size(), classes = logits.size() / rows;
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    double max = -INFINITY, sum = 0.0;
    for (int64_t j = 0; j < classes; ++j)
      max = std::max(max, logits.at(r * classes + j));
    for (int64_t j = 0; j < classes; ++j)
      sum += std::exp(logits.at(r * classes + j) - max);
    total += std::log(sum) + max -
             logits.at(r * classes + static_cast<int64_t>(labels.at(r)));
  }
  return total / rows;
}

TEST(EmbeddingLossTest, CrossEntropyMatchesReference) {
  for (DType dtype : kFloatTypes)
    for (DType idType : kIndexTypes) {
      SCOPED_TRACE(dtypeLabel(dtype) + " labels " + dtypeLabel(idType));
      Tensor logits = randomTensor(dtype, {2, 6, 10}, 58, -4, 4);
      Tensor labels = randomIds(idType, {2, 6}, 59, 10);
      Tensor loss(DType::f32, {});
      ASSERT_TRUE(runKernel("train.softmax_cross_entropy", {},
                            {&logits, &labels}, {&loss})
                      .ok());
      // The loss is f32 whatever the logits' type.
      EXPECT_TRUE(
          allClose(loss, {crossEntropyRef(logits, labels)}, 1e-6, 1e-5));
    }
}

TEST(EmbeddingLossTest, CrossEntropyGradMatchesReferenceAndFiniteDifferences) {
  const double lossGrad = 1.7;
  Tensor scale = fromValues(DType::f32, {}, {lossGrad});
  for (DType dtype : kFloatTypes) {
    SCOPED_TRACE(dtypeLabel(dtype));
    Tensor logits = randomTensor(dtype, {4, 9}, 60, -3, 3);
    Tensor labels = randomIds(DType::i32, {4}, 61, 9);
    Tensor grad(dtype, {4, 9});
    ASSERT_TRUE(runKernel("train.softmax_cross_entropy_grad", {},
                          {&logits, &labels, &scale}, {&grad})
                    .ok());
    std::vector<double> want;
    for (int64_t r = 0; r < 4; ++r) {
      double max = -INFINITY, sum = 0.0;
      for (int64_t j = 0; j < 9; ++j)
        max = std::max(max, logits.at(r * 9 + j));
      for (int64_t j = 0; j < 9; ++j)
        sum += std::exp(logits.at(r * 9 + j) - max);
      for (int64_t j = 0; j < 9; ++j)
        want.push_back((std::exp(logits.at(r * 9 + j) - max) / sum -
                        (j == labels.at(r) ? 1.0 : 0.0)) *
                       lossGrad / 4.0);
    }
    EXPECT_TRUE(allClose(grad, want, 1e-6, relativeTolerance(dtype)));
  }

  Tensor logits = randomTensor(DType::f32, {2, 3, 5}, 62, -3, 3);
  Tensor labels = randomIds(DType::i64, {2, 3}, 63, 5);
  auto loss = [&](const Tensor &t) {
    Tensor out(DType::f32, {});
    EXPECT_TRUE(
        runKernel("train.softmax_cross_entropy", {}, {&t, &labels}, {&out})
            .ok());
    return lossGrad * out.at(0);
  };
  Tensor grad(DType::f32, {2, 3, 5});
  ASSERT_TRUE(runKernel("train.softmax_cross_entropy_grad", {},
                        {&logits, &labels, &scale}, {&grad})
                  .ok());
  EXPECT_TRUE(checkGradient(logits, loss, grad.values(), 1e-2, 1e-3, 1e-2));
}

/// PyTorch's ignore_index: the labels equal to it take no part, and the
/// others' terms are divided by the count given (on one rank, their own
/// number). Rows 1 and 4 of six are ignored.
TEST(EmbeddingLossTest, IgnoredLabelsTakeNoPart) {
  for (DType idType : kIndexTypes) {
    SCOPED_TRACE("labels " + dtypeLabel(idType));
    Tensor logits = randomTensor(DType::f32, {6, 7}, 64, -3, 3);
    Tensor labels = fromValues(idType, {6}, {3, -100, 0, 6, -100, 2});
    mlir::DictionaryAttr ignore = dict({{"ignore_index", i64(-100)}});
    Tensor count(DType::f32, {});
    ASSERT_TRUE(
        runKernel("train.count_labels", ignore, {&labels}, {&count}).ok());
    EXPECT_EQ(count.at(0), 4.0);

    // The reference: the four kept rows alone, without ignore_index.
    Tensor keptLogits(DType::f32, {4, 7});
    Tensor keptLabels = fromValues(idType, {4}, {3, 0, 6, 2});
    int64_t kept = 0;
    for (int64_t r : {0, 2, 3, 5}) {
      for (int64_t j = 0; j < 7; ++j)
        keptLogits.set(kept * 7 + j, logits.at(r * 7 + j));
      ++kept;
    }
    Tensor loss(DType::f32, {}), want(DType::f32, {});
    ASSERT_TRUE(runKernel("train.softmax_cross_entropy", ignore,
                          {&logits, &labels, &count}, {&loss})
                    .ok());
    ASSERT_TRUE(runKernel("train.softmax_cross_entropy", {},
                          {&keptLogits, &keptLabels}, {&want})
                    .ok());
    EXPECT_EQ(loss.at(0), want.at(0));

    Tensor seed = fromValues(DType::f32, {}, {1.5});
    Tensor grad(DType::f32, {6, 7}), wantGrad(DType::f32, {4, 7});
    ASSERT_TRUE(runKernel("train.softmax_cross_entropy_grad", ignore,
                          {&logits, &labels, &seed, &count}, {&grad})
                    .ok());
    ASSERT_TRUE(runKernel("train.softmax_cross_entropy_grad", {},
                          {&keptLogits, &keptLabels, &seed}, {&wantGrad})
                    .ok());
    kept = 0;
    for (int64_t r = 0; r < 6; ++r) {
      bool ignored = r == 1 || r == 4;
      for (int64_t j = 0; j < 7; ++j)
        EXPECT_EQ(grad.at(r * 7 + j), ignored ? 0.0 : wantGrad.at(kept * 7 + j))
            << "row " << r << " class " << j;
      kept += !ignored;
    }

    // A count from elsewhere (the ranks' average) divides instead.
    Tensor global = fromValues(DType::f32, {}, {8.0});
    ASSERT_TRUE(runKernel("train.softmax_cross_entropy", ignore,
                          {&logits, &labels, &global}, {&loss})
                    .ok());
    EXPECT_FLOAT_EQ(loss.at(0), want.at(0) / 2);

    // A label neither a class nor ignored is still an error.
    Tensor bad = fromValues(idType, {6}, {3, -100, 0, 7, -100, 2});
    EXPECT_EQ(runKernel("train.softmax_cross_entropy", ignore,
                        {&logits, &bad, &count}, {&loss})
                  .code(),
              absl::StatusCode::kInvalidArgument);
  }
}

/// PyTorch's label_smoothing e: the target is 1 - e on the label and e / C
/// on every class; the gradient holds against finite differences.
TEST(EmbeddingLossTest, LabelSmoothingIsPyTorchs) {
  const double e = 0.2;
  mlir::DictionaryAttr smooth = dict({{"label_smoothing", f64(e)}});
  Tensor logits = randomTensor(DType::f32, {3, 6}, 67, -3, 3);
  Tensor labels = randomIds(DType::i64, {3}, 68, 6);
  double want = 0.0;
  for (int64_t r = 0; r < 3; ++r) {
    double max = -INFINITY, sum = 0.0, mean = 0.0;
    for (int64_t j = 0; j < 6; ++j)
      max = std::max(max, logits.at(r * 6 + j));
    for (int64_t j = 0; j < 6; ++j) {
      sum += std::exp(logits.at(r * 6 + j) - max);
      mean += logits.at(r * 6 + j) / 6;
    }
    double label = logits.at(r * 6 + static_cast<int64_t>(labels.at(r)));
    want += std::log(sum) + max - (1 - e) * label - e * mean;
  }
  Tensor loss(DType::f32, {});
  ASSERT_TRUE(runKernel("train.softmax_cross_entropy", smooth,
                        {&logits, &labels}, {&loss})
                  .ok());
  EXPECT_TRUE(allClose(loss, {want / 3}, 1e-6, 1e-5));

  Tensor seed = fromValues(DType::f32, {}, {1.0});
  Tensor grad(DType::f32, {3, 6});
  ASSERT_TRUE(runKernel("train.softmax_cross_entropy_grad", smooth,
                        {&logits, &labels, &seed}, {&grad})
                  .ok());
  auto lossOf = [&](const Tensor &t) {
    Tensor out(DType::f32, {});
    EXPECT_TRUE(
        runKernel("train.softmax_cross_entropy", smooth, {&t, &labels}, {&out})
            .ok());
    return out.at(0);
  };
  EXPECT_TRUE(checkGradient(logits, lossOf, grad.values(), 1e-2, 1e-3, 1e-2));

  EXPECT_EQ(bindKernel("train.softmax_cross_entropy",
                       dict({{"label_smoothing", f64(1.5)}}),
                       {&logits, &labels}, {&loss})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

/// Every label ignored: PyTorch's NaN loss (0 / 0) and zero gradient.
TEST(EmbeddingLossTest, EveryLabelIgnoredIsNanLossAndZeroGradient) {
  mlir::DictionaryAttr ignore = dict({{"ignore_index", i64(-1)}});
  Tensor logits = randomTensor(DType::bf16, {3, 5}, 65, -3, 3);
  Tensor labels = fromValues(DType::i32, {3}, {-1, -1, -1});
  Tensor count(DType::f32, {}), loss(DType::f32, {});
  ASSERT_TRUE(
      runKernel("train.count_labels", ignore, {&labels}, {&count}).ok());
  EXPECT_EQ(count.at(0), 0.0);
  ASSERT_TRUE(runKernel("train.softmax_cross_entropy", ignore,
                        {&logits, &labels, &count}, {&loss})
                  .ok());
  EXPECT_TRUE(std::isnan(loss.at(0)));
  Tensor seed = fromValues(DType::f32, {}, {1.0});
  Tensor grad = randomTensor(DType::bf16, {3, 5}, 66, 1, 2);
  ASSERT_TRUE(runKernel("train.softmax_cross_entropy_grad", ignore,
                        {&logits, &labels, &seed, &count}, {&grad})
                  .ok());
  for (int64_t i = 0; i < 15; ++i)
    EXPECT_EQ(grad.at(i), 0.0) << i;
}

TEST(EmbeddingLossTest, RejectsBadSpecs) {
  Tensor table(DType::f32, {11, 6}), ids(DType::i32, {4});
  Tensor out(DType::f32, {4, 6});
  EXPECT_TRUE(bindKernel("train.embedding", {}, {&table, &ids}, {&out}).ok());
  Tensor floatIds(DType::f32, {4}), wrongRows(DType::f32, {4, 5}),
      flatTable(DType::f32, {66}), bf16Out(DType::bf16, {4, 6});
  EXPECT_FALSE(
      bindKernel("train.embedding", {}, {&table, &floatIds}, {&out}).ok());
  EXPECT_FALSE(
      bindKernel("train.embedding", {}, {&table, &ids}, {&wrongRows}).ok());
  EXPECT_FALSE(
      bindKernel("train.embedding", {}, {&flatTable, &ids}, {&out}).ok());
  EXPECT_FALSE(
      bindKernel("train.embedding", {}, {&table, &ids}, {&bf16Out}).ok());

  Tensor logits(DType::f32, {4, 3}), labels(DType::i64, {5}),
      loss(DType::f32, {}), vectorLoss(DType::f32, {1});
  EXPECT_FALSE(
      bindKernel("train.softmax_cross_entropy", {}, {&logits, &labels}, {&loss})
          .ok());
  Tensor goodLabels(DType::i64, {4});
  EXPECT_FALSE(bindKernel("train.softmax_cross_entropy", {},
                          {&logits, &goodLabels}, {&vectorLoss})
                   .ok());
  // ignore_index comes with the count of the labels kept.
  mlir::DictionaryAttr ignore = dict({{"ignore_index", i64(-100)}});
  absl::Status noCount = bindKernel("train.softmax_cross_entropy", ignore,
                                    {&logits, &goodLabels}, {&loss})
                             .status();
  EXPECT_EQ(noCount.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(noCount.message()).find("not given the count"),
            std::string::npos)
      << noCount;
  Tensor vectorCount(DType::f32, {1});
  EXPECT_FALSE(bindKernel("train.softmax_cross_entropy", ignore,
                          {&logits, &goodLabels, &vectorCount}, {&loss})
                   .ok());
}

} // namespace
