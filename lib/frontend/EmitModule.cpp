//===- EmitModule.cpp - A recorded graph as a train-dialect module --------===//

#include "EmitModule.h"

#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/train/TrainDialect.h"
#include "zero/dialects/train/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <map>
#include <vector>

using namespace mlir;
using namespace zero;
using zero::frontend::DType;
using zero::frontend::Init;
using zero::frontend::OptimizerSpec;
using zero::frontend::detail::GraphState;
using zero::frontend::detail::InputDecl;
using zero::frontend::detail::Node;
using zero::frontend::detail::ParameterDecl;

namespace {

Type elementType(DType dtype, Builder &builder) {
  switch (dtype) {
  case DType::f32:
    return builder.getF32Type();
  case DType::bf16:
    return builder.getBF16Type();
  case DType::f16:
    return builder.getF16Type();
  case DType::i32:
    return builder.getI32Type();
  case DType::i64:
    return builder.getI64Type();
  case DType::i8:
    return builder.getI8Type();
  }
  return builder.getF32Type();
}

RankedTensorType tensorType(const frontend::Shape &shape, DType dtype,
                            Builder &builder) {
  return RankedTensorType::get(shape, elementType(dtype, builder));
}

train::InitAttr initAttr(const Init &init, MLIRContext *context) {
  train::InitKind kind = train::InitKind::zeros;
  switch (init.kind) {
  case Init::Kind::zeros:
    kind = train::InitKind::zeros;
    break;
  case Init::Kind::ones:
    kind = train::InitKind::ones;
    break;
  case Init::Kind::constant:
    kind = train::InitKind::constant;
    break;
  case Init::Kind::normal:
    kind = train::InitKind::normal;
    break;
  case Init::Kind::uniform:
    kind = train::InitKind::uniform;
    break;
  }
  return train::InitAttr::get(context, kind, APFloat(init.first),
                              APFloat(init.second));
}

train::OptimizerKind optimizerKind(OptimizerSpec::Kind kind) {
  switch (kind) {
  case OptimizerSpec::Kind::sgd:
    return train::OptimizerKind::sgd;
  case OptimizerSpec::Kind::momentum:
    return train::OptimizerKind::momentum;
  case OptimizerSpec::Kind::adam:
    return train::OptimizerKind::adam;
  case OptimizerSpec::Kind::adamw:
    return train::OptimizerKind::adamw;
  }
  return train::OptimizerKind::adamw;
}

/// The optimizer's symbol: its kind, and for a parameter group
/// `<kind>.<group>`.
std::string optimizerName(const OptimizerSpec &spec, llvm::StringRef group) {
  std::string name =
      train::stringifyOptimizerKind(optimizerKind(spec.kind)).str();
  if (!group.empty())
    name += "." + group.str();
  return name;
}

/// `train.optimizer @<kind> <kind> lr ...`, with betas and eps for the Adam
/// family and weight decay only when set (as the examples write it).
std::string emitOptimizer(const OptimizerSpec &spec, OpBuilder &builder,
                          Location loc, llvm::StringRef group = "") {
  train::OptimizerKind kind = optimizerKind(spec.kind);
  bool adamLike =
      kind == train::OptimizerKind::adam || kind == train::OptimizerKind::adamw;
  // Built generically from the attribute names, so that optional
  // attributes this builder does not set need no argument.
  OperationState state(loc, train::OptimizerOp::getOperationName());
  auto f64 = [&](const char *attrName, bool present, double value) {
    if (present)
      state.addAttribute(attrName, builder.getF64FloatAttr(value));
  };
  auto i64 = [&](const char *attrName, bool present, int64_t value) {
    if (present)
      state.addAttribute(attrName, builder.getI64IntegerAttr(value));
  };
  std::string name = optimizerName(spec, group);
  state.addAttribute("sym_name", builder.getStringAttr(name));
  state.addAttribute("kind",
                     train::OptimizerKindAttr::get(builder.getContext(), kind));
  f64("lr", true, spec.lr);
  f64("momentum", kind == train::OptimizerKind::momentum, spec.momentum);
  f64("beta1", adamLike, spec.betas.first);
  f64("beta2", adamLike, spec.betas.second);
  f64("eps", adamLike, spec.eps);
  f64("weight_decay",
      spec.weightDecay != 0.0 || kind == train::OptimizerKind::adamw,
      spec.weightDecay);
  // A schedule only when the rate varies, so that constant-rate optimizers
  // print as they always have.
  const zero::frontend::Schedule &schedule = spec.schedule;
  bool scheduled = !schedule.isConstant();
  bool decays = schedule.kind != zero::frontend::Schedule::Kind::constant;
  if (scheduled)
    state.addAttribute(
        "schedule", train::ScheduleKindAttr::get(
                        builder.getContext(),
                        schedule.kind == zero::frontend::Schedule::Kind::linear
                            ? train::ScheduleKind::linear
                        : decays ? train::ScheduleKind::cosine
                                 : train::ScheduleKind::constant));
  i64("warmup", scheduled && schedule.warmup != 0, schedule.warmup);
  i64("total", scheduled && decays, schedule.total);
  f64("min_lr", scheduled && decays && schedule.minLr != 0.0, schedule.minLr);
  f64("clip_norm", spec.clipNorm > 0.0, spec.clipNorm);
  f64("loss_scale", spec.lossScale > 0.0, spec.lossScale);
  i64("growth_interval", spec.lossScale > 0.0, spec.growthInterval);
  builder.create(state);
  return name;
}

/// One recorded op, built generically from its name and attributes: the
/// node already carries the result types its verifier expects.
Operation *emitOp(const Node &node, ArrayRef<Value> values, OpBuilder &builder,
                  Location loc) {
  if (node.opName == "arith.constant") {
    auto type =
        cast<RankedTensorType>(tensorType(node.shape, node.dtype, builder));
    Type element = type.getElementType();
    TypedAttr value =
        isa<FloatType>(element)
            ? TypedAttr(builder.getFloatAttr(element, node.splatValue))
            : TypedAttr(builder.getIntegerAttr(
                  element, static_cast<int64_t>(node.splatValue)));
    return builder.create<arith::ConstantOp>(
        loc, type, DenseElementsAttr::get(type, value));
  }
  OperationState state(loc, node.opName);
  for (int operand : node.operands)
    state.addOperands(values[operand]);
  state.addTypes(tensorType(node.shape, node.dtype, builder));
  for (const auto &[shape, dtype] : node.extraResults)
    state.addTypes(tensorType(shape, dtype, builder));
  for (const std::string &name : node.unitAttrs)
    state.addAttribute(name, builder.getUnitAttr());
  for (const auto &[name, value] : node.f64Attrs)
    state.addAttribute(name, builder.getF64FloatAttr(value));
  for (const auto &[name, array] : node.arrayAttrs)
    state.addAttribute(name, builder.getDenseI64ArrayAttr(array));
  for (const auto &[name, value] : node.i64Attrs)
    state.addAttribute(name, builder.getI64IntegerAttr(value));
  return builder.create(state);
}

} // namespace

OwningOpRef<ModuleOp>
zero::frontend::detail::emitModule(const GraphState &graph,
                                   MLIRContext &context, bool withOutputs) {
  OpBuilder builder(&context);
  Location loc = NameLoc::get(builder.getStringAttr(graph.name));
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  // The step is written for one device; zero-pipeline's `ranks` makes it
  // data parallel, as for the examples.
  (*module)->setAttr(
      dist::DistDialect::getPlacementAttrName(),
      dist::PlacementAttr::get(&context, dist::DeviceKind::cpu, {1}));
  builder.setInsertionPointToEnd(module->getBody());
  // Each parameter group is a copy of the optimizer with its own weight
  // decay and learning rate; its members name it.
  OptimizerSpec spec = graph.config.optimizerSpec();
  std::map<std::string, FlatSymbolRefAttr> optimizerOf;
  std::vector<std::pair<std::string, OptimizerSpec>> groupSpecs;
  for (const GraphConfig::ParameterGroup &group :
       graph.config.parameterGroups()) {
    // An empty group (the no-decay recipe on a model without biases) has
    // nothing to update, as in PyTorch, which accepts one: no optimizer.
    if (group.parameters.empty())
      continue;
    OptimizerSpec groupSpec = spec;
    groupSpec.weightDecay = group.weightDecay.value_or(spec.weightDecay);
    groupSpec.lr = spec.lr * group.lrScale;
    groupSpec.schedule.minLr = spec.schedule.minLr * group.lrScale;
    // The loss scaler is the step's, declared once with the default
    // optimizer.
    groupSpec.lossScale = 0.0;
    groupSpecs.push_back({group.name, groupSpec});
    std::string symbol = optimizerName(spec, group.name);
    for (const std::string &member : group.parameters)
      optimizerOf[member] = FlatSymbolRefAttr::get(&context, symbol);
  }
  for (const ParameterDecl &param : graph.parameters) {
    auto group = optimizerOf.find(param.name);
    builder.create<train::ParamOp>(
        NameLoc::get(builder.getStringAttr(param.name)), param.name,
        param.trainable ? train::Role::param : train::Role::frozen,
        FlatSymbolRefAttr(), tensorType(param.shape, param.dtype, builder),
        train::StorageLayoutKind::replicated, /*shard_axes=*/nullptr,
        /*local_type=*/TypeAttr(), initAttr(param.init, &context),
        group == optimizerOf.end() ? FlatSymbolRefAttr() : group->second,
        /*split_dim=*/IntegerAttr(), /*split_axis=*/IntegerAttr());
  }
  emitOptimizer(spec, builder, loc);
  for (const auto &[name, groupSpec] : groupSpecs)
    emitOptimizer(groupSpec, builder, loc, name);

  SmallVector<Type> argumentTypes;
  for (const InputDecl &input : graph.inputs) {
    const Node &node = graph.nodes[input.node];
    argumentTypes.push_back(tensorType(node.shape, node.dtype, builder));
  }
  SmallVector<Type> resultTypes{
      RankedTensorType::get({}, builder.getF32Type())};
  std::vector<int> outputs;
  if (withOutputs)
    for (const auto &output : graph.outputs) {
      const Node &node = graph.nodes[output.second];
      outputs.push_back(output.second);
      resultTypes.push_back(tensorType(node.shape, node.dtype, builder));
    }
  auto step = builder.create<func::FuncOp>(
      loc, "step", builder.getFunctionType(argumentTypes, resultTypes));
  step->setAttr("train.step", builder.getUnitAttr());
  Block *body = step.addEntryBlock();
  builder.setInsertionPointToEnd(body);

  SmallVector<Value> values(graph.nodes.size());
  for (const InputDecl &input : graph.inputs)
    values[input.node] = body->getArgument(graph.nodes[input.node].index);
  // Every parameter is loaded up front, in declaration order.
  for (const ParameterDecl &param : graph.parameters)
    values[param.node] = builder.create<train::LoadOp>(
        NameLoc::get(builder.getStringAttr(param.name)),
        tensorType(param.shape, param.dtype, builder), param.name);
  // Only what the loss depends on: an op nothing reads (a value the user
  // built and dropped, the pieces of a pattern an importer replaced) would
  // still run every step.
  std::vector<bool> needed(graph.nodes.size(), false);
  needed[graph.lossNode] = true;
  for (int output : outputs)
    needed[output] = true;
  for (size_t index = graph.nodes.size(); index-- > 0;)
    if (needed[index])
      for (int operand : graph.nodes[index].operands)
        needed[operand] = true;
  for (auto [index, node] : llvm::enumerate(graph.nodes))
    if (node.kind == Node::Kind::op && needed[index])
      values[index] = emitOp(node, values, builder, loc)->getResult(0);

  Value loss = values[graph.lossNode];
  builder.create<train::MinimizeOp>(loc, loss);
  SmallVector<Value> results{loss};
  for (int output : outputs)
    results.push_back(values[output]);
  builder.create<func::ReturnOp>(loc, results);
  return module;
}
