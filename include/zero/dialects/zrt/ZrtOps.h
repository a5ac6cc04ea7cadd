//===- ZrtOps.h - Operations of the zrt dialect ------------------*- C++
//-*-===//

#ifndef ZERO_DIALECTS_ZRT_ZRTOPS_H
#define ZERO_DIALECTS_ZRT_ZRTOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "zero/dialects/zrt/ZrtDialect.h"

#include "zero/dialects/zrt/ZrtEnums.h.inc"

#define GET_OP_CLASSES
#include "zero/dialects/zrt/ZrtOps.h.inc"

#endif // ZERO_DIALECTS_ZRT_ZRTOPS_H
