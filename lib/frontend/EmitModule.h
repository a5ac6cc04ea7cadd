//===- EmitModule.h - A recorded graph as a train-dialect module -*- C++
//-*-===//

#ifndef ZERO_LIB_FRONTEND_EMITMODULE_H
#define ZERO_LIB_FRONTEND_EMITMODULE_H

#include "GraphState.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace zero::frontend::detail {

/// The forward step of `state` in the style of examples/mlp-forward.mlir:
/// a module on `#dist.placement<cpu, [1]>` with one train.param per
/// parameter, the train.optimizer, and `func.func @step` (train.step) that
/// loads every parameter, runs the recorded ops in order and ends with
/// `train.minimize %loss` and `return %loss`; `withOutputs` also returns
/// Graph::output's values after the loss (the evaluation program's step).
/// The caller verifies it.
mlir::OwningOpRef<mlir::ModuleOp> emitModule(const GraphState &state,
                                             mlir::MLIRContext &context,
                                             bool withOutputs = false);

} // namespace zero::frontend::detail

#endif // ZERO_LIB_FRONTEND_EMITMODULE_H
