//===- ArenaLivenessTest.cpp - The arenas' liveness, from instructions ----===//
//
// deriveArenaLiveness on hand-written programs: the bytes live at once that
// zero-run --check-memory holds a placement against, and the overlapping
// placements it refuses. Each program is small enough to count by hand;
// the counts are in the comments.
//
//===----------------------------------------------------------------------===//

#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/train/TrainDialect.h"
#include "zero/dialects/zrt/ZrtDialect.h"
#include "zero/dialects/zrt/ZrtOps.h"
#include "zero/runtime/ArenaWriteCheck.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <string>

using namespace zero;

namespace {

class ArenaLivenessTest : public ::testing::Test {
protected:
  ArenaLivenessTest() {
    context
        .loadDialect<dist::DistDialect, train::TrainDialect, zrt::ZrtDialect>();
  }

  /// The liveness of a program made of `attributes` (on the program) and
  /// `body` (the step's instructions), on 2 ranks with a 64-byte alignment
  /// and streams @compute, @comm and @transfer.
  rt::ArenaLiveness derive(const std::string &body,
                           const std::string &attributes = "") {
    std::string text =
        "zrt.program @p placement #dist.placement<cpu, [2]> arena 4096 "
        "host_arena 4096 align 64 " +
        (attributes.empty() ? std::string()
                            : "attributes {" + attributes + "} ") +
        "{\n"
        "  zrt.stream @compute\n  zrt.stream @comm\n  zrt.stream @transfer\n"
        "  zrt.event @e1\n  zrt.event @e2\n  zrt.event @e3\n"
        "  zrt.buffer @x input : memref<16xf32>\n"
        "  zrt.step {\n"
        "    %x = zrt.buffer_ref @x : memref<16xf32>\n" +
        body + "  }\n}\n";
    module = mlir::parseSourceString<mlir::ModuleOp>(text, &context);
    EXPECT_TRUE(module) << text;
    if (!module)
      return {};
    return rt::deriveArenaLiveness(*module->getOps<zrt::ProgramOp>().begin());
  }

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

// Three 64-byte values in a chain on one stream: a is dead once b is
// computed from it, so at most two are live at once.
TEST_F(ArenaLivenessTest, ComputeStreamChain) {
  rt::ArenaLiveness liveness = derive(R"(
    %a = zrt.arena_view [0] : memref<16xf32>
    zrt.launch "train.relu" on @compute ins(%x : memref<16xf32>) outs(%a : memref<16xf32>)
    %b = zrt.arena_view [64] : memref<16xf32>
    zrt.launch "train.neg" on @compute ins(%a : memref<16xf32>) outs(%b : memref<16xf32>)
    %c = zrt.arena_view [0] : memref<16xf32>
    zrt.launch "train.exp" on @compute ins(%b : memref<16xf32>) outs(%c : memref<16xf32>)
)");
  EXPECT_EQ(liveness.deviceBytes, 128);
  EXPECT_EQ(liveness.hostBytes, 0);
  EXPECT_TRUE(liveness.conflicts.empty());
}

// A view counts from its first instruction, not from where it is made: %c
// is made before %a's last use but written after it.
TEST_F(ArenaLivenessTest, LiveFromTheFirstInstruction) {
  rt::ArenaLiveness liveness = derive(R"(
    %a = zrt.arena_view [0] : memref<16xf32>
    %c = zrt.arena_view [0] : memref<16xf32>
    zrt.launch "train.relu" on @compute ins(%x : memref<16xf32>) outs(%a : memref<16xf32>)
    zrt.launch "train.exp" on @compute ins(%a : memref<16xf32>) outs(%x : memref<16xf32>)
    zrt.launch "train.neg" on @compute ins(%x : memref<16xf32>) outs(%c : memref<16xf32>)
)");
  EXPECT_EQ(liveness.deviceBytes, 64);
  EXPECT_TRUE(liveness.conflicts.empty());
}

// %a is read by an all-reduce on @comm; the compute stream learns it is
// done only at the wait, after %b is computed: both are live there, as are
// the reduction's result %r (192 bytes). In program order alone %a would
// be dead at %b, so %b's sharing its bytes is no conflict.
TEST_F(ArenaLivenessTest, CollectiveInputLiveUntilTheWait) {
  rt::ArenaLiveness liveness = derive(R"(
    %a = zrt.arena_view [0] : memref<16xf32>
    zrt.launch "train.relu" on @compute ins(%x : memref<16xf32>) outs(%a : memref<16xf32>)
    zrt.record @e1 on @compute
    zrt.wait @e1 on @comm
    %r = zrt.arena_view [64] : memref<16xf32>
    zrt.all_reduce sum axis 0 on @comm %a to %r : memref<16xf32> to memref<16xf32>
    zrt.record @e2 on @comm
    %b = zrt.arena_view [0] : memref<16xf32>
    zrt.launch "train.neg" on @compute ins(%x : memref<16xf32>) outs(%b : memref<16xf32>)
    zrt.wait @e2 on @compute
    zrt.launch "train.add" on @compute ins(%r, %b : memref<16xf32>, memref<16xf32>) outs(%x : memref<16xf32>)
)");
  EXPECT_EQ(liveness.deviceBytes, 192);
  EXPECT_TRUE(liveness.conflicts.empty());
}

// The compute stream learns of the collective through another stream:
// @transfer waits for @comm's event and records its own, which compute
// waits for. Until then %a stays live; the 64-byte %b computed before that
// wait overlaps it, the 256-byte %d after it does not (were the order not
// followed through @transfer, %a would stay live to the end, with %d).
TEST_F(ArenaLivenessTest, OrderFollowedAcrossStreams) {
  rt::ArenaLiveness liveness = derive(R"(
    %a = zrt.arena_view [0] : memref<16xf32>
    zrt.launch "train.relu" on @compute ins(%x : memref<16xf32>) outs(%a : memref<16xf32>)
    zrt.record @e1 on @compute
    zrt.wait @e1 on @comm
    zrt.all_reduce sum axis 0 on @comm %a to %a : memref<16xf32> to memref<16xf32>
    zrt.record @e2 on @comm
    zrt.wait @e2 on @transfer
    zrt.record @e3 on @transfer
    %b = zrt.arena_view [64] : memref<16xf32>
    zrt.launch "train.neg" on @compute ins(%x : memref<16xf32>) outs(%b : memref<16xf32>)
    zrt.launch "train.neg" on @compute ins(%b : memref<16xf32>) outs(%x : memref<16xf32>)
    zrt.wait @e3 on @compute
    %d = zrt.arena_view [0] : memref<64xf32>
    zrt.launch "zrt.fill" on @compute outs(%d : memref<64xf32>) params {value = 0.0 : f64}
)");
  EXPECT_EQ(liveness.deviceBytes, 256);
  EXPECT_TRUE(liveness.conflicts.empty());
}

// A view's uses through views of it count: %a is read through a view by
// the last launch, so %b, written between, is live with it. Placed on the
// same bytes, the two are a conflict, named with their bytes and
// instructions; each view counts at the alignment (2 x 64 bytes).
TEST_F(ArenaLivenessTest, OverlappingLiveViewsConflict) {
  rt::ArenaLiveness liveness = derive(R"(
    %a = zrt.arena_view [0] : memref<4xf32>
    zrt.launch "train.relu" on @compute ins(%x : memref<16xf32>) outs(%a : memref<4xf32>)
    %b = zrt.arena_view [0] : memref<16xf32>
    zrt.launch "train.neg" on @compute ins(%x : memref<16xf32>) outs(%b : memref<16xf32>)
    %v = zrt.view %a[0] : memref<4xf32> to memref<2x2xf32>
    zrt.launch "train.exp" on @compute ins(%v : memref<2x2xf32>) outs(%x : memref<16xf32>)
)");
  EXPECT_EQ(liveness.deviceBytes, 128);
  ASSERT_EQ(liveness.conflicts.size(), 1u);
  EXPECT_EQ(liveness.conflicts[0],
            "step body 0: the arena bytes [0, 16) live across instructions "
            "0-2 overlap the bytes [0, 64) live across 1-1");
}

// zero-offload's device staging sits above the lowering's arena
// (zrt.staging_base): each tier's peak counts, added, even where the
// staging view is live only when the lowering's is not.
TEST_F(ArenaLivenessTest, StagingTierAdds) {
  std::string body = R"(
    %a = zrt.arena_view [0] : memref<16xf32>
    zrt.launch "train.relu" on @compute ins(%x : memref<16xf32>) outs(%a : memref<16xf32>)
    zrt.launch "train.neg" on @compute ins(%a : memref<16xf32>) outs(%x : memref<16xf32>)
    %s = zrt.arena_view [128] : memref<16xf32>
    zrt.copy on @compute %x to %s : memref<16xf32> to memref<16xf32>
    zrt.copy on @compute %s to %x : memref<16xf32> to memref<16xf32>
)";
  EXPECT_EQ(derive(body).deviceBytes, 64);
  EXPECT_EQ(derive(body, "zrt.staging_base = 128 : i64").deviceBytes, 128);
}

// The host arena's views are counted apart from the device's.
TEST_F(ArenaLivenessTest, HostArenaApart) {
  rt::ArenaLiveness liveness = derive(R"(
    %a = zrt.arena_view [0] : memref<16xf32>
    zrt.launch "train.relu" on @compute ins(%x : memref<16xf32>) outs(%a : memref<16xf32>)
    %h = zrt.arena_view [0] in host : memref<16xf32>
    zrt.copy on @transfer %a to %h : memref<16xf32> to memref<16xf32>
)");
  EXPECT_EQ(liveness.deviceBytes, 64);
  EXPECT_EQ(liveness.hostBytes, 64);
  EXPECT_TRUE(liveness.conflicts.empty());
}

} // namespace
