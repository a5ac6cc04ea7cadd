//===- DistEnums.h - Enumerations of the dist dialect ------------*- C++
//-*-===//

#ifndef ZERO_DIALECTS_DIST_DISTENUMS_H
#define ZERO_DIALECTS_DIST_DISTENUMS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/DenseMapInfo.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>

#include "zero/dialects/dist/DistEnums.h.inc"

#endif // ZERO_DIALECTS_DIST_DISTENUMS_H
