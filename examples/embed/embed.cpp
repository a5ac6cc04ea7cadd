//===- embed.cpp - The ZeRO pipeline inside another compiler --------------===//
//
// A host compiler with its own MLIRContext and PassManager runs the ZeRO
// pipeline on a training step it holds in memory:
//
//   zero-embed-example STEP.mlir STAGE RANKS
//
// prints the sharded step and the per-rank memory report (on stderr).
//
//===----------------------------------------------------------------------===//

#include "zero/passes/Pipeline.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

int main(int argc, char **argv) {
  if (argc != 4) {
    llvm::errs() << "usage: " << argv[0] << " STEP.mlir STAGE RANKS\n";
    return 2;
  }
  mlir::DialectRegistry registry;
  zero::registerZeroDialects(registry);
  mlir::MLIRContext context(registry);

  mlir::OwningOpRef<mlir::ModuleOp> step =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  if (!step)
    return 1; // The parser has printed a located diagnostic.

  zero::ZeroPipelineOptions options;
  options.stage = std::atoi(argv[2]);
  options.ranks = std::atoi(argv[3]);
  options.report = zero::ReportFormat::text;
  mlir::PassManager pm(&context);
  zero::buildZeroPipeline(pm, options);
  if (mlir::failed(pm.run(*step)))
    return 1; // The failing pass has emitted the diagnostic.

  step->print(llvm::outs());
  llvm::outs() << "\n";
  return 0;
}
