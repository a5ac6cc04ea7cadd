//===- ProgramLoader.cpp - A zrt program into the executor's form ---------===//
//
// Each zrt op becomes what the executor replays: buffers and their
// initializers, view addresses, and instructions (kernels bound by the
// backend, collectives, copies, stream waits and records).
//
//===----------------------------------------------------------------------===//

#include "ProgramLoader.h"

#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/train/TrainDialect.h"
#include "zero/support/Status.h"

#include "absl/strings/str_join.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstdlib>
#include <cstring>
#include <set>

using namespace zero;
using namespace zero::rt;

static absl::StatusOr<DType> getDType(mlir::Type type) {
  if (type.isF32())
    return DType::f32;
  if (type.isBF16())
    return DType::bf16;
  if (type.isF16())
    return DType::f16;
  if (type.isSignlessInteger(32))
    return DType::i32;
  if (type.isSignlessInteger(64))
    return DType::i64;
  if (type.isSignlessInteger(8))
    return DType::i8;
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return absl::InvalidArgumentError(
      absl::StrCat("element type ", text, " has no runtime support"));
}

static absl::StatusOr<TensorSpec> getSpec(mlir::Type type) {
  auto memref = mlir::cast<mlir::MemRefType>(type);
  ZERO_ASSIGN_OR_RETURN(DType dtype, getDType(memref.getElementType()));
  return TensorSpec{dtype, std::vector<int64_t>(memref.getShape().begin(),
                                                memref.getShape().end())};
}

static std::optional<InitSpec> getInitSpec(train::InitAttr init) {
  if (!init)
    return std::nullopt;
  switch (init.getKind()) {
  case train::InitKind::zeros:
    return InitSpec::zeros();
  case train::InitKind::ones:
    return InitSpec::ones();
  case train::InitKind::constant:
    return InitSpec::constant(init.getFirst());
  case train::InitKind::normal:
    return InitSpec::normal(init.getFirst(), init.getSecond());
  case train::InitKind::uniform:
    return InitSpec::uniform(init.getFirst(), init.getSecond());
  }
  return std::nullopt;
}

static ReduceKind getReduceKind(dist::ReduceKind kind) {
  switch (kind) {
  case dist::ReduceKind::sum:
    return ReduceKind::sum;
  case dist::ReduceKind::mean:
    return ReduceKind::mean;
  case dist::ReduceKind::max:
    return ReduceKind::max;
  }
  return ReduceKind::sum;
}

absl::Status Executor::Loader::declareBuffer(zrt::BufferOp buffer) {
  absl::StatusOr<TensorSpec> spec = getSpec(buffer.getMemRefType());
  if (!spec.ok())
    return error(buffer, spec.status().message());
  BufferDecl decl;
  decl.name = buffer.getSymName().str();
  decl.role = static_cast<BufferRole>(buffer.getRole());
  decl.spec = *spec;
  decl.bytes = spec->numElements() * dtypeBytes(spec->dtype);
  decl.logicalShape = spec->shape;
  if (auto logical = buffer->getAttrOfType<mlir::TypeAttr>(
          zrt::ZrtDialect::getLogicalTypeAttrName())) {
    auto shape = mlir::cast<mlir::ShapedType>(logical.getValue()).getShape();
    decl.logicalShape.assign(shape.begin(), shape.end());
  }
  if (auto layout = buffer->getAttrOfType<mlir::StringAttr>(
          zrt::ZrtDialect::getLayoutAttrName()))
    decl.layout = layout.str();
  if (auto axes = buffer->getAttrOfType<mlir::DenseI64ArrayAttr>(
          zrt::ZrtDialect::getShardAxesAttrName())) {
    decl.shardAxes.clear();
    for (int64_t axis : axes.asArrayRef()) {
      if (axis < 0 ||
          axis >= static_cast<int64_t>(executor.placementGrid.size()) ||
          llvm::is_contained(decl.shardAxes, static_cast<int>(axis)))
        return error(buffer,
                     absl::StrCat("is sharded over axes [",
                                  absl::StrJoin(axes.asArrayRef(), ", "),
                                  "] of a placement with ",
                                  executor.placementGrid.size(), " axes"));
      decl.shardAxes.push_back(static_cast<int>(axis));
    }
    if (decl.shardAxes.empty())
      return error(buffer, "is sharded over no axis");
  }
  decl.init = getInitSpec(buffer->getAttrOfType<train::InitAttr>(
      zrt::ZrtDialect::getInitAttrName()));
  decl.initName = decl.name;
  if (auto name = buffer->getAttrOfType<mlir::StringAttr>(
          zrt::ZrtDialect::getInitNameAttrName()))
    decl.initName = name.str();
  if (auto split = buffer->getAttrOfType<mlir::DenseI64ArrayAttr>(
          zrt::ZrtDialect::getSplitAttrName())) {
    llvm::ArrayRef<int64_t> entry = split.asArrayRef();
    int64_t axes = static_cast<int64_t>(executor.placementGrid.size());
    if (entry.size() != 2 || entry[0] < 0 ||
        entry[0] >= static_cast<int64_t>(decl.logicalShape.size()) ||
        entry[1] < 0 || entry[1] >= axes ||
        decl.logicalShape[entry[0]] % executor.placementGrid[entry[1]] != 0)
      return error(buffer, absl::StrCat("has a tensor-parallel split [",
                                        absl::StrJoin(entry, ", "),
                                        "] that does not fit its logical "
                                        "shape on the placement"));
    if (llvm::is_contained(decl.shardAxes, static_cast<int>(entry[1])) &&
        decl.layout != "replicated")
      return error(buffer, "is split and sharded over the same axis");
    decl.splitDim = static_cast<int>(entry[0]);
    decl.splitAxis = static_cast<int>(entry[1]);
  }
  if (auto sbp = buffer->getAttrOfType<dist::SbpAttr>(
          zrt::ZrtDialect::getSbpAttrName())) {
    // The batch is split along dimension 0 over the axes whose entry is
    // S(0); the others (a tensor-parallel axis) hold the same rows.
    for (auto [axis, entry] : llvm::enumerate(sbp.getDims()))
      if (entry.isSplit() && entry.dim == 0)
        decl.batchAxes.push_back(static_cast<int>(axis));
  }
  if (auto bound = buffer->getAttrOfType<mlir::IntegerAttr>(
          zrt::ZrtDialect::getIndexBoundAttrName()))
    decl.indexBound = bound.getInt();
  if (auto use = buffer->getAttrOfType<mlir::StringAttr>(
          zrt::ZrtDialect::getIndexOfAttrName()))
    decl.indexOf = use.str();
  if (auto ignored = buffer->getAttrOfType<mlir::IntegerAttr>(
          zrt::ZrtDialect::getIndexIgnoredAttrName()))
    decl.indexIgnored = ignored.getInt();
  if (auto labels = buffer->getAttrOfType<mlir::StringAttr>(
          zrt::ZrtDialect::getLabelCountOfAttrName())) {
    auto ignored = buffer->getAttrOfType<mlir::IntegerAttr>(
        zrt::ZrtDialect::getLabelCountIgnoredAttrName());
    auto begin = buffer->getAttrOfType<mlir::DenseI64ArrayAttr>(
        zrt::ZrtDialect::getLabelCountBeginAttrName());
    auto end = buffer->getAttrOfType<mlir::DenseI64ArrayAttr>(
        zrt::ZrtDialect::getLabelCountEndAttrName());
    if (!ignored || !begin || !end || begin.size() != end.size() ||
        decl.role != BufferRole::input || decl.spec.dtype != DType::f32 ||
        !decl.spec.shape.empty())
      return error(buffer, "counts labels, and must be an f32 scalar input "
                           "with zrt.label_count_ignored, _begin and _end");
    // The labels come first among the step's inputs: declared by now.
    int source = executor.findBuffer(labels.str());
    const BufferDecl *counted = source < 0 ? nullptr : &executor.decls[source];
    bool inside = counted && counted->role == BufferRole::input &&
                  begin.asArrayRef().size() == counted->spec.shape.size();
    for (size_t d = 0; inside && d < begin.asArrayRef().size(); ++d)
      inside = 0 <= begin[d] && begin[d] <= end[d] &&
               end[d] <= counted->spec.shape[d];
    if (!inside)
      return error(buffer, absl::StrCat("counts the labels of '", labels.str(),
                                        "', which is no input declared "
                                        "before it with that box in its "
                                        "shape"));
    decl.labelCountOf = labels.str();
    decl.labelCountIgnored = ignored.getInt();
    decl.labelCountBegin.assign(begin.asArrayRef().begin(),
                                begin.asArrayRef().end());
    decl.labelCountEnd.assign(end.asArrayRef().begin(), end.asArrayRef().end());
  }

  decl.host = buffer.getSpace() == zrt::MemorySpace::host;
  absl::StatusOr<void *> memory =
      decl.host ? executor.executionBackend->allocateHost(decl.bytes)
                : executor.executionBackend->allocate(decl.bytes);
  if (!memory.ok())
    return absl::Status(
        memory.status().code(),
        absl::StrCat(decl.name, ": ", memory.status().message()));
  executor.storage.push_back(*memory);
  MemoryFigures &figures = executor.figures;
  if (decl.host)
    figures.hostPersistent += decl.bytes;
  switch (decl.role) {
  case BufferRole::param:
  case BufferRole::frozen:
    figures.parameters += decl.bytes;
    break;
  case BufferRole::master:
    figures.masters += decl.bytes;
    break;
  case BufferRole::slot:
  // The scaler's two scalars are optimizer state, as in zero-report.
  case BufferRole::scaler:
    figures.slots += decl.bytes;
    break;
  case BufferRole::grad_accum:
    figures.gradAccumulators += decl.bytes;
    break;
  case BufferRole::input:
  case BufferRole::output:
    figures.inputsOutputs += decl.bytes;
    break;
  }
  executor.decls.push_back(std::move(decl));
  return absl::OkStatus();
}

void Executor::Loader::noteArenaUse(mlir::Value memref) {
  char *address = addresses.lookup(memref);
  int64_t bytes =
      mlir::cast<mlir::MemRefType>(memref.getType()).getNumElements();
  bytes *= dtypeBytes(*getDType(
      mlir::cast<mlir::MemRefType>(memref.getType()).getElementType()));
  MemoryFigures &figures = executor.figures;
  for (auto [base, size, highWater] :
       {std::make_tuple(static_cast<char *>(executor.arena), figures.arenaBytes,
                        &figures.arenaHighWater),
        std::make_tuple(static_cast<char *>(executor.hostArena),
                        figures.hostArenaBytes, &figures.hostArenaHighWater)}) {
    // Half-open: an allocation that starts where the arena ends (cudaMalloc
    // places them back to back) is not in it.
    if (!base || address < base || address >= base + size)
      continue;
    *highWater = std::max(*highWater, (address - base) + bytes);
    return;
  }
}

std::vector<GatheredBytesMeter::Range>
Executor::Loader::inArena(mlir::ValueRange memrefs) {
  std::vector<GatheredBytesMeter::Range> ranges;
  auto *arena = static_cast<const char *>(executor.arena);
  for (mlir::Value memref : memrefs) {
    const char *address = addresses.lookup(memref);
    auto type = mlir::cast<mlir::MemRefType>(memref.getType());
    absl::StatusOr<DType> dtype = getDType(type.getElementType());
    if (!arena || !dtype.ok() || address < arena ||
        address >= arena + executor.figures.arenaBytes)
      continue;
    ranges.push_back({address, type.getNumElements() * dtypeBytes(*dtype)});
  }
  return ranges;
}

absl::Status Executor::Loader::resolve(mlir::Operation *op) {
  if (auto ref = mlir::dyn_cast<zrt::BufferRefOp>(op)) {
    int index = executor.findBuffer(ref.getBuffer().str());
    if (index < 0)
      return error(op, "refers to an undeclared buffer");
    addresses[ref] = static_cast<char *>(executor.storage[index]);
    return absl::OkStatus();
  }
  if (auto view = mlir::dyn_cast<zrt::ArenaViewOp>(op)) {
    bool host = view.getSpace() == zrt::MemorySpace::host;
    int64_t arenaBytes =
        host ? executor.figures.hostArenaBytes : executor.figures.arenaBytes;
    if (view.getOffset() + view.getSizeInBytes() >
        static_cast<uint64_t>(arenaBytes))
      return error(op, host ? "lies outside the host arena"
                            : "lies outside the arena");
    addresses[view] =
        static_cast<char *>(host ? executor.hostArena : executor.arena) +
        static_cast<int64_t>(view.getOffset());
    return absl::OkStatus();
  }
  auto view = mlir::cast<zrt::ViewOp>(op);
  absl::StatusOr<DType> dtype = getDType(view.getType().getElementType());
  if (!dtype.ok())
    return error(op, dtype.status().message());
  addresses[view] = addresses.lookup(view.getSource()) +
                    static_cast<int64_t>(view.getOffset()) * dtypeBytes(*dtype);
  return absl::OkStatus();
}

absl::Status Executor::Loader::addCollective(mlir::Operation *op,
                                             StepInstruction::Kind kind,
                                             mlir::Value input,
                                             mlir::Value output,
                                             llvm::StringRef stream) {
  StepInstruction instruction;
  instruction.kind = kind;
  instruction.label = op->getName().getStringRef().str();
  instruction.ins = {addresses.lookup(input)};
  instruction.outs = {addresses.lookup(output)};
  absl::StatusOr<DType> dtype =
      getDType(mlir::cast<mlir::MemRefType>(input.getType()).getElementType());
  if (!dtype.ok())
    return error(op, dtype.status().message());
  instruction.dtype = *dtype;
  int64_t inputCount =
      mlir::cast<mlir::MemRefType>(input.getType()).getNumElements();
  int64_t outputCount =
      mlir::cast<mlir::MemRefType>(output.getType()).getNumElements();
  instruction.count =
      kind == StepInstruction::Kind::reduceScatter ? outputCount : inputCount;
  instruction.stream = getStream(stream);
  if (auto axis = op->getAttrOfType<mlir::IntegerAttr>("axis")) {
    int64_t grid = static_cast<int64_t>(executor.placementGrid.size());
    if (axis.getInt() >= grid)
      return error(op, absl::StrCat("runs over axis ", axis.getInt(),
                                    " of a placement with ", grid,
                                    grid == 1 ? " axis" : " axes"));
    instruction.axis = static_cast<int>(axis.getInt());
    if (!executor.axisCommunicators.empty())
      instruction.communicator =
          executor.axisCommunicators[instruction.axis].get();
  }
  if (kind == StepInstruction::Kind::allToAll)
    instruction.count = inputCount / instruction.groupSize(executor.comm);
  noteArenaUse(input);
  noteArenaUse(output);
  gatheredBytes.addInstruction(kind == StepInstruction::Kind::allGather
                                   ? GatheredBytesMeter::Kind::allGather
                                   : GatheredBytesMeter::Kind::other,
                               inArena(input), inArena(output));
  body->push_back(std::move(instruction));
  return absl::OkStatus();
}

absl::Status Executor::Loader::addInstruction(mlir::Operation *op) {
  using Kind = StepInstruction::Kind;
  if (auto launch = mlir::dyn_cast<zrt::LaunchOp>(op)) {
    StepInstruction instruction;
    instruction.stream = getStream(launch.getStream());
    instruction.label = launch.getKernel().str();
    std::vector<TensorSpec> inSpecs, outSpecs;
    for (mlir::Value in : launch.getIns()) {
      absl::StatusOr<TensorSpec> spec = getSpec(in.getType());
      if (!spec.ok())
        return error(op, spec.status().message());
      inSpecs.push_back(*spec);
      instruction.ins.push_back(addresses.lookup(in));
      noteArenaUse(in);
    }
    for (mlir::Value out : launch.getOuts()) {
      absl::StatusOr<TensorSpec> spec = getSpec(out.getType());
      if (!spec.ok())
        return error(op, spec.status().message());
      outSpecs.push_back(*spec);
      instruction.outs.push_back(addresses.lookup(out));
      noteArenaUse(out);
    }
    auto stream = symbols.lookupNearestSymbolFrom<zrt::StreamOp>(
        launch, launch.getStreamAttr());
    bool onHost = stream && stream.getSpace() == zrt::MemorySpace::host;
    ExecutionBackend &backend = *executor.executionBackend;
    // Converted here, by the program's MLIR: the backend may be the CUDA
    // module, whose MLIR cannot read these attributes (KernelParams.h).
    KernelParams params(launch.getParams().value_or(mlir::DictionaryAttr()));
    absl::StatusOr<KernelFn> kernel =
        onHost ? backend.bindHostKernel(launch.getKernel().str(), params,
                                        inSpecs, outSpecs, instruction.stream)
               : backend.bindKernel(launch.getKernel().str(), params, inSpecs,
                                    outSpecs, instruction.stream);
    if (!kernel.ok())
      return error(op, kernel.status().message());
    instruction.kernel = std::move(*kernel);
    gatheredBytes.addInstruction(GatheredBytesMeter::Kind::other,
                                 inArena(launch.getIns()),
                                 inArena(launch.getOuts()));
    body->push_back(std::move(instruction));
    return absl::OkStatus();
  }
  if (auto copy = mlir::dyn_cast<zrt::CopyOp>(op)) {
    StepInstruction instruction;
    instruction.kind = Kind::copy;
    instruction.stream = getStream(copy.getStream());
    instruction.label = "zrt.copy";
    instruction.ins = {addresses.lookup(copy.getSource())};
    instruction.outs = {addresses.lookup(copy.getTarget())};
    absl::StatusOr<TensorSpec> spec = getSpec(copy.getSource().getType());
    if (!spec.ok())
      return error(op, spec.status().message());
    instruction.bytes = spec->numElements() * dtypeBytes(spec->dtype);
    noteArenaUse(copy.getSource());
    noteArenaUse(copy.getTarget());
    if (zrt::getMemorySpace(copy.getSource(), symbols) !=
        zrt::getMemorySpace(copy.getTarget(), symbols))
      crossingBytes += instruction.bytes;
    gatheredBytes.addInstruction(GatheredBytesMeter::Kind::copy,
                                 inArena(copy.getSource()),
                                 inArena(copy.getTarget()));
    body->push_back(std::move(instruction));
    return absl::OkStatus();
  }
  if (auto allReduce = mlir::dyn_cast<zrt::AllReduceOp>(op)) {
    absl::Status status =
        addCollective(op, Kind::allReduce, allReduce.getInput(),
                      allReduce.getOutput(), allReduce.getStream());
    // A failed addCollective appends nothing: back() would be another op.
    if (!status.ok())
      return status;
    body->back().reduce = getReduceKind(allReduce.getReduce());
    return status;
  }
  if (auto reduceScatter = mlir::dyn_cast<zrt::ReduceScatterOp>(op)) {
    absl::Status status =
        addCollective(op, Kind::reduceScatter, reduceScatter.getInput(),
                      reduceScatter.getOutput(), reduceScatter.getStream());
    if (!status.ok())
      return status;
    body->back().reduce = getReduceKind(reduceScatter.getReduce());
    return status;
  }
  if (auto allGather = mlir::dyn_cast<zrt::AllGatherOp>(op))
    return addCollective(op, Kind::allGather, allGather.getInput(),
                         allGather.getOutput(), allGather.getStream());
  if (auto broadcast = mlir::dyn_cast<zrt::BroadcastOp>(op)) {
    absl::Status status =
        addCollective(op, Kind::broadcast, broadcast.getInput(),
                      broadcast.getOutput(), broadcast.getStream());
    if (!status.ok())
      return status;
    body->back().root = static_cast<int>(broadcast.getRoot());
    return status;
  }
  if (auto allToAll = mlir::dyn_cast<zrt::AllToAllOp>(op))
    return addCollective(op, Kind::allToAll, allToAll.getInput(),
                         allToAll.getOutput(), allToAll.getStream());
  if (auto record = mlir::dyn_cast<zrt::RecordOp>(op)) {
    StepInstruction instruction;
    instruction.kind = Kind::record;
    instruction.label = "zrt.record";
    instruction.stream = getStream(record.getStream());
    instruction.event = getEvent(record.getEvent());
    recorded.insert(instruction.event);
    body->push_back(std::move(instruction));
    return absl::OkStatus();
  }
  if (auto wait = mlir::dyn_cast<zrt::WaitOp>(op)) {
    auto event = events.find(wait.getEvent());
    if (event == events.end() || !recorded.contains(event->second))
      return error(op, "waits for an event no earlier instruction recorded");
    StepInstruction instruction;
    instruction.kind = Kind::wait;
    instruction.label = "zrt.wait";
    instruction.stream = getStream(wait.getStream());
    instruction.event = event->second;
    body->push_back(std::move(instruction));
    return absl::OkStatus();
  }
  if (mlir::isa<zrt::YieldOp>(op))
    return absl::OkStatus();
  return error(op, "is not an instruction the runtime knows");
}
