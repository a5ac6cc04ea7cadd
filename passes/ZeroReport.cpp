//===- ZeroReport.cpp - Per-rank memory and traffic before launch ---------===//

#include "zero/analysis/PlanReport.h"
#include "zero/passes/Passes.h"

namespace zero {
#define GEN_PASS_DEF_ZEROREPORT
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;

namespace {

struct ZeroReportPass : zero::impl::ZeroReportBase<ZeroReportPass> {
  using ZeroReportBase::ZeroReportBase;

  /// The prediction needs the instructions, streams and arena of the
  /// lowered program; once lowered, the training step the rest of the
  /// report counts is gone, so the report is the prediction alone.
  LogicalResult predict(ModuleOp module) {
    FailureOr<MachineModel> model = loadMachineModel(machine, module.getLoc());
    if (failed(model))
      return failure();
    auto programs = module.getOps<zrt::ProgramOp>();
    if (programs.empty())
      return mlir::emitError(module.getLoc())
             << "zero-report: machine= predicts the step of the lowered "
                "program, and the module has no zrt.program: run "
                "zero-lower-to-runtime first (zero-pipeline does with "
                "lower-to-runtime=true)";
    FailureOr<StepPrediction> prediction =
        simulateProgram(*programs.begin(), *model);
    if (failed(prediction))
      return failure();
    return writePrediction(*prediction, format, output, module.getLoc());
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (format == ReportFormat::timeline && machine.empty()) {
      mlir::emitError(module.getLoc())
          << "zero-report: format=timeline draws the predicted step; it "
             "needs machine=";
      return signalPassFailure();
    }
    if (!machine.empty()) {
      if (failed(predict(module)))
        return signalPassFailure();
      markAllAnalysesPreserved();
      return;
    }
    FailureOr<PlanReport> report = computePlanReport(module);
    if (failed(report))
      return signalPassFailure();

    if (failed(writePlanReport(*report, format, output, module.getLoc())))
      return signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace
