//===- ZeroPipeline.cpp - The whole chain, as enable_zero runs it ---------===//
//
// The zero-pipeline pass, and what a host tool needs to embed it
// (zero/passes/Pipeline.h): the dialects to register and buildZeroPipeline.
//
//===----------------------------------------------------------------------===//

#include "zero/passes/Pipeline.h"

#include "zero/dialects/train/TrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace zero {
#define GEN_PASS_DEF_ZEROPIPELINE
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;

namespace {

struct ZeroPipelinePass : zero::impl::ZeroPipelineBase<ZeroPipelinePass> {
  using ZeroPipelineBase::ZeroPipelineBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (stage < 0 || stage > 3) {
      mlir::emitError(module.getLoc())
          << "zero-pipeline: stage must be 0, 1, 2 or 3, got "
          << static_cast<int64_t>(stage);
      return signalPassFailure();
    }
    if (report != "none" && report != "text" && report != "json") {
      mlir::emitError(module.getLoc())
          << "zero-pipeline: report must be none, text or json, got '" << report
          << "'";
      return signalPassFailure();
    }
    OpPassManager pipeline(ModuleOp::getOperationName());
    // A forward-only step is differentiated here, so that no user of the
    // pipeline can get a step without its backward and its reductions.
    bool forwardOnly =
        module.walk([](train::MinimizeOp) { return WalkResult::interrupt(); })
            .wasInterrupted();
    if (forwardOnly)
      pipeline.addPass(
          createTrainAutodiff(TrainAutodiffOptions{optimizer, recompute}));
    pipeline.addPass(createTrainMaterializeOptimizer(
        TrainMaterializeOptimizerOptions{accumulateSteps}));
    pipeline.addPass(createDistDataParallel(DistDataParallelOptions{ranks}));
    if (stage > 0)
      pipeline.addPass(createZeroShard(
          ZeroShardOptions{stage, layout, minShardElements, regatherInBackward,
                           maxReuseDistance}));
    pipeline.addPass(createZeroBucket(
        ZeroBucketOptions{reduceBucketBytes, allgatherBucketBytes}));
    pipeline.addPass(createZeroVerify());
    if (report != "none")
      pipeline.addPass(
          createZeroReport(ZeroReportOptions{report, reportOutput}));
    if (lowerToRuntime)
      pipeline.addPass(createZeroLowerToRuntime());
    if (failed(runPipeline(pipeline, module)))
      return signalPassFailure();
    WalkResult left = module.walk([](train::MinimizeOp minimize) {
      minimize.emitError("zero-pipeline: train.minimize survived "
                         "train-autodiff; the step has no backward");
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

void zero::registerZeroDialects(DialectRegistry &registry) {
  registry.insert<dist::DistDialect, train::TrainDialect, zrt::ZrtDialect,
                  arith::ArithDialect, func::FuncDialect>();
}

void zero::buildZeroPipeline(OpPassManager &pm,
                             const ZeroPipelineOptions &options) {
  pm.addPass(createZeroPipeline(options));
}
