//===- Executor.cpp - Replays a zrt program, step after step
//---------------===//

#include "zero/runtime/Executor.h"

#include "GatheredBytesMeter.h"

#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/train/TrainDialect.h"
#include "zero/dialects/zrt/ZrtOps.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstdlib>
#include <cstring>
#include <set>

using namespace zero;
using namespace zero::rt;

const char *zero::rt::bufferRoleName(BufferRole role) {
  switch (role) {
  case BufferRole::param:
    return "param";
  case BufferRole::frozen:
    return "frozen";
  case BufferRole::master:
    return "master";
  case BufferRole::slot:
    return "slot";
  case BufferRole::grad_accum:
    return "grad_accum";
  case BufferRole::input:
    return "input";
  case BufferRole::output:
    return "output";
  case BufferRole::scaler:
    return "scaler";
  }
  return "?";
}

Executor::Executor(Communicator &comm,
                   std::unique_ptr<ExecutionBackend> backend)
    : comm(comm), executionBackend(std::move(backend)) {}

Executor::~Executor() {
  for (auto [buffer, decl] : llvm::zip(storage, decls))
    decl.host ? executionBackend->releaseHost(buffer)
              : executionBackend->release(buffer);
  if (arena)
    executionBackend->release(arena);
  if (hostArena)
    executionBackend->releaseHost(hostArena);
}

absl::Status Executor::readBuffer(size_t index, void *host) const {
  if (decls[index].host) {
    std::memcpy(host, storage[index], decls[index].bytes);
    return absl::OkStatus();
  }
  return executionBackend->copyToHost(host, storage[index], decls[index].bytes);
}

absl::Status Executor::writeBuffer(size_t index, const void *host) {
  if (decls[index].host) {
    std::memcpy(storage[index], host, decls[index].bytes);
    return absl::OkStatus();
  }
  return executionBackend->copyFromHost(storage[index], host,
                                        decls[index].bytes);
}

float Executor::readScalar(size_t index) const {
  const BufferDecl &decl = decls[index];
  if (!isFloat(decl.spec.dtype) || decl.bytes == 0)
    return NAN;
  if (decl.host)
    return loadAsFloat(storage[index], decl.spec.dtype, 0);
  alignas(8) char value[8];
  if (!executionBackend
           ->copyToHost(value, storage[index], dtypeBytes(decl.spec.dtype))
           .ok())
    return NAN;
  return loadAsFloat(value, decl.spec.dtype, 0);
}

int Executor::findBuffer(const std::string &name) const {
  for (size_t index = 0; index < decls.size(); ++index)
    if (decls[index].name == name)
      return static_cast<int>(index);
  return -1;
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

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
  absl::StatusOr<DType> dtype = getDType(memref.getElementType());
  if (!dtype.ok())
    return dtype.status();
  return TensorSpec{*dtype, std::vector<int64_t>(memref.getShape().begin(),
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

/// Walks the program once: buffers, addresses of every memref value, and
/// the instruction list.
struct Executor::Loader {
  Executor &executor;
  zrt::ProgramOp program;
  Loader(Executor &executor, zrt::ProgramOp program)
      : executor(executor), program(program) {}

  llvm::DenseMap<mlir::Value, char *> addresses;
  llvm::StringMap<int> events;
  /// Stream 0 is the compute stream (the one kernels run on).
  llvm::StringMap<int> streams;
  /// Events some instruction of the current body recorded so far.
  llvm::DenseSet<int> recorded;
  /// The instruction list of the body being loaded.
  StepBody *body = nullptr;
  /// Bytes the body being loaded copies between device and host memory.
  int64_t crossingBytes = 0;
  mlir::SymbolTableCollection symbols;

  int getStream(llvm::StringRef name) {
    return streams.try_emplace(name, streams.size()).first->second;
  }
  int getEvent(llvm::StringRef name) {
    return events.try_emplace(name, events.size()).first->second;
  }

  absl::Status declareBuffer(zrt::BufferOp buffer);
  absl::Status resolve(mlir::Operation *op);
  absl::Status addInstruction(mlir::Operation *op);
  absl::Status addCollective(mlir::Operation *op, StepInstruction::Kind kind,
                             mlir::Value input, mlir::Value output,
                             llvm::StringRef stream);
  void noteArenaUse(mlir::Value memref);
  /// Gathered parameter bytes alive in the body being loaded.
  GatheredBytesMeter gatheredBytes;
  /// The device arena bytes `memref` covers, if it lies there.
  std::vector<GatheredBytesMeter::Range> inArena(mlir::ValueRange memrefs);

  absl::Status error(mlir::Operation *op, absl::string_view message) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << op->getName();
    if (auto location = mlir::dyn_cast<mlir::FileLineColLoc>(op->getLoc()))
      os << " at " << location.getFilename().getValue() << ":"
         << location.getLine() << ":" << location.getColumn();
    return absl::InvalidArgumentError(absl::StrCat(text, ": ", message));
  }
};

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
  if (auto logical =
          buffer->getAttrOfType<mlir::TypeAttr>("zrt.logical_type")) {
    auto shape = mlir::cast<mlir::ShapedType>(logical.getValue()).getShape();
    decl.logicalShape.assign(shape.begin(), shape.end());
  }
  if (auto layout = buffer->getAttrOfType<mlir::StringAttr>("zrt.layout"))
    decl.layout = layout.str();
  if (auto axes =
          buffer->getAttrOfType<mlir::DenseI64ArrayAttr>("zrt.shard_axes")) {
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
  decl.init = getInitSpec(buffer->getAttrOfType<train::InitAttr>("zrt.init"));
  decl.initName = decl.name;
  if (auto name = buffer->getAttrOfType<mlir::StringAttr>("zrt.init_name"))
    decl.initName = name.str();
  if (auto sbp = buffer->getAttr("zrt.sbp")) {
    std::string text;
    llvm::raw_string_ostream os(text);
    sbp.print(os);
    decl.batchSplit = text.find("S(0)") != std::string::npos;
  }
  if (auto bound = buffer->getAttrOfType<mlir::IntegerAttr>("zrt.index_bound"))
    decl.indexBound = bound.getInt();
  if (auto use = buffer->getAttrOfType<mlir::StringAttr>("zrt.index_of"))
    decl.indexOf = use.str();
  if (auto ignored =
          buffer->getAttrOfType<mlir::IntegerAttr>("zrt.index_ignored"))
    decl.indexIgnored = ignored.getInt();
  if (auto labels =
          buffer->getAttrOfType<mlir::StringAttr>("zrt.label_count_of")) {
    auto ignored =
        buffer->getAttrOfType<mlir::IntegerAttr>("zrt.label_count_ignored");
    auto begin =
        buffer->getAttrOfType<mlir::DenseI64ArrayAttr>("zrt.label_count_begin");
    auto end =
        buffer->getAttrOfType<mlir::DenseI64ArrayAttr>("zrt.label_count_end");
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

static ProgramInfo getProgramInfo(zrt::ProgramOp program) {
  ProgramInfo info;
  info.name = program.getSymName().str();
  if (auto stage = program->getAttrOfType<mlir::IntegerAttr>("zrt.zero_stage"))
    info.stage = static_cast<int>(stage.getInt());
  static constexpr llvm::StringLiteral kUpdates[] = {
      "train.sgd", "train.sgd_momentum", "train.adam", "train.adamw",
      "train.update_loss_scale"};
  std::set<std::string> updates;
  program.walk([&](zrt::LaunchOp launch) {
    if (!llvm::is_contained(kUpdates, launch.getKernel()))
      return;
    std::string text = launch.getKernel().str();
    if (auto params = launch.getParams()) {
      llvm::raw_string_ostream os(text);
      os << " " << *params;
    }
    updates.insert(std::move(text));
  });
  info.optimizer.assign(updates.begin(), updates.end());
  return info;
}

/// Rank `rank`'s coordinates on `grid`, row-major (the last axis fastest).
static std::vector<int64_t> coordinatesOf(const std::vector<int64_t> &grid,
                                          int rank) {
  std::vector<int64_t> coordinates(grid.size());
  int64_t rest = rank;
  for (size_t axis = grid.size(); axis-- > 0;) {
    coordinates[axis] = rest % grid[axis];
    rest /= grid[axis];
  }
  return coordinates;
}

int Executor::shardIndex(const BufferDecl &decl, int rank) const {
  if (placementGrid.size() < 2)
    return rank;
  std::vector<int64_t> coordinates = coordinatesOf(placementGrid, rank);
  int64_t index = 0;
  for (int axis : decl.shardAxes)
    index = index * placementGrid[axis] + coordinates[axis];
  return static_cast<int>(index);
}

int Executor::shardCount(const BufferDecl &decl) const {
  if (placementGrid.size() < 2)
    return comm.size();
  int64_t count = 1;
  for (int axis : decl.shardAxes)
    count *= placementGrid[axis];
  return static_cast<int>(count);
}

bool Executor::holdsFirstCopy(const BufferDecl &decl, int rank) const {
  std::vector<int64_t> coordinates = coordinatesOf(placementGrid, rank);
  for (size_t axis = 0; axis < coordinates.size(); ++axis)
    if (!llvm::is_contained(decl.shardAxes, static_cast<int>(axis)) &&
        coordinates[axis] != 0)
      return false;
  return true;
}

absl::Status Executor::checkPlacement(zrt::ProgramOp program,
                                      int64_t jobRanks) {
  auto placement = program.getPlacement();
  llvm::ArrayRef<int64_t> grid = placement.getGrid();
  int64_t ranks = 1;
  for (int64_t extent : grid)
    ranks *= extent;
  if (grid.empty() || ranks != jobRanks)
    return absl::InvalidArgumentError(absl::StrCat(
        "program @", program.getSymName().str(), " is placed on ", ranks,
        " ranks",
        grid.size() > 1
            ? absl::StrCat(" (a ", absl::StrJoin(grid, "x"), " grid)")
            : "",
        " but the job has ", jobRanks,
        " (compile it for this many ranks, or launch with -n ", ranks, ")"));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Executor>>
Executor::create(zrt::ProgramOp program, Communicator &comm,
                 std::unique_ptr<ExecutionBackend> backend) {
  if (absl::Status status = checkPlacement(program, comm.size()); !status.ok())
    return status;
  if (!backend)
    backend = createCpuBackend(comm);
  std::unique_ptr<Executor> executor(new Executor(comm, std::move(backend)));
  llvm::ArrayRef<int64_t> grid = program.getPlacement().getGrid();
  executor->placementGrid.assign(grid.begin(), grid.end());
  if (grid.size() > 1) {
    // Host-staged collectives run on the axes' MPI communicators, as the
    // CPU backend's do; NCCL would need one communicator per axis.
    std::string backendName = executor->executionBackend->name();
    if (backendName != "cpu" && backendName != "cuda-host-staged")
      return absl::UnimplementedError(absl::StrCat(
          "program @", program.getSymName().str(), " is placed on a ",
          absl::StrJoin(grid, "x"),
          " grid; placements of several axes run on "
          "the cpu and cuda-host-staged backends, not on ",
          backendName, " (one NCCL communicator per axis is not built yet)"));
    absl::StatusOr<std::vector<std::unique_ptr<Communicator>>> axes =
        splitPlacementAxes(comm, grid);
    if (!axes.ok())
      return axes.status();
    executor->axisCommunicators = *std::move(axes);
  }
  Loader loader(*executor, program);
  executor->figures.arenaBytes = program.getArenaBytes();
  absl::StatusOr<void *> arena = executor->executionBackend->allocate(
      executor->figures.arenaBytes + kArenaGuardBytes);
  if (!arena.ok())
    return absl::ResourceExhaustedError(
        absl::StrCat("the arena: ", arena.status().message()));
  executor->arena = *arena;
  executor->figures.hostArenaBytes =
      program.getArenaBytes(zrt::MemorySpace::host);
  if (executor->figures.hostArenaBytes > 0) {
    absl::StatusOr<void *> hostArena = executor->executionBackend->allocateHost(
        executor->figures.hostArenaBytes + kArenaGuardBytes);
    if (!hostArena.ok())
      return absl::Status(
          hostArena.status().code(),
          absl::StrCat("the host arena: ", hostArena.status().message()));
    executor->hostArena = *hostArena;
  }

  std::vector<zrt::StepOp> steps;
  for (mlir::Operation &op : program.getBody().front()) {
    if (auto buffer = mlir::dyn_cast<zrt::BufferOp>(op)) {
      if (absl::Status status = loader.declareBuffer(buffer); !status.ok())
        return status;
    } else if (auto stepOp = mlir::dyn_cast<zrt::StepOp>(op)) {
      steps.push_back(stepOp);
    }
  }
  executor->microSteps = program.getMicroSteps();
  executor->info = getProgramInfo(program);
  // The compute stream, the one kernels run on, is stream 0.
  for (zrt::StepOp step : steps) {
    auto found = step.walk([&](zrt::LaunchOp launch) {
      loader.getStream(launch.getStream());
      return mlir::WalkResult::interrupt();
    });
    if (found.wasInterrupted())
      break;
  }
  if (loader.streams.empty())
    loader.getStream("compute");
  // Each body is complete in itself: it waits only for events it recorded.
  executor->bodies.resize(steps.size());
  for (auto [step, body] : llvm::zip(steps, executor->bodies)) {
    loader.body = &body;
    loader.recorded.clear();
    loader.crossingBytes = 0;
    loader.gatheredBytes = GatheredBytesMeter();
    for (mlir::Operation &op : step.getBody().front()) {
      absl::Status status =
          mlir::isa<zrt::BufferRefOp, zrt::ArenaViewOp, zrt::ViewOp>(op)
              ? loader.resolve(&op)
              : loader.addInstruction(&op);
      if (!status.ok())
        return status;
    }
    executor->figures.gatheredPeak = std::max(executor->figures.gatheredPeak,
                                              loader.gatheredBytes.getPeak());
    executor->figures.hostLinkBytesPerStep +=
        loader.crossingBytes *
        (step.getKind() == zrt::StepKind::micro ? program.getMicroSteps() : 1);
  }
  executor->streams.resize(loader.streams.size());
  for (const auto &entry : loader.streams)
    executor->streams[entry.second] = entry.first().str();
  if (absl::Status status = executor->executionBackend->prepare(
          executor->bodies, std::max<int>(1, loader.streams.size()),
          loader.events.size());
      !status.ok())
    return status;
  return executor;
}

size_t Executor::numInstructions() const {
  size_t count = 0;
  for (const StepBody &body : bodies)
    count += body.size();
  return count;
}

absl::Status Executor::runStep(int64_t step) {
  if (microSteps > 1)
    return absl::FailedPreconditionError(absl::StrCat(
        "the program accumulates gradients over ", microSteps,
        " micro-batches: fill each and run runMicroStep, then runApply"));
  return runMicroStep(step);
}

absl::Status Executor::stateUsable() const {
  if (stateLost.ok())
    return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the training state is not usable: a checkpoint load failed after it "
      "had begun to overwrite it (",
      stateLost.message(),
      "); load a good checkpoint before training or "
      "saving"));
}

absl::Status Executor::runMicroStep(int64_t step, int64_t microStep) {
  if (absl::Status usable = stateUsable(); !usable.ok())
    return usable;
  KernelContext context{step, comm.rank(), comm.size()};
  context.learningRateFactor = lrFactor;
  context.seed = randomSeed;
  context.microStep = microStep;
  return executionBackend->runBody(0, context);
}

absl::Status Executor::runApply(int64_t step) {
  if (absl::Status usable = stateUsable(); !usable.ok())
    return usable;
  if (bodies.size() < 2)
    return absl::OkStatus();
  KernelContext context{step, comm.rank(), comm.size()};
  context.learningRateFactor = lrFactor;
  context.seed = randomSeed;
  return executionBackend->runBody(1, context);
}
