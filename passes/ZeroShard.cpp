//===- ZeroShard.cpp - ZeRO stages 1, 2 and 3 -----------------------------===//
//
// Partitions the optimizer state (stage 1), the gradients (stage 2) and the
// parameters (stage 3) of a data-parallel step across the ranks of the
// placement (ZeroShardCollectives.h says how a mesh is cut). The pass looks
// only at persistent state, the optimizer updates that
// train-materialize-optimizer wrote, the gradient all-reduces that
// dist-data-parallel inserted and the loads of sharded parameters; compute is
// never inspected, so steps written in linalg work alike.
//
//===----------------------------------------------------------------------===//

#include "ZeroShardSharder.h"

#include "zero/passes/Passes.h"
#include "zero/support/ZeroStage.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace zero {
#define GEN_PASS_DEF_ZEROSHARD
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using namespace zero::sharding;

void Sharder::recordQuantization() {
  Builder builder(module.getContext());
  SmallVector<Attribute> fullPrecision;
  for (auto state : module.getOps<train::ParamOp>())
    if (state.isSharded() &&
        (state.getRole() == train::Role::param ||
         state.getRole() == train::Role::frozen) &&
        !cut->quantizesAcrossNodes(state.getLocalTensorType().getNumElements()))
      fullPrecision.push_back(builder.getStringAttr(state.getSymName()));
  SmallVector<NamedAttribute> entries = {
      builder.getNamedAttr("block",
                           builder.getI64IntegerAttr(quantization.block)),
      builder.getNamedAttr("min_elements",
                           builder.getI64IntegerAttr(quantization.minElements)),
      builder.getNamedAttr("weights",
                           builder.getBoolAttr(quantization.weights)),
      builder.getNamedAttr("gradients",
                           builder.getBoolAttr(quantization.gradients)),
      builder.getNamedAttr("weight_bits",
                           builder.getI64IntegerAttr(quantization.weightBits)),
      builder.getNamedAttr("gradient_bits", builder.getI64IntegerAttr(
                                                quantization.gradientBits)),
      builder.getNamedAttr("full_precision",
                           builder.getArrayAttr(fullPrecision))};
  module->setAttr(dist::DistDialect::getQuantizationAttrName(),
                  builder.getDictionaryAttr(entries));
}

void Sharder::placeFilters() {
  for (Operation *filter : filters) {
    // Below min-shard-elements some gradients stay whole: expandClipping
    // then adds their squares after the all-reduce, once, instead of once
    // per rank.
    auto clip = dyn_cast<train::ClipByGlobalNormOp>(filter);
    if (clip && llvm::all_of(clip.getGrads(), [&](Value v) {
          return gradShards.contains(getRawGradient(v));
        }))
      clip.setSharded(true);
    Operation *last = nullptr;
    for (Value operand : filter->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def)
        def = filter->getBlock()->findAncestorOpInBlock(*def);
      if (def && (!last || last->isBeforeInBlock(def)))
        last = def;
    }
    if (last && filter->isBeforeInBlock(last))
      filter->moveAfter(last);
  }
}

void Sharder::shardDeclaration(train::ParamOp state, StorageLayoutKind kind) {
  if (state.isSharded())
    return;
  MLIRContext *context = state.getContext();
  state.setLayoutAttr(train::StorageLayoutKindAttr::get(context, kind));
  state.setShardAxesAttr(
      DenseI64ArrayAttr::get(state.getContext(), cut->getShardAxes()));
  state.setLocalTypeAttr(
      TypeAttr::get(shardTypeOf(state.getSplitTensorType(), kind)));
}

Value Sharder::emitReduceScatter(OpBuilder &builder, Location loc, Value full,
                                 StorageLayoutKind kind) {
  return cut->reduceScatter(builder, loc,
                            flattenForLayout(builder, loc, full, kind));
}

Value Sharder::emitGather(OpBuilder &builder, Location loc, Value shard,
                          RankedTensorType logical, StorageLayoutKind kind,
                          Value *secondary) {
  return cut->allGather(builder, loc, shard, gatheredExtent(logical, kind),
                        secondary);
}

FailureOr<UpdateSite> Sharder::analyzeUpdate(Operation *update) {
  UpdateView view(update);
  UpdateSite site{update, nullptr, {}, nullptr, nullptr, {}, nullptr};
  // The averages dist-data-parallel wrote, from the update inwards: one
  // over axis 0, or on a mesh one per axis, the innermost first.
  Value averaged = getRawGradient(view.getGrad());
  while (auto average = averaged.getDefiningOp<dist::AllReduceOp>()) {
    if (average.getReduce() != dist::ReduceKind::mean)
      break;
    site.averages.insert(site.averages.begin(), average);
    averaged = average.getInput();
    if (!averaged.hasOneUse())
      break;
  }
  SmallVector<int64_t> axes;
  for (dist::AllReduceOp average : site.averages)
    axes.push_back(average.getAxis());
  SmallVector<int64_t> expected;
  for (int64_t axis = numAxes; axis-- > 0;)
    expected.push_back(axis);
  if (axes != expected)
    return update->emitOpError()
           << "takes a gradient that is not averaged by 'dist.all_reduce "
              "mean' over "
           << (numAxes == 1 ? "axis 0"
                            : "each axis of the mesh, the innermost first")
           << "; run dist-data-parallel before zero-shard";
  site.average = site.averages.front();
  train::ParamOp updated = getLoadedState(view.getParam(), symbols);
  if (!updated)
    return update->emitOpError()
           << "updates a tensor that is not loaded from persistent state; "
              "zero-shard shards the updates train-materialize-optimizer "
              "writes";
  if (updated.getRole() == train::Role::master) {
    site.master = updated;
    site.param = symbols.lookupNearestSymbolFrom<train::ParamOp>(
        updated, updated.getOwnerAttr());
  } else {
    site.param = updated;
  }
  for (unsigned i = 0, e = view.getNumSlots(); i < e; ++i) {
    train::ParamOp slot = getLoadedState(view.getSlot(i), symbols);
    if (!slot || slot.getRole() != train::Role::slot)
      return update->emitOpError()
             << "takes slot operand #" << i
             << " that is not loaded from an optimizer slot";
    site.slots.push_back(slot);
  }
  // Every result must go straight to persistent state (possibly through the
  // cast back into a 16-bit parameter), which this pass rewrites.
  for (Operation *user : update->getUsers()) {
    if (isa<train::StoreOp>(user))
      continue;
    if (isa<train::CastOp>(user) && llvm::all_of(user->getUsers(), [](auto *u) {
          return isa<train::StoreOp>(u);
        }))
      continue;
    InFlightDiagnostic diag = update->emitOpError()
                              << "has a result used by '" << user->getName()
                              << "'; zero-shard expects updated values to be "
                                 "stored to persistent state";
    diag.attachNote(user->getLoc()) << "used here";
    return diag;
  }
  return site;
}

LogicalResult Sharder::shardAccumulator(train::ParamOp accumulator,
                                        train::ParamOp param) {
  StorageLayoutKind kind = layoutOf(param);
  shardDeclaration(accumulator, kind);
  RankedTensorType shardType = accumulator.getLocalTensorType();
  SmallVector<train::LoadOp> loads;
  SmallVector<train::StoreOp> stores;
  for (func::FuncOp function : getStepFunctions(module))
    function.walk([&](Operation *op) {
      if (auto load = dyn_cast<train::LoadOp>(op)) {
        if (load.getState() == accumulator.getSymName())
          loads.push_back(load);
      } else if (auto store = dyn_cast<train::StoreOp>(op)) {
        if (store.getState() == accumulator.getSymName())
          stores.push_back(store);
      }
    });

  DenseSet<Operation *> handledLoads;
  for (train::StoreOp store : stores) {
    OpBuilder builder(store);
    Location loc = store.getLoc();
    Operation *producer = store.getValue().getDefiningOp();
    if (auto add = dyn_cast_or_null<train::AddOp>(producer)) {
      // The micro-step: acc += grad becomes acc_shard += RS(grad).
      auto old = add.getLhs().getDefiningOp<train::LoadOp>();
      if (!old || old.getState() != accumulator.getSymName())
        return add.emitOpError() << "accumulates into "
                                 << "@" << accumulator.getSymName()
                                 << " without loading it first";
      // A 16-bit gradient widened for an f32 accumulator is reduced in its
      // own precision, and only its shard widened, unless the module reduces
      // in f32 (dist.reduce_type).
      Value grad = add.getRhs();
      auto widen = grad.getDefiningOp<train::CastOp>();
      if (widen &&
          module->hasAttr(dist::DistDialect::getReduceTypeAttrName())) {
        // Reduced in f32: widened where the 16-bit gradient is complete, not
        // where the accumulation reads it (after the whole backward), so
        // that each gradient is reduced and freed as without accumulation
        // instead of every one living to the end of the micro-step.
        Value narrow = widen.getOperand();
        Operation *def = narrow.getDefiningOp();
        Block *home =
            def ? def->getBlock() : cast<BlockArgument>(narrow).getOwner();
        if (home == widen->getBlock()) {
          if (def)
            widen->moveAfter(def);
          else
            widen->moveBefore(&home->front());
        }
        widen = nullptr;
      }
      if (widen)
        grad = widen.getOperand();
      OpBuilder after(grad.getContext());
      after.setInsertionPointAfterValue(grad);
      Value gradShard = emitReduceScatter(after, loc, grad, kind);
      builder.setInsertionPoint(add);
      if (widen)
        gradShard = builder.create<train::CastOp>(loc, shardType, gradShard);
      Value sum = builder.create<train::AddOp>(
          loc, emitLoad(builder, loc, accumulator), gradShard);
      store.getValueMutable().assign(sum);
      handledLoads.insert(old);
      add.erase();
      eraseIfDead(old);
      if (widen)
        eraseIfDead(widen);
      continue;
    }
    if (auto constant = dyn_cast_or_null<arith::ConstantOp>(producer)) {
      // The reset after the update.
      auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
      if (splat) {
        Value zeros = builder.create<arith::ConstantOp>(
            loc, SplatElementsAttr::get(shardType,
                                        splat.getSplatValue<Attribute>()));
        store.getValueMutable().assign(zeros);
        eraseIfDead(constant);
        continue;
      }
    }
    return store.emitOpError()
           << "writes gradient accumulator "
           << "@" << accumulator.getSymName()
           << " in a form zero-shard does not know; it shards the "
              "accumulation train-materialize-optimizer writes";
  }

  // The apply step: the averaged accumulator is already this rank's reduced
  // shard, so the update needs no further reduction.
  for (train::LoadOp load : loads) {
    if (handledLoads.contains(load))
      continue;
    OpBuilder builder(load);
    Value shard = emitLoad(builder, load.getLoc(), accumulator);
    auto scale = load->hasOneUse()
                     ? dyn_cast<train::ScaleOp>(*load->getUsers().begin())
                     : nullptr;
    if (!scale)
      return load.emitOpError() << "reads gradient accumulator "
                                << "@" << accumulator.getSymName()
                                << " in a form zero-shard does not know";
    builder.setInsertionPoint(scale);
    reducedShards[scale.getResult()] = builder.create<train::ScaleOp>(
        scale.getLoc(), shard, scale.getFactorAttr());
  }
  return success();
}

LogicalResult Sharder::rewriteUpdate(UpdateSite &site) {
  Operation *update = site.update;
  UpdateView view(update);
  Location loc = update->getLoc();
  StorageLayoutKind kind = layoutOf(site.param);
  if (site.master)
    shardDeclaration(site.master, kind);
  for (train::ParamOp slot : site.slots)
    shardDeclaration(slot, kind);
  if (stage == 3)
    shardDeclaration(site.param, kind);

  // The gradient shard: stage 1 reduces where the update is, later stages as
  // soon as the gradient exists (where dist-data-parallel averaged it).
  Value grad = site.average.getInput();
  Value gradShard = reducedShards.lookup(grad);
  if (!gradShard)
    gradShard = site.gradShard;
  if (!gradShard) {
    OpBuilder builder(site.average);
    gradShard = emitReduceScatter(builder, loc, grad, kind);
  }

  OpBuilder builder(update);
  Value paramShard;
  if (site.master || stage == 3) {
    paramShard = emitLoad(builder, loc, site.master ? site.master : site.param);
  } else {
    // The replicated parameter: each rank updates its slice of it.
    Value full = flattenForLayout(builder, loc,
                                  emitLoad(builder, loc, site.param), kind);
    paramShard = cut->slice(builder, loc, full);
  }
  // A filtered gradient (unscaled, clipped): each filter now reads the
  // shard and yields the filtered shard; the norm becomes a partial sum
  // that expandClipping all-reduces, the overflow flag a partial one that
  // agreeOnOverflow all-reduces.
  gradShards.insert(gradShard);
  for (Operation *filter : getGradientFilters(view.getGrad())) {
    unsigned index = cast<OpResult>(view.getGrad()).getResultNumber();
    // The same position all along the chain: result i filters operand i.
    filter->setOperand(index, gradShard);
    auto shardType = cast<RankedTensorType>(gradShard.getType());
    Type elementType =
        isa<train::UnscaleOp>(filter)
            ? cast<RankedTensorType>(filter->getResult(index).getType())
                  .getElementType()
            : shardType.getElementType();
    filter->getResult(index).setType(
        RankedTensorType::get(shardType.getShape(), elementType));
    filters.insert(filter);
    gradShard = filter->getResult(index);
  }
  SmallVector<Value> operands{paramShard, gradShard};
  SmallVector<Type> resultTypes{paramShard.getType()};
  for (train::ParamOp slot : site.slots) {
    operands.push_back(emitLoad(builder, loc, slot));
    resultTypes.push_back(slot.getLocalTensorType());
  }
  for (Value rest : update->getOperands().drop_front(2 + view.getNumSlots()))
    operands.push_back(rest);
  OperationState state(loc, update->getName(), operands, resultTypes,
                       update->getAttrs());
  UpdateView sharded(builder.create(state));

  for (auto [index, slot] : llvm::enumerate(site.slots))
    builder.create<train::StoreOp>(loc, sharded.getNewSlot(index),
                                   slot.getSymName());
  Value newParam = sharded.getNewParam();
  RankedTensorType logical = site.param.getSplitTensorType();
  if (site.master) {
    builder.create<train::StoreOp>(loc, newParam, site.master.getSymName());
    auto type = cast<RankedTensorType>(newParam.getType());
    newParam = builder.create<train::CastOp>(
        loc, RankedTensorType::get(type.getShape(), logical.getElementType()),
        newParam);
  }
  if (stage == 3) {
    builder.create<train::StoreOp>(loc, newParam, site.param.getSymName());
  } else {
    pendingGathers[update->getBlock()].push_back(
        {newParam, site.param, kind, loc});
  }

  // Drop the replicated update and everything only it needed.
  llvm::SetVector<Operation *> users(update->user_begin(), update->user_end());
  for (Operation *user : users) {
    SmallVector<Operation *> stores(user->getUsers());
    for (Operation *store : stores)
      store->erase();
    eraseIfDead(user);
  }
  llvm::SetVector<Operation *> loads;
  for (Value operand : update->getOperands())
    if (auto load = operand.getDefiningOp<train::LoadOp>())
      loads.insert(load);
  update->erase();
  for (Operation *load : loads)
    eraseIfDead(load);
  // The averages, from the update inwards.
  for (dist::AllReduceOp average : llvm::reverse(site.averages))
    eraseIfDead(average);
  if (reducedShards.count(grad)) {
    Operation *scale = grad.getDefiningOp();
    Operation *load = scale->getOperand(0).getDefiningOp();
    eraseIfDead(scale);
    eraseIfDead(load);
  }
  return success();
}

LogicalResult Sharder::run() {
  auto stageAttr = module->getAttrOfType<IntegerAttr>(
      dist::DistDialect::getZeroStageAttrName());
  if (!stageAttr)
    return mlir::emitError(module.getLoc())
           << "zero-shard: the module is not data "
              "parallel; run dist-data-parallel first";
  if (stageAttr.getInt() != 0)
    return mlir::emitError(module.getLoc())
           << "zero-shard: the module is already at ZeRO "
              "stage "
           << stageAttr.getInt();
  dist::PlacementAttr placement = dist::lookupPlacement(module);
  if (!placement)
    return mlir::emitError(module.getLoc()) << "zero-shard: the module has no "
                                               "'dist.placement'";
  // A tensor-parallel axis (the last, dist-tensor-parallel's) is not cut:
  // ZeRO shards each tensor-parallel shard over the data-parallel axes in
  // front of it, as FSDP2 shards a DTensor's local shard.
  numAxes = placement.getNumAxes();
  if (auto tpAxis = module->getAttrOfType<IntegerAttr>(
          dist::DistDialect::getTensorParallelAxisAttrName())) {
    if (tpAxis.getInt() != numAxes - 1)
      return mlir::emitError(module.getLoc())
             << "zero-shard: the tensor-parallel axis must be the last of "
             << placement << ", got " << tpAxis;
    --numAxes;
  }
  if (numAxes > 2)
    return mlir::emitError(module.getLoc())
           << "zero-shard: shards over one axis or a two-level mesh; "
           << placement << " has " << numAxes << " data-parallel axes";
  if (secondaryShards &&
      (stage != 3 || numAxes != 2 || scheme != MeshScheme::full))
    return mlir::emitError(module.getLoc())
           << "zero-shard: hpz keeps a secondary shard within the node of a "
              "parameter cut over both axes of a mesh; it needs stage=3, "
              "mesh-scheme=full and a two-axis placement, got stage "
           << stage << " on " << placement;
  bool quantizes = quantization.weights || quantization.gradients;
  if (quantizes && (numAxes != 2 || scheme != MeshScheme::full))
    return mlir::emitError(module.getLoc())
           << "zero-shard: qwz and qgz quantize what crosses nodes under full "
              "2-D sharding; they need mesh-scheme=full on a two-axis "
              "placement, got "
           << placement;
  if (quantization.weights && stage != 3)
    return mlir::emitError(module.getLoc())
           << "zero-shard: qwz quantizes the gathers of sharded parameters; it "
              "needs stage=3, got stage "
           << stage;
  cut.emplace(placement, numAxes, scheme, quantization);

  // State is rewritten only where the step functions touch it.
  SmallVector<func::FuncOp> steps = getStepFunctions(module);
  WalkResult outside = module.walk([&](Operation *op) {
    if (!isa<train::LoadOp, train::StoreOp>(op))
      return WalkResult::advance();
    auto function = op->getParentOfType<func::FuncOp>();
    if (function && llvm::is_contained(steps, function))
      return WalkResult::advance();
    op->emitOpError() << "reads or writes training state outside the step "
                         "functions; zero-shard rewrites state only in "
                         "functions marked 'train.step' or "
                         "'train.apply_step' (inline helpers with --inline "
                         "first)";
    return WalkResult::interrupt();
  });
  if (outside.wasInterrupted())
    return failure();

  SmallVector<UpdateSite> sites;
  for (func::FuncOp function : getStepFunctions(module)) {
    WalkResult result = function.walk([&](Operation *op) {
      if (auto apply = dyn_cast<train::ApplyGradientOp>(op)) {
        apply.emitOpError() << "is still implicit; run "
                               "train-materialize-optimizer before zero-shard";
        return WalkResult::interrupt();
      }
      if (!isUpdateOp(op))
        return WalkResult::advance();
      FailureOr<UpdateSite> site = analyzeUpdate(op);
      if (failed(site))
        return WalkResult::interrupt();
      if (shouldShard(site->param))
        sites.push_back(*site);
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return failure();
  }

  if (stage >= 2) {
    for (auto accumulator : module.getOps<train::ParamOp>()) {
      if (accumulator.getRole() != train::Role::grad_accum)
        continue;
      auto param = symbols.lookupNearestSymbolFrom<train::ParamOp>(
          accumulator, accumulator.getOwnerAttr());
      if (shouldShard(param) && failed(shardAccumulator(accumulator, param)))
        return failure();
    }
  }
  if (stage == 1) {
    // Every gradient is reduced just before the block's first update, so the
    // reduce-scatters are adjacent and zero-bucket can fuse them.
    DenseMap<Block *, Operation *> firstUpdate;
    for (UpdateSite &site : sites)
      firstUpdate.try_emplace(site.update->getBlock(), site.update);
    // Decided before anything is inserted, so block order is computed once.
    SmallVector<Operation *> points;
    for (UpdateSite &site : sites) {
      Operation *point = firstUpdate.lookup(site.update->getBlock());
      points.push_back(point->isBeforeInBlock(site.average) ? site.average
                                                            : point);
    }
    for (auto [site, point] : llvm::zip(sites, points)) {
      Value grad = site.average.getInput();
      if (reducedShards.count(grad))
        continue;
      OpBuilder builder(point);
      site.gradShard = emitReduceScatter(builder, site.update->getLoc(), grad,
                                         layoutOf(site.param));
    }
  }
  for (UpdateSite &site : sites)
    if (failed(rewriteUpdate(site)))
      return failure();
  placeFilters();
  emitPendingGathers();

  if (stage == 3) {
    DenseSet<train::ParamOp> sharded;
    for (auto param : module.getOps<train::ParamOp>())
      if ((param.getRole() == train::Role::param ||
           param.getRole() == train::Role::frozen) &&
          shouldShard(param)) {
        shardDeclaration(param, layoutOf(param));
        sharded.insert(param);
      }
    for (func::FuncOp function : getStepFunctions(module))
      gatherParameterLoads(function, sharded);
  }
  auto isShard = [&](Value grad) {
    return gradShards.contains(getRawGradient(grad));
  };
  agreeOnOverflow(module, isShard, cut->getShardAxes());
  expandClipping(module, isShard, cut->getShardAxes());
  module->setAttr(
      dist::DistDialect::getZeroStageAttrName(),
      IntegerAttr::get(IntegerType::get(module.getContext(), 64), stage));
  if (quantizes)
    recordQuantization();
  if (numAxes == 2)
    module->setAttr(dist::DistDialect::getMeshSchemeAttrName(),
                    StringAttr::get(module.getContext(),
                                    secondaryShards              ? "hpz"
                                    : scheme == MeshScheme::full ? "full"
                                                                 : "hybrid"));
  return success();
}

namespace {

struct ZeroShardPass : zero::impl::ZeroShardBase<ZeroShardPass> {
  using ZeroShardBase::ZeroShardBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!isZeroStage(stage, /*plainAllowed=*/false)) {
      mlir::emitError(module.getLoc())
          << "zero-shard: " << zeroStageRangeError(stage, false)
          << " (stage 0 is dist-data-parallel alone)";
      return signalPassFailure();
    }
    if (minShardElements < 0 || maxReuseDistance < 0) {
      mlir::emitError(module.getLoc())
          << "zero-shard: min-shard-elements and "
             "max-reuse-distance must not be negative";
      return signalPassFailure();
    }
    if (quantizeBlock < 1 || quantizeMinElements < 0) {
      mlir::emitError(module.getLoc())
          << "zero-shard: quantize-block must be positive and "
             "quantize-min-elements not negative, got "
          << static_cast<int64_t>(quantizeBlock) << " and "
          << static_cast<int64_t>(quantizeMinElements);
      return signalPassFailure();
    }
    for (auto [name, bits] :
         {std::pair<StringRef, int64_t>{"qwz-bits", qwzBits},
          {"qgz-bits", qgzBits}})
      if (bits != 8 && bits != 4) {
        mlir::emitError(module.getLoc())
            << "zero-shard: " << name << " must be 8 (int8) or 4 (int4), got "
            << bits;
        return signalPassFailure();
      }
    Quantization quantization{qwz,     qgz,           qwzBits,
                              qgzBits, quantizeBlock, quantizeMinElements};
    if (failed(Sharder(module, stage, layout, minShardElements,
                       regatherInBackward, maxReuseDistance, meshScheme, hpz,
                       quantization)
                   .run()))
      signalPassFailure();
  }
};

} // namespace
