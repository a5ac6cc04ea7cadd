//===- DistSbpParsing.h - Textual SBP lists in MLIR assembly -----*- C++
//-*-===//
//
// The `[S(0), B, P(sum)]` syntax shared by `#dist.sbp` and the ops that print
// SBP lists inline (dist.reshard).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECTS_DIST_DISTSBPPARSING_H
#define ZERO_DIALECTS_DIST_DISTSBPPARSING_H

#include "mlir/IR/OpImplementation.h"
#include "zero/support/Sbp.h"

namespace zero::dist {

mlir::ParseResult parseSbpDims(mlir::AsmParser &parser,
                               llvm::SmallVectorImpl<SbpDim> &dims);
void printSbpDims(mlir::AsmPrinter &printer, llvm::ArrayRef<SbpDim> dims);

} // namespace zero::dist

#endif // ZERO_DIALECTS_DIST_DISTSBPPARSING_H
