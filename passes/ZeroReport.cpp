//===- ZeroReport.cpp - Per-rank memory and traffic before launch ---------===//

#include "zero/analysis/PlanReport.h"
#include "zero/passes/Passes.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

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

    std::error_code error;
    std::unique_ptr<llvm::raw_fd_ostream> file;
    llvm::raw_ostream *os = &llvm::errs();
    if (output != "-") {
      file = std::make_unique<llvm::raw_fd_ostream>(output, error,
                                                    llvm::sys::fs::OF_Text);
      if (error) {
        mlir::emitError(module.getLoc()) << "zero-report: cannot write '"
                                         << output << "': " << error.message();
        return signalPassFailure();
      }
      os = file.get();
    }
    if (format == "json")
      *os << llvm::formatv("{0:2}", planReportToJson(*report)) << "\n";
    else
      printPlanReport(*report, *os);
    os->flush();
    markAllAnalysesPreserved();
  }
};

} // namespace
