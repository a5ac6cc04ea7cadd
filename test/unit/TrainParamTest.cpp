//===- TrainParamTest.cpp - Persistent tensors and their shards -----------===//

#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/train/TrainDialect.h"
#include "zero/dialects/train/TrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace zero::train;

namespace {
class TrainParamTest : public ::testing::Test {
protected:
  TrainParamTest() {
    context.loadDialect<zero::dist::DistDialect, TrainDialect,
                        func::FuncDialect>();
    context.getDiagEngine().registerHandler([](Diagnostic &) {});
  }

  OwningOpRef<ModuleOp> parse(StringRef source) {
    return parseSourceString<ModuleOp>(source, &context);
  }

  ParamOp lookup(ModuleOp module, StringRef name) {
    return module.lookupSymbol<ParamOp>(name);
  }

  MLIRContext context;
};
} // namespace

TEST_F(TrainParamTest, ReplicatedParamHoldsLogicalTensor) {
  auto module = parse(R"mlir(
    train.param @w param : tensor<10x3xbf16> init normal(0.0, 0.02)
  )mlir");
  ASSERT_TRUE(module);
  ParamOp w = lookup(*module, "w");
  EXPECT_FALSE(w.isSharded());
  EXPECT_EQ(w.getLocalTensorType(), w.getLogicalTensorType());
  EXPECT_EQ(w.getLogicalBytes(), 60);
  EXPECT_EQ(w.getLocalBytes(), 60);
  ASSERT_TRUE(w.getInit().has_value());
  EXPECT_EQ(w.getInit()->getKind(), InitKind::normal);
  EXPECT_DOUBLE_EQ(w.getInit()->getSecond(), 0.02);
}

TEST_F(TrainParamTest, FlatShardCountsPaddingInLocalBytes) {
  auto module = parse(R"mlir(
    module attributes {dist.placement = #dist.placement<cpu, [4]>} {
      train.param @w param : tensor<10x3xf32>
      train.param @w.m slot of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32> init zeros
    })mlir");
  ASSERT_TRUE(module);
  ParamOp slot = lookup(*module, "w.m");
  EXPECT_TRUE(slot.isSharded());
  EXPECT_EQ(slot.getLogicalBytes(), 120);
  // 8 elements per rank, 2 of them padding on the last rank.
  EXPECT_EQ(slot.getLocalBytes(), 32);
}

TEST_F(TrainParamTest, Dim0ShardKeepsTrailingDims) {
  auto module = parse(R"mlir(
    module attributes {dist.placement = #dist.placement<cpu, [4]>} {
      train.param @w param : tensor<10x3xf32> sharded dim0 over 0 -> tensor<3x3xf32>
    })mlir");
  ASSERT_TRUE(module);
  EXPECT_EQ(lookup(*module, "w").getLocalTensorType().getShape(),
            (ArrayRef<int64_t>{3, 3}));
}

TEST_F(TrainParamTest, WrongLocalShapeIsRejected) {
  EXPECT_FALSE(parse(R"mlir(
    module attributes {dist.placement = #dist.placement<cpu, [4]>} {
      train.param @w param : tensor<10x3xf32> sharded flat over 0 -> tensor<7xf32>
    })mlir"));
}

TEST_F(TrainParamTest, ShardingNeedsAPlacement) {
  EXPECT_FALSE(parse(R"mlir(
    train.param @w param : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32>
  )mlir"));
}

TEST_F(TrainParamTest, OptimizerDefaultsAndSlotCounts) {
  auto module = parse(R"mlir(
    train.optimizer @sgd sgd lr 1.0e-01
    train.optimizer @mom momentum lr 1.0e-01 momentum 9.0e-01
    train.optimizer @adamw adamw lr 1.0e-03 weight_decay 1.0e-01
  )mlir");
  ASSERT_TRUE(module);
  auto sgd = module->lookupSymbol<OptimizerOp>("sgd");
  auto mom = module->lookupSymbol<OptimizerOp>("mom");
  auto adamw = module->lookupSymbol<OptimizerOp>("adamw");
  EXPECT_EQ(sgd.getNumSlots(), 0);
  EXPECT_EQ(mom.getNumSlots(), 1);
  EXPECT_EQ(adamw.getNumSlots(), 2);
  EXPECT_DOUBLE_EQ(adamw.getBeta1Value(), 0.9);
  EXPECT_DOUBLE_EQ(adamw.getBeta2Value(), 0.999);
  EXPECT_DOUBLE_EQ(adamw.getEpsValue(), 1e-8);
  EXPECT_DOUBLE_EQ(adamw.getWeightDecayValue(), 0.1);
  EXPECT_DOUBLE_EQ(*mom.getMomentumValue(), 0.9);
}
