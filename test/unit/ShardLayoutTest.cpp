//===- ShardLayoutTest.cpp - Shard shapes and padding ---------------------===//

#include "zero/support/ShardLayout.h"

#include "gtest/gtest.h"

using namespace zero;

TEST(ShardLayout, CeilDivRoundsUp) {
  EXPECT_EQ(ceilDiv(0, 4), 0);
  EXPECT_EQ(ceilDiv(1, 4), 1);
  EXPECT_EQ(ceilDiv(8, 4), 2);
  EXPECT_EQ(ceilDiv(9, 4), 3);
}

TEST(ShardLayout, TenElementsOverFourRanksGiveShardsOfThree) {
  EXPECT_EQ(shardSize(10, 4), 3);
  EXPECT_EQ(paddedSize(10, 4), 12);
  EXPECT_EQ(paddingOf(10, 4), 2);
}

TEST(ShardLayout, EvenSplitHasNoPadding) {
  EXPECT_EQ(shardSize(12, 4), 3);
  EXPECT_EQ(paddingOf(12, 4), 0);
}

TEST(ShardLayout, SingleRankHoldsEverything) {
  EXPECT_EQ(shardSize(10, 1), 10);
  EXPECT_EQ(paddingOf(10, 1), 0);
}

TEST(ShardLayout, MoreRanksThanElementsPadsToOneEach) {
  EXPECT_EQ(shardSize(3, 8), 1);
  EXPECT_EQ(paddedSize(3, 8), 8);
  EXPECT_EQ(paddingOf(3, 8), 5);
}

TEST(ShardLayout, NumElementsOfScalarIsOne) {
  EXPECT_EQ(numElements({}), 1);
  EXPECT_EQ(numElements({3, 5}), 15);
  EXPECT_EQ(numElements({3, 0}), 0);
}

TEST(ShardLayout, ReplicatedKeepsLogicalShape) {
  auto local = localShapeOf({784, 128}, StorageLayout::Replicated, 4);
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(*local, (llvm::SmallVector<int64_t>{784, 128}));
}

TEST(ShardLayout, FlatFlattensAndPads) {
  // 10 x 3 = 30 elements over 4 ranks: 8 each, 2 padding elements.
  auto local = localShapeOf({10, 3}, StorageLayout::Flat, 4);
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(*local, (llvm::SmallVector<int64_t>{8}));
}

TEST(ShardLayout, FlatOfScalarIsOneElement) {
  auto local = localShapeOf({}, StorageLayout::Flat, 4);
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(*local, (llvm::SmallVector<int64_t>{1}));
}

TEST(ShardLayout, Dim0SplitsRowsOnly) {
  // 10 rows over 4 ranks: 3 rows each, 2 padding rows; columns untouched.
  auto local = localShapeOf({10, 3}, StorageLayout::Dim0, 4);
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(*local, (llvm::SmallVector<int64_t>{3, 3}));
}

TEST(ShardLayout, Dim0OfScalarIsRejected) {
  EXPECT_FALSE(localShapeOf({}, StorageLayout::Dim0, 4).has_value());
}

TEST(ShardLayout, LocalSizesAgreeAcrossGatherAndScatter) {
  // A shard of 3 over 4 ranks comes from any logical size in [9, 12].
  EXPECT_TRUE(localSizesAgree(3, 4, 10, 1));
  EXPECT_TRUE(localSizesAgree(3, 4, 12, 1));
  EXPECT_TRUE(localSizesAgree(3, 4, 9, 1));
  EXPECT_FALSE(localSizesAgree(3, 4, 8, 1));
  EXPECT_FALSE(localSizesAgree(3, 4, 13, 1));
}

TEST(ShardLayout, LocalSizesAgreeBetweenTwoSplits) {
  // Logical 10: 5 each over 2 ranks, 3 each over 4 ranks.
  EXPECT_TRUE(localSizesAgree(5, 2, 3, 4));
  // No logical size gives 5 over 2 ranks (9..10) and 2 over 4 (5..8).
  EXPECT_FALSE(localSizesAgree(5, 2, 2, 4));
}

TEST(ShardLayout, EmptyTensorsOnlyMatchEmpty) {
  EXPECT_TRUE(localSizesAgree(0, 4, 0, 1));
  EXPECT_FALSE(localSizesAgree(0, 4, 1, 1));
}
