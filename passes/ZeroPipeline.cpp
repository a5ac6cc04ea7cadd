//===- ZeroPipeline.cpp - The whole chain, as enable_zero runs it ---------===//
//
// The zero-pipeline pass, and what a host tool needs to embed it
// (zero/passes/Pipeline.h): the dialects to register and buildZeroPipeline.
//
//===----------------------------------------------------------------------===//

#include "zero/passes/Pipeline.h"
#include "zero/passes/PipelineOptions.h"

#include "OffloadRewriter.h"

#include "zero/analysis/PlanReport.h"
#include "zero/analysis/TrainingStep.h"
#include "zero/dialects/train/TrainOps.h"
#include "zero/dialects/zrt/ZrtOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <functional>

namespace zero {
#define GEN_PASS_DEF_ZEROPIPELINE
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;

namespace {

struct ZeroPipelinePass : zero::impl::ZeroPipelineBase<ZeroPipelinePass> {
  using ZeroPipelineBase::ZeroPipelineBase;

  // The options' rules read the options where the pass holds them.
  template <typename Options>
  friend std::optional<std::string>
  zero::findZeroOptionsError(const Options &options, bool onMesh,
                             const OptionSpelling &spelling);

  /// Lowers the rewritten step and places its memory; the report, taken
  /// before the lowering, then includes the program's memory plan.
  /// `unplanned`, the step as it was given, is kept where the report
  /// predicts on a machine that states its device memory: the settings that
  /// would make it fit are planned from it.
  LogicalResult lower(ModuleOp module, ModuleOp unplanned) {
    std::optional<PlanReport> planReport;
    if (report != ReportFormat::none) {
      FailureOr<PlanReport> computed = computePlanReport(module);
      if (failed(computed))
        return failure();
      planReport = std::move(*computed);
    }
    OpPassManager lowering(ModuleOp::getOperationName());
    // The CPU runs a fused op as the chain it replaces, bit for bit; a GPU
    // runs it as one matmul.
    if (fuseEpilogues) {
      lowering.addPass(createTrainFuseEpilogues());
      lowering.addPass(createTrainFuseLossCast());
      lowering.addPass(createTrainFuseResidualNorm());
      lowering.addPass(createTrainFuseAttentionLayout());
    }
    lowering.addPass(createZeroLowerToRuntime());
    lowering.addPass(
        createZeroOffload(ZeroOffloadOptions{offload, deviceMemoryBudget}));
    if (failed(runPipeline(lowering, module)))
      return failure();
    if (!planReport)
      return success();
    // zero-offload records the plan it chose; with nothing to place, the
    // report still gives the lowered program's device and host bytes.
    for (auto program : module.getOps<zrt::ProgramOp>()) {
      auto plan = program->getAttrOfType<DictionaryAttr>(
          zrt::ZrtDialect::getMemoryPlanAttrName());
      planReport->memory =
          plan ? MemoryPlan::fromAttr(plan) : offload::measure(program);
      if (machineModel) {
        FailureOr<StepPrediction> prediction =
            simulateProgram(program, *machineModel);
        if (failed(prediction))
          return failure();
        planReport->prediction = std::move(*prediction);
      }
    }
    if (planReport->prediction && unplanned &&
        getPeakDeviceBytes(*planReport->prediction) >
            machineModel->deviceMemory)
      planReport->fitAlternatives = planAlternatives(module, unplanned);
    return writePlanReport(*planReport, report, reportOutput, module.getLoc());
  }

  /// These options, as a nested zero-pipeline takes them.
  ZeroPipelineOptions currentOptions() const {
    ZeroPipelineOptions options;
    options.stage = stage;
    options.ranks = ranks;
    options.tp = tp;
    options.mesh = ArrayRef<int64_t>(mesh);
    options.meshScheme = meshScheme;
    options.reduceDtype = reduceDtype;
    options.hpz = hpz;
    options.qwz = qwz;
    options.qgz = qgz;
    options.qwzBits = qwzBits;
    options.qgzBits = qgzBits;
    options.quantizeBlock = quantizeBlock;
    options.quantizeMinElements = quantizeMinElements;
    options.accumulateSteps = accumulateSteps;
    options.layout = layout;
    options.minShardElements = minShardElements;
    options.regatherInBackward = regatherInBackward;
    options.maxReuseDistance = maxReuseDistance;
    options.reduceBucketBytes = reduceBucketBytes;
    options.allgatherBucketBytes = allgatherBucketBytes;
    options.allgatherAcrossUsesBytes = allgatherAcrossUsesBytes;
    options.prefetchBytes = prefetchBytes;
    options.maxLiveGatheredBytes = maxLiveGatheredBytes;
    options.machine = machine;
    options.lowerToRuntime = lowerToRuntime;
    options.fuseEpilogues = fuseEpilogues;
    options.offload = offload;
    options.deviceMemoryBudget = deviceMemoryBudget;
    options.optimizer = optimizer;
    options.recompute = recompute;
    return options;
  }

  /// The settings that move memory off a device which this run did not
  /// use, each planned whole on a copy of the step as it was given: a
  /// higher stage, activation checkpointing where the step marks what it
  /// may recompute, offload, and more accumulation on a smaller
  /// micro-batch. A setting whose plan fails is left out.
  std::vector<FitAlternative> planAlternatives(ModuleOp module,
                                               ModuleOp unplanned) {
    using Change =
        std::pair<std::string, std::function<void(ZeroPipelineOptions &)>>;
    std::vector<Change> changes;
    for (int64_t higher = stage + 1; higher <= 3; ++higher)
      changes.push_back(
          {"stage=" + std::to_string(higher),
           [higher](ZeroPipelineOptions &options) { options.stage = higher; }});
    // recompute applies where the pipeline differentiates the step (it
    // ends in train.minimize) and the step marks what it may recompute.
    bool marked = false, forwardOnly = false;
    unplanned.walk([&](Operation *op) {
      marked |= op->hasAttr(train::TrainDialect::getRecomputeAttrName());
      forwardOnly |= isa<train::MinimizeOp>(op);
    });
    marked &= forwardOnly;
    if (!recompute && marked)
      changes.push_back({"recompute=true", [](ZeroPipelineOptions &options) {
                           options.recompute = true;
                         }});
    if (offload == OffloadPlacement::none && deviceMemoryBudget == 0) {
      changes.push_back({"offload=optimizer", [](ZeroPipelineOptions &options) {
                           options.offload = OffloadPlacement::optimizer;
                         }});
      changes.push_back(
          {"offload=optimizer+params", [](ZeroPipelineOptions &options) {
             options.offload = OffloadPlacement::optimizerAndParams;
           }});
      changes.push_back({marked && !recompute
                             ? "stage=3 recompute=true offload=optimizer+params"
                             : "stage=3 offload=optimizer+params",
                         [marked](ZeroPipelineOptions &options) {
                           options.stage = 3;
                           options.recompute = options.recompute || marked;
                           options.offload =
                               OffloadPlacement::optimizerAndParams;
                         }});
    }
    std::vector<FitAlternative> alternatives;
    for (const Change &change : changes) {
      ZeroPipelineOptions options = currentOptions();
      change.second(options);
      if (std::optional<FitAlternative> planned =
              planChange(module, unplanned, change.first, options))
        alternatives.push_back(std::move(*planned));
    }
    // More accumulation on a smaller micro-batch: the same global batch,
    // a factor of the activations. The step is rebatched (train-rebatch),
    // which a step given with its backward written out cannot be. The
    // first factor that fits ends the search.
    std::optional<int64_t> batch = getBatch(unplanned);
    for (int64_t factor = 2; forwardOnly && batch && *batch % factor == 0;
         factor *= 2) {
      ZeroPipelineOptions options = currentOptions();
      options.accumulateSteps = accumulateSteps * factor;
      std::string change =
          "accumulate-steps=" + std::to_string(options.accumulateSteps) +
          " micro-batch=" + std::to_string(*batch / factor);
      std::optional<FitAlternative> planned =
          planChange(module, unplanned, change, options, factor);
      if (!planned)
        break;
      bool fits = planned->peakDeviceBytes <= machineModel->deviceMemory;
      alternatives.push_back(std::move(*planned));
      if (fits)
        break;
    }
    return alternatives;
  }

  /// The batch of the step as given: dimension 0 of its ranked arguments,
  /// where there is one.
  static std::optional<int64_t> getBatch(ModuleOp unplanned) {
    for (func::FuncOp function : getStepFunctions(unplanned))
      for (Type type : function.getArgumentTypes())
        if (auto ranked = dyn_cast<RankedTensorType>(type);
            ranked && ranked.getRank() > 0)
          return ranked.getDimSize(0);
    return std::nullopt;
  }

  /// `change` planned whole on a copy of the step as given (nested in the
  /// module while it runs), rebatched to 1/`rebatch` of its rows first;
  /// nothing where the plan fails (offloading parameters below stage 3,
  /// say): its diagnostics are not the user's.
  std::optional<FitAlternative> planChange(ModuleOp module, ModuleOp unplanned,
                                           const std::string &change,
                                           ZeroPipelineOptions options,
                                           int64_t rebatch = 1) {
    options.report = ReportFormat::none;
    ScopedDiagnosticHandler quiet(&getContext(),
                                  [](Diagnostic &) { return success(); });
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    auto copy = cast<ModuleOp>(builder.clone(*unplanned.getOperation()));
    OpPassManager planning(ModuleOp::getOperationName());
    if (rebatch > 1)
      planning.addPass(createTrainRebatch(TrainRebatchOptions{rebatch}));
    planning.addPass(createZeroPipeline(options));
    std::optional<FitAlternative> planned;
    if (succeeded(runPipeline(planning, copy)))
      for (auto program : copy.getOps<zrt::ProgramOp>()) {
        FailureOr<StepPrediction> prediction =
            simulateProgram(program, *machineModel);
        if (succeeded(prediction))
          planned = FitAlternative{change, getPeakDeviceBytes(*prediction),
                                   prediction->stepSeconds};
      }
    copy.erase();
    return planned;
  }

  /// The machine places the stage-3 gathers and, for a lowered program,
  /// predicts the step in the report: it is loaded before anything runs, so
  /// that a bad file fails fast.
  LogicalResult checkPrediction(ModuleOp module) {
    if (report == ReportFormat::timeline &&
        (machine.empty() || !lowerToRuntime))
      return mlir::emitError(module.getLoc())
             << "zero-pipeline: report=timeline draws the predicted step of "
                "the lowered program; it needs machine= and "
                "lower-to-runtime=true";
    if (machine.empty())
      return success();
    FailureOr<MachineModel> model = loadMachineModel(machine, module.getLoc());
    if (failed(model))
      return failure();
    machineModel = std::move(*model);
    return success();
  }

  std::optional<MachineModel> machineModel;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    dist::PlacementAttr placement = dist::lookupPlacement(module);
    bool onMesh = !mesh.empty() ||
                  (ranks == 0 && placement && placement.getNumAxes() == 2);
    if (std::optional<std::string> error = findZeroOptionsError(
            *this, onMesh, OptionSpelling::passOptions())) {
      mlir::emitError(module.getLoc()) << "zero-pipeline: " << *error;
      return signalPassFailure();
    }
    if (failed(checkPrediction(module)))
      return signalPassFailure();
    OwningOpRef<ModuleOp> unplanned;
    if (report != ReportFormat::none && lowerToRuntime && machineModel &&
        machineModel->deviceMemory > 0)
      unplanned = module.clone();
    OpPassManager pipeline(ModuleOp::getOperationName());
    // A forward-only step is differentiated here, so that no user of the
    // pipeline can get a step without its backward and its reductions.
    bool forwardOnly =
        module.walk([](train::MinimizeOp) { return WalkResult::interrupt(); })
            .wasInterrupted();
    if (forwardOnly)
      pipeline.addPass(
          createTrainAutodiff(TrainAutodiffOptions{optimizer, recompute}));
    // Tensor parallelism first (torchtitan's order): the optimizer's state
    // and the data-parallel averages then take the tensor-parallel shards.
    if (tp > 1)
      pipeline.addPass(createDistTensorParallel(DistTensorParallelOptions{tp}));
    pipeline.addPass(createTrainMaterializeOptimizer(
        TrainMaterializeOptimizerOptions{accumulateSteps}));
    DistDataParallelOptions dataParallel;
    dataParallel.ranks = ranks;
    dataParallel.mesh = ArrayRef<int64_t>(mesh);
    dataParallel.reduceDtype = reduceDtype;
    pipeline.addPass(createDistDataParallel(dataParallel));
    if (tp > 1)
      pipeline.addPass(createDistLowerReshard());
    if (stage > 0)
      pipeline.addPass(createZeroShard(
          ZeroShardOptions{stage, layout, minShardElements, regatherInBackward,
                           maxReuseDistance, meshScheme, hpz, qwz, qgz, qwzBits,
                           qgzBits, quantizeBlock, quantizeMinElements}));
    pipeline.addPass(createZeroBucket(ZeroBucketOptions{
        reduceBucketBytes, allgatherBucketBytes, allgatherAcrossUsesBytes}));
    if (stage > 0)
      pipeline.addPass(createZeroSchedule(
          ZeroScheduleOptions{prefetchBytes, maxLiveGatheredBytes, machine}));
    pipeline.addPass(createZeroVerify());
    bool offloading =
        offload != OffloadPlacement::none || deviceMemoryBudget != 0;
    if (offloading && !lowerToRuntime) {
      mlir::emitError(module.getLoc())
          << "zero-pipeline: offload and device-memory-budget place the "
             "lowered program's memory; they need lower-to-runtime";
      return signalPassFailure();
    }
    if (report != ReportFormat::none && !lowerToRuntime)
      pipeline.addPass(
          createZeroReport(ZeroReportOptions{report, reportOutput}));
    if (failed(runPipeline(pipeline, module)))
      return signalPassFailure();
    if (lowerToRuntime && failed(lower(module, unplanned.get())))
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
