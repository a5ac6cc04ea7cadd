//===- DistDialect.h - Placements, SBP and collectives -----------*- C++
//-*-===//

#ifndef ZERO_DIALECTS_DIST_DISTDIALECT_H
#define ZERO_DIALECTS_DIST_DISTDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpImplementation.h"

#include "zero/support/Sbp.h"

#include "zero/dialects/dist/DistDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "zero/dialects/dist/DistAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "zero/dialects/dist/DistTypes.h.inc"

namespace zero::dist {

/// The placement that governs `op`: the `dist.placement` attribute of the
/// closest enclosing operation (including `op` itself) that has one.
PlacementAttr lookupPlacement(mlir::Operation *op);

/// Ranks in the group along `axis` of the placement governing `op`; 0 when
/// there is no placement or no such axis.
int64_t getGroupSize(mlir::Operation *op, int64_t axis);

/// Like getGroupSize, but emits a diagnostic on `op` saying why there is no
/// group (no placement, or no such axis). Shared by the verifiers of every
/// collective, on tensors (dist) and on buffers (zrt).
mlir::FailureOr<int64_t> verifyGroupSize(mlir::Operation *op, int64_t axis);

} // namespace zero::dist

#endif // ZERO_DIALECTS_DIST_DISTDIALECT_H
