//===- TrainDialect.h - The ahead-of-time training step ----------*- C++
//-*-===//

#ifndef ZERO_DIALECTS_TRAIN_TRAINDIALECT_H
#define ZERO_DIALECTS_TRAIN_TRAINDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"

#include "zero/dialects/train/TrainEnums.h.inc"

#include "zero/dialects/train/TrainDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "zero/dialects/train/TrainAttrs.h.inc"

#endif // ZERO_DIALECTS_TRAIN_TRAINDIALECT_H
