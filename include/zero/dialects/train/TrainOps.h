//===- TrainOps.h - Operations of the train dialect --------------*- C++
//-*-===//

#ifndef ZERO_DIALECTS_TRAIN_TRAINOPS_H
#define ZERO_DIALECTS_TRAIN_TRAINOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "zero/dialects/train/TrainDialect.h"

// The gradient interface the compute ops implement.
#include "zero/dialects/train/TrainGradientInterface.h.inc"

#define GET_OP_CLASSES
#include "zero/dialects/train/TrainOps.h.inc"

#endif // ZERO_DIALECTS_TRAIN_TRAINOPS_H
