//===- ZrtDialect.h - The lowered runtime program ----------------*- C++
//-*-===//

#ifndef ZERO_DIALECTS_ZRT_ZRTDIALECT_H
#define ZERO_DIALECTS_ZRT_ZRTDIALECT_H

#include "mlir/IR/Dialect.h"
#include "zero/dialects/dist/DistDialect.h"

#include "zero/dialects/zrt/ZrtDialect.h.inc"

#endif // ZERO_DIALECTS_ZRT_ZRTDIALECT_H
