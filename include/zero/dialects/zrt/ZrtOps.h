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

#include <optional>

#include "zero/dialects/zrt/ZrtEnums.h.inc"

#define GET_OP_CLASSES
#include "zero/dialects/zrt/ZrtOps.h.inc"

namespace zero::zrt {

/// The output buffer holding the step's global squared gradient norm, where
/// the step clips by it (train.scale_by_norm): the trainer's grad_norm.
inline constexpr llvm::StringLiteral kGradSquaredNormBuffer = "grad_sq_norm";

/// The memory space `memref` lives in: its arena view's, or its buffer's,
/// through any views. Null when it is not rooted in either (a block
/// argument, or a buffer_ref to an undeclared buffer).
std::optional<MemorySpace> getMemorySpace(mlir::Value memref,
                                          mlir::SymbolTableCollection &symbols);

} // namespace zero::zrt

#endif // ZERO_DIALECTS_ZRT_ZRTOPS_H
