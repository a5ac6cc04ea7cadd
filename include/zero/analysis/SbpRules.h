//===- SbpRules.h - The SBP signatures of the train ops ----------*- C++
//-*-===//
//
// How each `train` op can run along one placement axis, OneFlow's per-op
// `GetSbp`: a signature gives the SBP every operand must have and the SBP
// every result then has. An N-D placement picks one signature per axis
// (OneFlow's nd-SBP is the Cartesian product of the 1-D ones), so the rules
// here are 1-D. `dist-tensor-parallel` chooses among them and boxes what
// disagrees.
//
// The signatures come from a description of each op by factors, as Shardy's
// sharding rules: every dimension of every operand and result names a factor
// (matmul: `[m, k] x [k, n] -> [m, n]`). Splitting a factor splits every
// tensor that has it; a result without it is the sum over it (matmul's `k`:
// P(sum)) or the factor cannot be split. Factors an op needs whole (the
// normalized dimension of a layer norm, the classes of a cross-entropy) are
// never split. An op linear in an operand group also passes P(sum) through:
// those operands partial, the others broadcast.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_ANALYSIS_SBPRULES_H
#define ZERO_ANALYSIS_SBPRULES_H

#include "zero/support/Sbp.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace zero::dist {

/// One way to run an op along one placement axis.
struct SbpSignature {
  /// The SBP each operand must have, one per operand.
  llvm::SmallVector<SbpDim> operands;
  /// The SBP each result then has, one per result.
  llvm::SmallVector<SbpDim> results;
};

/// The signatures of `op` along one placement axis: the all-broadcast one
/// first (every op can run replicated), then one per splittable factor, then
/// the partial ones. std::nullopt for an op with no rule (the caller refuses
/// it by name). `operandTypes`, when given, are the operands' logical types
/// (a propagation that has already made them local passes what they were).
std::optional<llvm::SmallVector<SbpSignature>>
getSbpSignatures(mlir::Operation *op,
                 llvm::ArrayRef<mlir::Type> operandTypes = {});

} // namespace zero::dist

#endif // ZERO_ANALYSIS_SBPRULES_H
