//===- FusionSupport.cpp - Where a fused op may stand
//----------------------===//

#include "FusionSupport.h"

#include "zero/dialects/dist/DistOps.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace zero {

bool availableAt(ValueRange operands, Operation *point) {
  return llvm::all_of(operands, [&](Value operand) {
    Operation *def = operand.getDefiningOp();
    return !def || def->getBlock() != point->getBlock() ||
           def->isBeforeInBlock(point);
  });
}

bool nothingBetween(Operation *first, Operation *last,
                    ArrayRef<Operation *> chain, bool noCollective) {
  for (Operation *op = first->getNextNode(); op != last;
       op = op->getNextNode()) {
    if (llvm::is_contained(chain, op))
      continue;
    if (noCollective && isa<dist::DistDialect>(op->getDialect()))
      return false;
    for (Value operand : op->getOperands())
      if (llvm::is_contained(chain, operand.getDefiningOp()))
        return false;
  }
  return true;
}

Operation *findFusionPoint(ArrayRef<Operation *> chain, ValueRange operands) {
  Operation *first = chain.front(), *last = chain.back();
  if (availableAt(operands, first))
    return first;
  if (nothingBetween(first, last, chain, /*noCollective=*/true))
    return last;
  return nullptr;
}

} // namespace zero
