//===- PlanReportTest.cpp - Per-rank memory, liveness and traffic ---------===//
//
// The report's figures on small hand-written steps, where every number can be
// worked out by hand; the lit suites check it on whole models.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/PlanReport.h"
#include "zero/analysis/TrainingStep.h"
#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/train/TrainDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace zero;

namespace {
class PlanReportTest : public ::testing::Test {
protected:
  PlanReportTest() {
    context.loadDialect<dist::DistDialect, train::TrainDialect,
                        func::FuncDialect, arith::ArithDialect>();
    context.getDiagEngine().registerHandler([](Diagnostic &) {});
  }

  PlanReport report(StringRef source) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    FailureOr<PlanReport> result = computePlanReport(*module);
    EXPECT_TRUE(succeeded(result));
    return succeeded(result) ? *result : PlanReport();
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

// Stage 2 over 4 ranks: a 10-element weight with Adam, gradient reduced as
// soon as it is produced. Shards of 3 (2 padding elements over the group).
constexpr const char *kStage2 = R"mlir(
module attributes {dist.placement = #dist.placement<cpu, [4]>, dist.zero_stage = 2 : i64} {
  train.param @w param : tensor<10xf32> init zeros
  train.param @w.m slot of @w : tensor<10xf32> sharded flat over 0 -> tensor<3xf32> init zeros
  train.param @w.v slot of @w : tensor<10xf32> sharded flat over 0 -> tensor<3xf32> init zeros
  train.optimizer @adam adam lr 1.0e-03
  func.func @step(%x: tensor<10xf32>) -> tensor<f32> attributes {train.step} {
    %t = train.step_index : tensor<i64>
    %g = arith.addf %x, %x : tensor<10xf32>
    %s = dist.reduce_scatter mean %g axis 0 dim 0 : tensor<10xf32> -> tensor<3xf32>
    %loss = arith.constant dense<1.0> : tensor<f32>
    %w = train.load @w : tensor<10xf32>
    %ws = dist.slice %w axis 0 dim 0 : tensor<10xf32> -> tensor<3xf32>
    %m = train.load @w.m : tensor<3xf32>
    %v = train.load @w.v : tensor<3xf32>
    %w1, %m1, %v1 = train.adam %ws, %s, %m, %v step %t with @adam : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
    train.store %m1 to @w.m : tensor<3xf32>
    train.store %v1 to @w.v : tensor<3xf32>
    %full = dist.all_gather %w1 axis 0 dim 0 : tensor<3xf32> -> tensor<10xf32>
    train.store %full to @w : tensor<10xf32>
    %mean = dist.all_reduce mean %loss axis 0 : tensor<f32>
    return %mean : tensor<f32>
  }
})mlir";
} // namespace

TEST_F(PlanReportTest, CountsStateByRoleWithPadding) {
  PlanReport plan = report(kStage2);
  EXPECT_EQ(plan.ranks, 4);
  EXPECT_EQ(plan.stage, 2);
  EXPECT_EQ(plan.parameters.bytes, 40);
  EXPECT_DOUBLE_EQ(plan.parameters.padding, 0.0);
  // Two slots of 3 f32 each; 10 / 4 = 2.5 elements of each are real.
  EXPECT_EQ(plan.slots.bytes, 24);
  EXPECT_DOUBLE_EQ(plan.slots.padding, 2 * (12 - 10.0));
  EXPECT_EQ(plan.masters.bytes, 0);
}

TEST_F(PlanReportTest, GradientIsTheShardWhenReducedEagerly) {
  PlanReport plan = report(kStage2);
  EXPECT_EQ(plan.gradients.bytes, 12);
  EXPECT_DOUBLE_EQ(plan.gradients.padding, 12 - 10.0);
}

TEST_F(PlanReportTest, ModelStateMatchesTheStage2FormulaUpToPadding) {
  PlanReport plan = report(kStage2);
  // P=G=4 bytes, K=8 bytes, Psi=10, N=4: 4*10 + (4+8)*10/4 = 70.
  EXPECT_DOUBLE_EQ(plan.formula.modelStateBytes, 70.0);
  ByteCount state = plan.modelState();
  EXPECT_DOUBLE_EQ(state.bytes - state.padding, plan.formula.modelStateBytes);
}

TEST_F(PlanReportTest, RingTrafficPerRank) {
  PlanReport plan = report(kStage2);
  // Reduce-scatter of 12 padded elements: each rank sends 3/4 of 48 bytes.
  EXPECT_EQ(plan.traffic["reduce_scatter"].elements, 12);
  EXPECT_DOUBLE_EQ(plan.traffic["reduce_scatter"].sentBytesPerRank, 36.0);
  // The loss all-reduce counts twice: 2 * 3/4 * 4 bytes.
  EXPECT_EQ(plan.traffic["all_reduce"].volumeElements, 2);
  EXPECT_DOUBLE_EQ(plan.traffic["all_reduce"].sentBytesPerRank, 6.0);
  // Slices move nothing.
  EXPECT_EQ(plan.traffic.count("slice"), 0u);
}

TEST_F(PlanReportTest, PeakTransientFollowsLiveness) {
  PlanReport plan = report(kStage2);
  // The largest live set is where the gradient is made: the input and the
  // gradient (40 B each) and the step index (8 B). Loads alias state.
  EXPECT_EQ(plan.peakTransientBytes, 40 + 40 + 8);
  EXPECT_EQ(plan.peakFunction, "step");
}

TEST_F(PlanReportTest, NoStepIsAnError) {
  module = parseSourceString<ModuleOp>("module {}", &context);
  ASSERT_TRUE(module);
  EXPECT_TRUE(failed(computePlanReport(*module)));
}

TEST(TrainingStepTest, ShardTypes) {
  MLIRContext context;
  auto f32 = Float32Type::get(&context);
  auto logical = RankedTensorType::get({10, 3}, f32);
  EXPECT_EQ(getShardType(logical, train::StorageLayoutKind::flat, 4),
            RankedTensorType::get({8}, f32));
  EXPECT_EQ(getShardType(logical, train::StorageLayoutKind::dim0, 4),
            RankedTensorType::get({3, 3}, f32));
  EXPECT_EQ(getFlatType(logical), RankedTensorType::get({30}, f32));
  EXPECT_EQ(
      getTensorBytes(RankedTensorType::get({3}, BFloat16Type::get(&context))),
      6);
}
