//===- Pipeline.h - Embedding the ZeRO compiler in a host tool --*- C++ -*-===//
//
// What a compiler that owns its MLIRContext and PassManager needs to run the
// ZeRO pipeline: the dialects to register before parsing, the passes to
// register for textual pipelines, and the pipeline itself (docs/plugin.md).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_PASSES_PIPELINE_H
#define ZERO_PASSES_PIPELINE_H

#include "zero/passes/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

namespace zero {

/// Adds the dialects a ZeRO program is written in: dist, train and zrt, and
/// the upstream arith and func dialects the passes read and produce.
void registerZeroDialects(mlir::DialectRegistry &registry);

/// Appends the ZeRO pipeline (`zero-pipeline`) to `pm`, which must be
/// anchored on builtin.module. The pipeline is one pass that picks its
/// passes when it runs, because whether it must differentiate the step
/// (a forward-only step ending in `train.minimize`) depends on the IR.
/// Options are checked when the pass runs; bad values fail the pass with a
/// diagnostic.
void buildZeroPipeline(mlir::OpPassManager &pm,
                       const ZeroPipelineOptions &options = {});

// registerZeroPasses() (Passes.h) registers every ZeRO pass, zero-pipeline
// included, with MLIR's global pass registry, for `--pass-pipeline=` text
// and mlir-opt style command lines.

} // namespace zero

#endif // ZERO_PASSES_PIPELINE_H
