//===- DistAttrTest.cpp - Placement and SBP attributes --------------------===//

#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/dist/DistOps.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace zero::dist;

namespace {
class DistAttrTest : public ::testing::Test {
protected:
  DistAttrTest() {
    context.loadDialect<DistDialect, func::FuncDialect>();
    // Diagnostics of expected failures stay out of the test log.
    context.getDiagEngine().registerHandler([](Diagnostic &) {});
  }

  template <typename AttrT> AttrT parse(StringRef text) {
    return llvm::dyn_cast_or_null<AttrT>(parseAttribute(text, &context));
  }

  MLIRContext context;
};
} // namespace

TEST_F(DistAttrTest, PlacementKnowsItsGrid) {
  auto placement = parse<PlacementAttr>("#dist.placement<cuda, [2, 4]>");
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement.getDevice(), DeviceKind::cuda);
  EXPECT_EQ(placement.getNumAxes(), 2);
  EXPECT_EQ(placement.getGroupSize(1), 4);
  EXPECT_EQ(placement.getNumRanks(), 8);
  EXPECT_TRUE(placement.hasAxis(1));
  EXPECT_FALSE(placement.hasAxis(2));
}

TEST_F(DistAttrTest, PlacementRejectsEmptyAndZeroAxes) {
  EXPECT_FALSE(parse<PlacementAttr>("#dist.placement<cpu, []>"));
  EXPECT_FALSE(parse<PlacementAttr>("#dist.placement<cpu, [4, 0]>"));
  EXPECT_FALSE(parse<PlacementAttr>("#dist.placement<tpu, [4]>"));
}

TEST_F(DistAttrTest, SbpParsesAndPrints) {
  auto sbp = parse<SbpAttr>("#dist.sbp<[S(0), P(sum)]>");
  ASSERT_TRUE(sbp);
  ASSERT_EQ(sbp.getDims().size(), 2u);
  EXPECT_EQ(sbp.getDims()[1], SbpDim::partial(ReduceKind::sum));
  std::string printed;
  llvm::raw_string_ostream os(printed);
  os << Attribute(sbp);
  EXPECT_EQ(os.str(), "#dist.sbp<[S(0), P(sum)]>");
}

TEST_F(DistAttrTest, SbpSplitFactorMultipliesAxesSplittingOneDim) {
  auto placement = parse<PlacementAttr>("#dist.placement<cuda, [2, 4]>");
  auto both = parse<SbpAttr>("#dist.sbp<[S(0), S(0)]>");
  auto mixed = parse<SbpAttr>("#dist.sbp<[S(1), B]>");
  ASSERT_TRUE(placement && both && mixed);
  EXPECT_EQ(both.getSplitFactor(0, placement), 8);
  EXPECT_EQ(mixed.getSplitFactor(0, placement), 1);
  EXPECT_EQ(mixed.getSplitFactor(1, placement), 2);
  EXPECT_FALSE(mixed.isFullyBroadcast());
  EXPECT_TRUE(parse<SbpAttr>("#dist.sbp<[B, B]>").isFullyBroadcast());
}

TEST_F(DistAttrTest, CollectivesFindTheEnclosingPlacement) {
  const char *source = R"mlir(
    module attributes {dist.placement = #dist.placement<cpu, [3]>} {
      func.func @f(%g: tensor<10xf32>) -> tensor<4xf32> {
        %s = dist.reduce_scatter sum %g axis 0 dim 0 : tensor<10xf32> -> tensor<4xf32>
        return %s : tensor<4xf32>
      }
    })mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module);
  ReduceScatterOp scatter;
  module->walk([&](ReduceScatterOp op) { scatter = op; });
  ASSERT_TRUE(scatter);
  auto collective = cast<CollectiveOpInterface>(scatter.getOperation());
  EXPECT_EQ(collective.getPlacementAxis(), 0);
  EXPECT_EQ(collective.getGroupSize(), 3);
  EXPECT_FALSE(collective.isAsync());
}

TEST_F(DistAttrTest, VerifierRejectsWrongShardSize) {
  // 10 over 4 ranks gives 3, not 4.
  const char *source = R"mlir(
    module attributes {dist.placement = #dist.placement<cpu, [4]>} {
      func.func @f(%g: tensor<10xf32>) -> tensor<4xf32> {
        %s = dist.reduce_scatter sum %g axis 0 dim 0 : tensor<10xf32> -> tensor<4xf32>
        return %s : tensor<4xf32>
      }
    })mlir";
  EXPECT_FALSE(parseSourceString<ModuleOp>(source, &context));
}
