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

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (format != "text" && format != "json") {
      mlir::emitError(module.getLoc())
          << "zero-report: format must be text or json, got '" << format << "'";
      return signalPassFailure();
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
