//===- ZeroLowerToRuntime.cpp - A step as a zrt program -------------------===//
//
// Bufferizes a (ZeRO-rewritten) training step into the zrt program the
// runtime replays: persistent buffers at their shard sizes, one arena whose
// offsets come from a liveness-based planner, kernel launches, copies,
// collectives on a communication stream, and the events that order them.
// The rewriting itself is StepLowering (StepLowering.cpp and
// StepLoweringCollectives.cpp); this file checks the module and runs it.
//
//===----------------------------------------------------------------------===//

#include "StepLowering.h"

#include "zero/analysis/ProgramReport.h"
#include "zero/passes/Passes.h"

namespace zero {
#define GEN_PASS_DEF_ZEROLOWERTORUNTIME
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using zero::lowering::StepLowering;

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// zero-report's figures as an attribute, for the runtime to print beside
/// its measurements.
static DictionaryAttr getReportAttr(ModuleOp module, Builder &builder) {
  FailureOr<PlanReport> report = computePlanReport(module);
  if (failed(report))
    return {};
  return ProgramReport::fromPlan(*report).toAttr(builder.getContext());
}

namespace {

struct ZeroLowerToRuntimePass
    : zero::impl::ZeroLowerToRuntimeBase<ZeroLowerToRuntimePass> {
  using ZeroLowerToRuntimeBase::ZeroLowerToRuntimeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
      mlir::emitError(module.getLoc())
          << "zero-lower-to-runtime: alignment must be a power of two, got "
          << static_cast<int64_t>(alignment);
      return signalPassFailure();
    }
    // The step, and with gradient accumulation the apply step after it.
    func::FuncOp step, apply;
    for (func::FuncOp function : getStepFunctions(module)) {
      func::FuncOp &slot =
          function->hasAttr(train::TrainDialect::getApplyStepAttrName()) ? apply
                                                                         : step;
      if (slot) {
        function.emitOpError()
            << "is a second "
            << (&slot == &apply ? "apply step" : "train.step function")
            << "; zero-lower-to-runtime lowers one training step";
        return signalPassFailure();
      }
      slot = function;
    }
    if (!step) {
      mlir::emitError(module.getLoc())
          << "zero-lower-to-runtime: expected one train.step function, found "
             "none";
      return signalPassFailure();
    }
    int64_t microSteps = 1;
    if (auto k = step->getAttrOfType<IntegerAttr>(
            train::TrainDialect::getAccumulateStepsAttrName()))
      microSteps = k.getInt();
    if ((microSteps > 1) != static_cast<bool>(apply)) {
      (apply ? apply : step).emitOpError()
          << (apply ? "is an apply step, but the step does not accumulate "
                      "gradients"
                    : "accumulates gradients but the module has no apply "
                      "step (train-materialize-optimizer writes both)");
      return signalPassFailure();
    }
    // Clipping that zero-shard did not expand reads whole gradients (stage 0
    // or a single device): its norm needs no collective.
    expandClipping(module);
    for (auto func : module.getOps<func::FuncOp>())
      if (func != step && func != apply) {
        func.emitOpError() << "is not the training step; inline it first "
                              "(--inline) before zero-lower-to-runtime";
        return signalPassFailure();
      }
    for (Type type : llvm::concat<const Type>(step.getArgumentTypes(),
                                              step.getResultTypes())) {
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (!tensor || !tensor.hasStaticShape()) {
        step.emitOpError() << "takes or returns " << type
                           << "; the runtime's inputs and outputs are "
                              "statically shaped tensors";
        return signalPassFailure();
      }
    }
    for (func::FuncOp function : {step, apply})
      if (function && !function.getBody().hasOneBlock()) {
        function.emitOpError() << "has several blocks; zero-lower-to-runtime "
                                  "lowers straight-line steps only";
        return signalPassFailure();
      }

    Builder builder(module.getContext());
    DictionaryAttr report = getReportAttr(module, builder);
    StepLowering lowering(module, step, alignment, asyncCollectives);
    LogicalResult lowered = lowering.lower(report, apply ? zrt::StepKind::micro
                                                         : zrt::StepKind::step);
    if (succeeded(lowered) && apply) {
      zrt::ProgramOp program = *module.getOps<zrt::ProgramOp>().begin();
      program.setAccumulateStepsAttr(builder.getI64IntegerAttr(microSteps));
      StepLowering applyLowering(module, apply, alignment, asyncCollectives);
      lowered = applyLowering.lowerInto(program, zrt::StepKind::apply);
    }
    if (failed(lowered)) {
      // Leave the module as it was, not half lowered.
      for (auto program :
           llvm::make_early_inc_range(module.getOps<zrt::ProgramOp>()))
        program.erase();
      return signalPassFailure();
    }
    // Only the program remains: the state and the step are now in it.
    for (Operation &op : llvm::make_early_inc_range(module.getOps()))
      if (!isa<zrt::ProgramOp>(op))
        op.erase();
  }
};

} // namespace
