//===- ZeroPipeline.cpp - The whole chain, as enable_zero runs it ---------===//

#include "zero/passes/Passes.h"

#include "mlir/Pass/PassManager.h"

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
      signalPassFailure();
  }
};

} // namespace
