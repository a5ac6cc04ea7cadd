//===- MlirPipelineFuzzer.cpp - libFuzzer target: bytes to zrt programs ---===//
//
// Parses arbitrary bytes as MLIR in the dialects zero-opt registers, then runs
// what a user's file goes through: the verifier, train-autodiff, and
// zero-pipeline with the lowering to the runtime at stages 0-3. Every input
// must end in success or in diagnostics; a crash, a sanitizer report, a hang
// or runaway memory is a bug (scripts/fuzz.sh, docs/building.md).
//
// Each input gets its own MLIRContext: a shared one would carry uniqued
// attributes from input to input, and a crash would then depend on history.
//
//===----------------------------------------------------------------------===//

#include "zero/passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

/// The pipelines a training step meets in zero-run and the builder: every
/// stage, an even and an uneven split, and the autodiff pass on its own.
const char *const kPipelines[] = {
    "builtin.module(train-autodiff)",
    "builtin.module(zero-pipeline{stage=0 ranks=2 lower-to-runtime=true})",
    "builtin.module(zero-pipeline{stage=1 ranks=2 lower-to-runtime=true})",
    "builtin.module(zero-pipeline{stage=2 ranks=3 lower-to-runtime=true})",
    ("builtin.module(zero-pipeline{stage=3 ranks=3 lower-to-runtime=true "
     "reduce-bucket-bytes=256 allgather-bucket-bytes=256})"),
};

mlir::DialectRegistry &registry() {
  static mlir::DialectRegistry *registry = [] {
    zero::registerZeroPasses();
    auto *result = new mlir::DialectRegistry();
    result->insert<zero::dist::DistDialect, zero::train::TrainDialect,
                   zero::zrt::ZrtDialect, mlir::arith::ArithDialect,
                   mlir::cf::ControlFlowDialect, mlir::func::FuncDialect,
                   mlir::math::MathDialect, mlir::scf::SCFDialect,
                   mlir::tensor::TensorDialect>();
    return result;
  }();
  return *registry;
}

void runPipeline(mlir::ModuleOp module, const char *pipeline) {
  mlir::OwningOpRef<mlir::ModuleOp> copy = module.clone();
  mlir::PassManager pm(module.getContext());
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  if (mlir::failed(mlir::parsePassPipeline(pipeline, pm, errorStream))) {
    // A pipeline string of ours that does not parse is a bug in this file.
    llvm::errs() << "fuzzer: bad pipeline '" << pipeline << "': " << errors;
    std::abort();
  }
  (void)pm.run(*copy);
  // Whatever a pass left behind must still be IR that verifies or was
  // reported: a failed verification after success is a bug of ours.
  (void)mlir::verify(*copy);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext context(registry(), mlir::MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  mlir::ScopedDiagnosticHandler silence(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  // MLIR's lexer reads up to a NUL terminator, as files and
  // MemoryBuffers have; libFuzzer's bytes have none.
  std::string source(reinterpret_cast<const char *>(data), size);
  mlir::ParserConfig config(&context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, config, "fuzz-input");
  if (!module)
    return 0;
  for (const char *pipeline : kPipelines)
    runPipeline(*module, pipeline);
  return 0;
}
