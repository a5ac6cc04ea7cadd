//===- GatheredParameters.cpp - Stage-3 gathers and their live bytes ------===//

#include "zero/analysis/GatheredParameters.h"

#include "zero/analysis/TrainingStep.h"

using namespace mlir;

namespace zero {

static bool isParameterShard(Value value) {
  return isa_and_nonnull<train::LoadOp>(value.getDefiningOp());
}

/// The first-level gather of parameter shards that every value of `values`
/// comes out of (its result, or members of its unpack), or null.
static dist::AllGatherOp getPriorLevel(ValueRange values) {
  Operation *source = nullptr;
  for (Value value : values) {
    Operation *def = value.getDefiningOp();
    if (!def || (source && def != source))
      return {};
    source = def;
  }
  if (auto unpack = dyn_cast_or_null<dist::UnpackOp>(source))
    source = unpack.getInput().getDefiningOp();
  auto prior = dyn_cast_or_null<dist::AllGatherOp>(source);
  if (!prior)
    return {};
  std::optional<ParameterGather> first = getParameterGather(prior);
  if (!first || first->priorGather)
    return {};
  return prior;
}

std::optional<ParameterGather> getParameterGather(dist::AllGatherOp gather) {
  ParameterGather result;
  result.gather = gather;
  Value input = gather.getInput();
  if (auto pack = input.getDefiningOp<dist::PackOp>()) {
    if (!pack->hasOneUse())
      return std::nullopt;
    if (!llvm::all_of(pack.getInputs(), isParameterShard) &&
        !(result.priorGather = getPriorLevel(pack.getInputs())))
      return std::nullopt;
    result.pack = pack;
  } else if (!isParameterShard(input) &&
             !(result.priorGather = getPriorLevel(input))) {
    return std::nullopt;
  }
  if (gather->hasOneUse())
    if (auto unpack = dyn_cast<dist::UnpackOp>(*gather->user_begin()))
      if (unpack.getShards())
        result.unpack = unpack;
  auto type = dyn_cast<RankedTensorType>(gather.getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  result.bytes = getTensorBytes(type);
  return result;
}

/// The parameter whose shard `value` is, or (one level on) whose shard a
/// first-level gather gathered it from: a bucket's members are its pack's
/// inputs, in order.
static llvm::StringRef getParameterName(Value value) {
  Operation *def = value.getDefiningOp();
  if (auto load = dyn_cast_or_null<train::LoadOp>(def))
    return load.getState();
  if (auto unpack = dyn_cast_or_null<dist::UnpackOp>(def))
    if (auto gather = unpack.getInput().getDefiningOp<dist::AllGatherOp>())
      if (auto pack = gather.getInput().getDefiningOp<dist::PackOp>())
        return getParameterName(
            pack.getInputs()[cast<OpResult>(value).getResultNumber()]);
  if (auto gather = dyn_cast_or_null<dist::AllGatherOp>(def))
    return getParameterName(gather.getInput());
  return "?";
}

std::string describeGather(ParameterGather gather) {
  SmallVector<Value> inputs;
  if (gather.pack)
    inputs.append(gather.pack.getInputs().begin(),
                  gather.pack.getInputs().end());
  else
    inputs.push_back(gather.gather.getInput());
  std::string names;
  llvm::raw_string_ostream os(names);
  for (auto [index, input] : llvm::enumerate(inputs)) {
    if (index == 4) {
      os << ", ... (" << inputs.size() << " parameters)";
      break;
    }
    os << (index ? ", @" : "@") << getParameterName(input);
  }
  return (gather.pack ? "the bucket of " : "") + names;
}

/// The last operation of `block` that reads `value` or a view of it.
static int64_t getLastUse(Value value, Block &block,
                          const DenseMap<Operation *, int64_t> &position,
                          int64_t last) {
  for (Operation *user : value.getUsers()) {
    Operation *inBlock = block.findAncestorOpInBlock(*user);
    if (!inBlock)
      continue;
    last = std::max(last, position.lookup(inBlock));
    bool aliases =
        isa<train::ReshapeOp>(user) ||
        (isa<dist::UnpackOp>(user) && !cast<dist::UnpackOp>(user).getShards());
    if (aliases && user->getBlock() == &block)
      for (Value result : user->getResults())
        last = getLastUse(result, block, position, last);
  }
  return last;
}

GatheredLiveness::GatheredLiveness(Block &block) : block(&block) {
  for (auto [index, op] : llvm::enumerate(block))
    position[&op] = index;
  auto addInterval = [&](Value value, int64_t bytes, std::string name) {
    int64_t first = position.lookup(value.getDefiningOp());
    intervals.push_back({value, bytes, first,
                         getLastUse(value, block, position, first),
                         std::move(name)});
  };
  for (auto gatherOp : block.getOps<dist::AllGatherOp>()) {
    std::optional<ParameterGather> gather = getParameterGather(gatherOp);
    if (!gather)
      continue;
    addInterval(gatherOp.getResult(), gather->bytes, describeGather(*gather));
    if (!gather->unpack)
      continue;
    for (auto [index, member] : llvm::enumerate(gather->unpack.getResults())) {
      // A bucket's members are its pack's inputs, in order.
      std::string name =
          gather->pack && index < gather->pack.getInputs().size()
              ? ("@" + getParameterName(gather->pack.getInputs()[index])).str()
              : describeGather(*gather);
      addInterval(member,
                  getTensorBytes(cast<RankedTensorType>(member.getType())),
                  std::move(name));
    }
  }
  liveAt.assign(position.size() + 1, 0);
  for (const Interval &interval : intervals) {
    liveAt[interval.first] += interval.bytes;
    liveAt[interval.last + 1] -= interval.bytes;
  }
  for (size_t index = 1; index < liveAt.size(); ++index)
    liveAt[index] += liveAt[index - 1];
  liveAt.pop_back();
}

int64_t GatheredLiveness::getPeak() const {
  return liveAt.empty() ? 0 : *llvm::max_element(liveAt);
}

Operation *GatheredLiveness::getPeakOp() const {
  int64_t peak = getPeak();
  if (peak == 0)
    return nullptr;
  auto it = llvm::find(liveAt, peak);
  return &*std::next(block->begin(), std::distance(liveAt.begin(), it));
}

SmallVector<GatheredLiveness::Interval>
GatheredLiveness::getLiveAt(int64_t index) const {
  SmallVector<Interval> live;
  for (const Interval &interval : intervals)
    if (interval.first <= index && index <= interval.last)
      live.push_back(interval);
  llvm::stable_sort(live, [](const Interval &a, const Interval &b) {
    return a.bytes > b.bytes;
  });
  return live;
}

static int64_t computePeak(Block &block, int64_t around) {
  GatheredLiveness liveness(block);
  int64_t peak = 0;
  for (auto [index, op] : llvm::enumerate(block)) {
    int64_t here = around + liveness.liveAt[index];
    peak = std::max(peak, here);
    for (Region &region : op.getRegions())
      for (Block &nested : region)
        peak = std::max(peak, computePeak(nested, here));
  }
  return peak;
}

int64_t computePeakGatheredBytes(func::FuncOp function) {
  if (function.getBody().empty())
    return 0;
  return computePeak(function.front(), 0);
}

} // namespace zero
