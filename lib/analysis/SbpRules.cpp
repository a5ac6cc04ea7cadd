//===- SbpRules.cpp - The SBP signatures of the train ops -----------------===//

#include "zero/analysis/SbpRules.h"

#include "zero/dialects/train/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace zero;
using namespace zero::dist;

namespace {

/// An op described by factors. `operands[i][d]` is the factor of dimension
/// d of operand i (-1: none, e.g. a size-1 dimension); `results` likewise.
struct FactorRule {
  SmallVector<SmallVector<int64_t>> operands;
  SmallVector<SmallVector<int64_t>> results;
  /// Factors that are never split.
  llvm::SmallDenseSet<int64_t> whole;
  /// Per result: the factors it reduces over, and how. A split of one of
  /// them leaves the result partial; a split of any other factor the
  /// result lacks is not a signature.
  SmallVector<llvm::SmallDenseMap<int64_t, ReduceKind>> reducedIn;
  /// Operand groups the op is linear in: those operands P(sum), the others
  /// B, gives every result P(sum). `{0}, {1}` for a product (linear in each
  /// alone), `{0, 1}` for a sum (linear in both together).
  SmallVector<SmallVector<unsigned>> linear;

  explicit FactorRule(Operation *op)
      : operands(op->getNumOperands()), results(op->getNumResults()),
        reducedIn(op->getNumResults()) {}

  /// Factor `factor` for every dimension of `shape`, `first` onwards.
  static SmallVector<int64_t> identity(int64_t rank, int64_t first = 0) {
    SmallVector<int64_t> factors;
    for (int64_t d = 0; d < rank; ++d)
      factors.push_back(first + d);
    return factors;
  }
};

int64_t rankOf(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type ? type.getRank() : 0;
}

/// Every operand and result of the result's rank shares its dimensions;
/// lower-rank operands (scalars: a learning rate, a step) have none.
FactorRule elementwise(Operation *op) {
  FactorRule rule(op);
  int64_t rank = op->getNumResults() ? rankOf(op->getResult(0)) : 0;
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (rankOf(operand) == rank)
      rule.operands[i] = FactorRule::identity(rank);
  for (auto [i, result] : llvm::enumerate(op->getResults()))
    if (rankOf(result) == rank)
      rule.results[i] = FactorRule::identity(rank);
  return rule;
}

/// As `elementwise`, linear in operand `linearIn` alone.
FactorRule elementwiseLinear(Operation *op, unsigned linearIn) {
  FactorRule rule = elementwise(op);
  rule.linear.push_back({linearIn});
  return rule;
}

void markWhole(FactorRule &rule, ArrayRef<int64_t> factors) {
  for (int64_t factor : factors)
    rule.whole.insert(factor);
}

/// `[..., M, K] x [..., K, N] -> [..., M, N]`, either operand transposed,
/// the right one possibly 2-D and shared by every batch.
FactorRule matmulRule(train::MatmulOp op) {
  FactorRule rule(op);
  int64_t rank = rankOf(op.getResult());
  int64_t batch = rank - 2;
  int64_t m = batch, n = batch + 1, k = batch + 2;
  SmallVector<int64_t> lhs = FactorRule::identity(batch);
  if (op.getTransposeA())
    lhs.append({k, m});
  else
    lhs.append({m, k});
  SmallVector<int64_t> rhs;
  if (rankOf(op.getRhs()) == rank)
    rhs = FactorRule::identity(batch);
  if (op.getTransposeB())
    rhs.append({n, k});
  else
    rhs.append({k, n});
  SmallVector<int64_t> result = FactorRule::identity(batch);
  result.append({m, n});
  rule.operands = {lhs, rhs};
  rule.results = {result};
  rule.reducedIn[0][k] = ReduceKind::sum;
  rule.linear = {{0}, {1}};
  return rule;
}

/// The input's dimensions without `dims`; the dropped ones reduced by
/// `kind`.
FactorRule reductionRule(Operation *op, ArrayRef<int64_t> dims,
                         ReduceKind kind) {
  FactorRule rule(op);
  int64_t rank = rankOf(op->getOperand(0));
  rule.operands[0] = FactorRule::identity(rank);
  for (int64_t d = 0; d < rank; ++d) {
    if (llvm::is_contained(dims, d))
      rule.reducedIn[0][d] = kind;
    else
      rule.results[0].push_back(d);
  }
  rule.linear = {{0}};
  return rule;
}

/// Inverse of a reduction: the result has new dimensions at `dims`, which
/// no operand splits.
FactorRule expandRule(train::ExpandOp op) {
  FactorRule rule(op);
  int64_t rank = rankOf(op.getResult());
  int64_t next = 0, fresh = rank;
  for (int64_t d = 0; d < rank; ++d) {
    if (llvm::is_contained(op.getDims(), d)) {
      rule.results[0].push_back(fresh);
      rule.whole.insert(fresh++);
    } else {
      rule.operands[0].push_back(next);
      rule.results[0].push_back(next++);
    }
  }
  rule.linear = {{0}};
  return rule;
}

/// A reshape keeps a split where a dimension of the input and one of the
/// result start at the same element offset and one is the major part of
/// the other (`[b, s, h] -> [b, s, heads, d]` keeps `h` as `heads`, so a
/// split of the features is a split of the heads). Every other dimension is
/// whole.
FactorRule reshapeRule(train::ReshapeOp op, ArrayRef<Type> operandTypes) {
  FactorRule rule(op);
  ArrayRef<int64_t> in =
      cast<RankedTensorType>(operandTypes.empty() ? op.getInput().getType()
                                                  : operandTypes[0])
          .getShape();
  ArrayRef<int64_t> out = op.getResult().getType().getShape();
  rule.operands[0] = FactorRule::identity(in.size());
  int64_t fresh = in.size();
  SmallVector<int64_t> inPrefix(1, 1), outPrefix(1, 1);
  for (int64_t size : in)
    inPrefix.push_back(inPrefix.back() * size);
  for (int64_t size : out)
    outPrefix.push_back(outPrefix.back() * size);
  llvm::SmallDenseSet<int64_t> matched;
  for (auto [j, size] : llvm::enumerate(out)) {
    int64_t factor = -1;
    for (auto [i, inSize] : llvm::enumerate(in))
      if (inPrefix[i] == outPrefix[j] && size > 1 && inSize > 1 &&
          (inSize % size == 0 || size % inSize == 0) && !matched.contains(i)) {
        factor = i;
        break;
      }
    if (factor < 0) {
      factor = fresh++;
      rule.whole.insert(factor);
    } else {
      matched.insert(factor);
    }
    rule.results[0].push_back(factor);
  }
  for (int64_t i = 0, e = in.size(); i < e; ++i)
    if (!matched.contains(i))
      rule.whole.insert(i);
  rule.linear = {{0}};
  return rule;
}

FactorRule transposeRule(train::TransposeOp op) {
  FactorRule rule(op);
  rule.operands[0] = FactorRule::identity(rankOf(op.getInput()));
  for (int64_t source : op.getPermutation())
    rule.results[0].push_back(source);
  rule.linear = {{0}};
  return rule;
}

/// Slices, pads and concatenations along `dim`: that dimension is whole.
FactorRule alongDimRule(Operation *op, int64_t dim) {
  FactorRule rule = elementwise(op);
  rule.whole.insert(dim);
  SmallVector<unsigned> all;
  for (unsigned i = 0, e = op->getNumOperands(); i < e; ++i)
    all.push_back(i);
  rule.linear = {all};
  return rule;
}

/// `[..., H]` normalized over `H`: the rows split, `H` whole.
FactorRule layerNormRule(train::LayerNormOp op) {
  FactorRule rule(op);
  int64_t rank = rankOf(op.getInput());
  int64_t h = rank - 1;
  rule.operands = {FactorRule::identity(rank), {h}, {h}};
  rule.results = {FactorRule::identity(rank), FactorRule::identity(rank - 1),
                  FactorRule::identity(rank - 1)};
  rule.whole.insert(h);
  return rule;
}

FactorRule layerNormGradRule(train::LayerNormGradOp op) {
  FactorRule rule(op);
  int64_t rank = rankOf(op.getInput());
  int64_t h = rank - 1;
  SmallVector<int64_t> rows = FactorRule::identity(rank - 1);
  rule.operands = {
      FactorRule::identity(rank), FactorRule::identity(rank), {h}, rows, rows};
  rule.results = {FactorRule::identity(rank), {h}, {h}};
  for (int64_t row : rows) {
    rule.reducedIn[1][row] = ReduceKind::sum;
    rule.reducedIn[2][row] = ReduceKind::sum;
  }
  rule.whole.insert(h);
  rule.linear = {{0}};
  return rule;
}

/// Heads (and the batch) split; the sequence and the head dimension are
/// whole. `[..., S, D]`, or `[..., S, H, D]` seq-major; the log-sum-exp is
/// `[..., H, S]` in both.
SmallVector<int64_t> attentionLayout(int64_t rank, bool seqMajor,
                                     SmallVector<int64_t> &statistic) {
  // Factors: leading dims 0..rank-3, then seq = rank-2, dim = rank-1 in
  // the head-major layout; seq-major swaps the seq and head positions.
  SmallVector<int64_t> tensor = FactorRule::identity(rank);
  if (!seqMajor) {
    statistic = FactorRule::identity(rank - 1);
    return tensor;
  }
  int64_t seq = rank - 3, heads = rank - 2;
  std::swap(tensor[seq], tensor[heads]);
  statistic = FactorRule::identity(rank - 3);
  statistic.append({heads, seq});
  return tensor;
}

FactorRule attentionRule(Operation *op, Value query, bool seqMajor,
                         unsigned tensors, unsigned statisticOperand,
                         bool gradient) {
  FactorRule rule(op);
  int64_t rank = rankOf(query);
  SmallVector<int64_t> statistic;
  SmallVector<int64_t> tensor = attentionLayout(rank, seqMajor, statistic);
  int64_t seq = seqMajor ? rank - 3 : rank - 2;
  for (unsigned i = 0; i < tensors; ++i)
    rule.operands[i] = tensor;
  if (gradient)
    rule.operands[statisticOperand] = statistic;
  for (unsigned i = 0, e = op->getNumResults(); i < e; ++i)
    rule.results[i] = tensor;
  if (!gradient)
    rule.results[1] = statistic;
  markWhole(rule, {seq, rank - 1});
  if (gradient)
    rule.linear = {{0}};
  return rule;
}

/// The ids' dimensions split, and the features; the table's rows are whole
/// (a vocabulary-parallel table needs a lookup that skips foreign ids).
FactorRule embeddingRule(train::EmbeddingOp op) {
  FactorRule rule(op);
  int64_t ids = rankOf(op.getIds());
  int64_t h = ids, v = ids + 1;
  rule.operands = {{v, h}, FactorRule::identity(ids)};
  rule.results[0] = FactorRule::identity(ids);
  rule.results[0].push_back(h);
  rule.whole.insert(v);
  return rule;
}

FactorRule embeddingGradRule(train::EmbeddingGradOp op) {
  FactorRule rule(op);
  int64_t ids = rankOf(op.getIds());
  int64_t h = ids, v = ids + 1;
  rule.operands[0] = FactorRule::identity(ids);
  rule.operands[0].push_back(h);
  rule.operands[1] = FactorRule::identity(ids);
  rule.results[0] = {v, h};
  for (int64_t d = 0; d < ids; ++d)
    rule.reducedIn[0][d] = ReduceKind::sum;
  rule.whole.insert(v);
  rule.linear = {{0}};
  return rule;
}

/// Whole in every factor: runs replicated (or passes P through the operands
/// in `linear`).
FactorRule wholeRule(Operation *op, SmallVector<SmallVector<unsigned>> linear) {
  FactorRule rule = elementwise(op);
  for (auto &factors : rule.operands)
    markWhole(rule, factors);
  for (auto &factors : rule.results)
    markWhole(rule, factors);
  rule.linear = std::move(linear);
  return rule;
}

std::optional<FactorRule> describe(Operation *op, ArrayRef<Type> operandTypes) {
  return llvm::TypeSwitch<Operation *, std::optional<FactorRule>>(op)
      .Case<train::NegOp, train::ScaleOp>(
          [](Operation *op) { return elementwiseLinear(op, 0); })
      .Case<train::ExpOp, train::LogOp, train::SqrtOp, train::RsqrtOp,
            train::TanhOp, train::ReluOp, train::GeluOp, train::SigmoidOp,
            train::SiluOp, train::CastOp, train::SgdOp, train::SgdMomentumOp,
            train::AdamOp, train::AdamWOp>(
          [](Operation *op) { return elementwise(op); })
      .Case<train::AddOp, train::SubOp>([](Operation *op) {
        FactorRule rule = elementwise(op);
        rule.linear = {{0, 1}};
        return rule;
      })
      .Case<train::MulOp>([](Operation *op) {
        FactorRule rule = elementwise(op);
        rule.linear = {{0}, {1}};
        return rule;
      })
      .Case<train::DivOp>(
          [](Operation *op) { return elementwiseLinear(op, 0); })
      // Gradients of activations: (saved, result gradient), linear in the
      // gradient.
      .Case<train::ReluGradOp, train::GeluGradOp, train::TanhGradOp,
            train::SigmoidGradOp, train::SiluGradOp>(
          [](Operation *op) { return elementwiseLinear(op, 1); })
      .Case<train::SoftmaxOp>([](train::SoftmaxOp op) {
        FactorRule rule = elementwise(op);
        rule.whole.insert(rankOf(op.getResult()) - 1);
        return rule;
      })
      .Case<train::SoftmaxGradOp>([](train::SoftmaxGradOp op) {
        FactorRule rule = elementwiseLinear(op, 1);
        rule.whole.insert(rankOf(op.getResult()) - 1);
        return rule;
      })
      .Case<train::BiasAddOp>([](train::BiasAddOp op) {
        FactorRule rule(op);
        int64_t rank = rankOf(op.getResult());
        rule.operands = {FactorRule::identity(rank), {rank - 1}};
        rule.results = {FactorRule::identity(rank)};
        rule.linear = {{0, 1}};
        return rule;
      })
      // A mask's positions are indices: the masked dimensions stay whole.
      // Filling with 0 (the gradient) is linear; with -inf it is not.
      .Case<train::CausalMaskOp>([](train::CausalMaskOp op) {
        FactorRule rule = elementwise(op);
        int64_t rank = rankOf(op.getResult());
        markWhole(rule, {rank - 2, rank - 1});
        if (op.getFill().isZero())
          rule.linear = {{0}};
        return rule;
      })
      .Case<train::KeyMaskOp>([](train::KeyMaskOp op) {
        FactorRule rule(op);
        int64_t rank = rankOf(op.getResult());
        rule.operands = {FactorRule::identity(rank), {0, rank - 1}};
        rule.results = {FactorRule::identity(rank)};
        markWhole(rule, {0, rank - 1});
        if (op.getFill().isZero())
          rule.linear = {{0}};
        return rule;
      })
      // The mask is keyed by the element's index in the global batch, so a
      // split would draw another mask; the same mask on every rank keeps a
      // partial value partial.
      .Case<train::DropoutOp>(
          [](train::DropoutOp op) { return wholeRule(op, {{0}}); })
      .Case<train::MatmulOp>(matmulRule)
      .Case<train::ReduceSumOp>([](train::ReduceSumOp op) {
        return reductionRule(op, op.getDims(), ReduceKind::sum);
      })
      .Case<train::ReduceMeanOp>([](train::ReduceMeanOp op) {
        return reductionRule(op, op.getDims(), ReduceKind::mean);
      })
      .Case<train::ExpandOp>(expandRule)
      .Case<train::ReshapeOp>(
          [&](train::ReshapeOp op) { return reshapeRule(op, operandTypes); })
      .Case<train::TransposeOp>(transposeRule)
      .Case<train::SliceOp>(
          [](train::SliceOp op) { return alongDimRule(op, op.getDim()); })
      .Case<train::PadOp>(
          [](train::PadOp op) { return alongDimRule(op, op.getDim()); })
      .Case<train::ConcatOp>(
          [](train::ConcatOp op) { return alongDimRule(op, op.getDim()); })
      .Case<train::LayerNormOp>(layerNormRule)
      .Case<train::LayerNormGradOp>(layerNormGradRule)
      .Case<train::AttentionOp>([](train::AttentionOp op) {
        return attentionRule(op, op.getQuery(), op.getSeqMajor(), 3, 0,
                             /*gradient=*/false);
      })
      .Case<train::AttentionGradOp>([](train::AttentionGradOp op) {
        return attentionRule(op, op.getQuery(), op.getSeqMajor(), 5, 5,
                             /*gradient=*/true);
      })
      .Case<train::EmbeddingOp>(embeddingRule)
      .Case<train::EmbeddingGradOp>(embeddingGradRule)
      // Losses over the whole of their logits (a vocabulary-parallel loss
      // needs its own kernel); the gradient is linear in the loss gradient.
      .Case<train::SoftmaxCrossEntropyOp, train::CountLabelsOp>(
          [](Operation *op) { return wholeRule(op, {}); })
      .Case<train::SoftmaxCrossEntropyGradOp>(
          [](train::SoftmaxCrossEntropyGradOp op) {
            return wholeRule(op, {{2}});
          })
      .Case<train::StepIndexOp, arith::ConstantOp>(
          [](Operation *op) { return wholeRule(op, {}); })
      .Default([](Operation *) { return std::nullopt; });
}

/// The signatures a factor rule allows.
SmallVector<SbpSignature> signaturesOf(Operation *op, const FactorRule &rule) {
  SmallVector<SbpSignature> signatures;
  unsigned numOperands = op->getNumOperands();
  unsigned numResults = op->getNumResults();
  signatures.push_back({SmallVector<SbpDim>(numOperands, SbpDim::broadcast()),
                        SmallVector<SbpDim>(numResults, SbpDim::broadcast())});

  SmallVector<int64_t> factors;
  auto note = [&](ArrayRef<int64_t> dims) {
    for (int64_t factor : dims)
      if (factor >= 0 && !rule.whole.contains(factor) &&
          !llvm::is_contained(factors, factor))
        factors.push_back(factor);
  };
  for (const auto &dims : rule.operands)
    note(dims);
  for (int64_t factor : factors) {
    SbpSignature signature;
    for (const auto &dims : rule.operands) {
      const auto *at = llvm::find(dims, factor);
      signature.operands.push_back(
          at == dims.end() ? SbpDim::broadcast()
                           : SbpDim::split(std::distance(dims.begin(), at)));
    }
    bool valid = true;
    for (auto [r, dims] : llvm::enumerate(rule.results)) {
      const auto *at = llvm::find(dims, factor);
      if (at != dims.end()) {
        signature.results.push_back(
            SbpDim::split(std::distance(dims.begin(), at)));
        continue;
      }
      auto reduced = rule.reducedIn[r].find(factor);
      if (reduced == rule.reducedIn[r].end()) {
        valid = false;
        break;
      }
      signature.results.push_back(SbpDim::partial(reduced->second));
    }
    if (valid)
      signatures.push_back(std::move(signature));
  }

  for (const auto &group : rule.linear) {
    SbpSignature signature;
    for (unsigned i = 0; i < numOperands; ++i)
      signature.operands.push_back(llvm::is_contained(group, i)
                                       ? SbpDim::partial(ReduceKind::sum)
                                       : SbpDim::broadcast());
    signature.results.assign(numResults, SbpDim::partial(ReduceKind::sum));
    signatures.push_back(std::move(signature));
  }
  return signatures;
}

} // namespace

std::optional<SmallVector<SbpSignature>>
zero::dist::getSbpSignatures(Operation *op, ArrayRef<Type> operandTypes) {
  std::optional<FactorRule> rule = describe(op, operandTypes);
  if (!rule)
    return std::nullopt;
  return signaturesOf(op, *rule);
}
