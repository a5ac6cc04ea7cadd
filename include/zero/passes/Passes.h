//===- Passes.h - The ZeRO passes ---------------------------------*- C++
//-*-===//
//
// Declarations and registration of every pass in include/zero/passes/Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_PASSES_PASSES_H
#define ZERO_PASSES_PASSES_H

#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/train/TrainDialect.h"
#include "zero/dialects/zrt/ZrtDialect.h"
#include "zero/support/OptionEnums.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

// zero-shard's and zero-pipeline's layout option.
ZERO_CHOICE_PARSER(::zero::train::StorageLayoutKind);

namespace zero {

#define GEN_PASS_DECL
#include "zero/passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "zero/passes/Passes.h.inc"

} // namespace zero

#endif // ZERO_PASSES_PASSES_H
