//===- DistOps.h - Collectives of the dist dialect ---------------*- C++
//-*-===//

#ifndef ZERO_DIALECTS_DIST_DISTOPS_H
#define ZERO_DIALECTS_DIST_DISTOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "zero/dialects/dist/DistDialect.h"

#include "zero/dialects/dist/DistInterfaces.h.inc"

#define GET_OP_CLASSES
#include "zero/dialects/dist/DistOps.h.inc"

#endif // ZERO_DIALECTS_DIST_DISTOPS_H
