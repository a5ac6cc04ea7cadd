//===- ZrtProgramTest.cpp - The lowered runtime program -------------------===//

#include "zero/dialects/zrt/ZrtDialect.h"
#include "zero/dialects/zrt/ZrtOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace zero::zrt;

namespace {
class ZrtProgramTest : public ::testing::Test {
protected:
  ZrtProgramTest() {
    context.loadDialect<ZrtDialect>();
    context.getDiagEngine().registerHandler([](Diagnostic &) {});
  }

  OwningOpRef<ModuleOp> parse(StringRef source) {
    return parseSourceString<ModuleOp>(source, &context);
  }

  MLIRContext context;
};

constexpr const char *kProgram = R"mlir(
  zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
    zrt.stream @comm
    zrt.buffer @w.m slot : memref<25xf32>
    zrt.buffer @tokens input : memref<2x16xi32>
    zrt.step {
      %g = zrt.arena_view [0] : memref<100xf32>
      %s = zrt.arena_view [512] : memref<25xbf16>
    }
  })mlir";
} // namespace

TEST_F(ZrtProgramTest, ArenaViewsKnowTheirBytes) {
  OwningOpRef<ModuleOp> module = parse(kProgram);
  ASSERT_TRUE(module);
  SmallVector<int64_t> sizes;
  module->walk(
      [&](ArenaViewOp view) { sizes.push_back(view.getSizeInBytes()); });
  EXPECT_EQ(sizes, (SmallVector<int64_t>{400, 50}));
}

TEST_F(ZrtProgramTest, ProgramCarriesPlacementAndArena) {
  OwningOpRef<ModuleOp> module = parse(kProgram);
  ASSERT_TRUE(module);
  auto program = *module->getOps<ProgramOp>().begin();
  EXPECT_EQ(program.getPlacement().getNumRanks(), 4);
  EXPECT_EQ(program.getArenaBytes(), 1024u);
  EXPECT_EQ(program.getAlignment(), 64u);
  auto buffer = program.lookupSymbol<BufferOp>("tokens");
  ASSERT_TRUE(buffer);
  EXPECT_EQ(buffer.getRole(), BufferRole::input);
  EXPECT_EQ(buffer.getMemRefType().getNumElements(), 32);
}

TEST_F(ZrtProgramTest, MisalignedViewIsRejected) {
  EXPECT_FALSE(parse(R"mlir(
    zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
      zrt.step {
        %g = zrt.arena_view [32] : memref<4xf32>
      }
    })mlir"));
}

TEST_F(ZrtProgramTest, ReduceScatterNeedsExplicitPadding) {
  // 10 rows cannot be reduce-scattered over 4 ranks without padding to 12.
  EXPECT_FALSE(parse(R"mlir(
    zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
      zrt.stream @comm
      zrt.step {
        %g = zrt.arena_view [0] : memref<10xf32>
        %s = zrt.arena_view [64] : memref<3xf32>
        zrt.reduce_scatter sum axis 0 on @comm %g to %s : memref<10xf32> to memref<3xf32>
      }
    })mlir"));
}
