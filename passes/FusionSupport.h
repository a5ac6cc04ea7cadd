//===- FusionSupport.h - Where a fused op may stand ---------------*- C++
//-*-===//
//
// The fusion passes (FusionPasses.td) replace a chain of ops by one, which
// stands at one point of the step: these say whether its operands are ready
// there and whether moving an op of the chain to it changes what reads what.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_PASSES_FUSIONSUPPORT_H
#define ZERO_PASSES_FUSIONSUPPORT_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

namespace zero {

/// Whether every operand in `operands` is available before `point`:
/// block arguments and values from enclosing blocks always are.
bool availableAt(mlir::ValueRange operands, mlir::Operation *point);

/// Whether no op strictly between `first` and `last` (of one block), apart
/// from `chain`'s, reads a result of `chain` or (with `noCollective`) is a
/// collective.
bool nothingBetween(mlir::Operation *first, mlir::Operation *last,
                    llvm::ArrayRef<mlir::Operation *> chain, bool noCollective);

/// Where the op fusing `chain` (its ops in step order) can stand, or null.
/// Moving an op earlier lengthens the life of its results, moving it later
/// that of its operands: at the chain's first op where `operands` are ready
/// there. Else at its last op, where nothing between reads the chain's
/// results or is a collective (a gather while the chain waits would raise
/// the peak of gathered bytes the ZeRO passes planned).
mlir::Operation *findFusionPoint(llvm::ArrayRef<mlir::Operation *> chain,
                                 mlir::ValueRange operands);

} // namespace zero

#endif // ZERO_PASSES_FUSIONSUPPORT_H
