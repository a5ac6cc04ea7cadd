//===- TrainGradients.h - Gradient rules of ops a step may use -----*- C++
//-*-===//
//
// The gradient rules of upstream ops (arith) that a training step may use
// next to the train compute ops, attached as external models of
// `train::GradientOpInterface`.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECTS_TRAIN_TRAINGRADIENTS_H
#define ZERO_DIALECTS_TRAIN_TRAINGRADIENTS_H

#include "mlir/IR/DialectRegistry.h"

namespace zero::train {

/// Attaches `GradientOpInterface` to arith.addf, subf, mulf, divf and negf
/// when the arith dialect loads.
void registerGradientInterfaceExternalModels(mlir::DialectRegistry &registry);

} // namespace zero::train

#endif // ZERO_DIALECTS_TRAIN_TRAINGRADIENTS_H
