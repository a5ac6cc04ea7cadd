//===- Executor.cpp - Replays a zrt program, step after step
//---------------===//

#include "zero/runtime/Executor.h"

#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/train/TrainDialect.h"
#include "zero/dialects/zrt/ZrtOps.h"

#include "absl/strings/str_cat.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstdlib>
#include <cstring>

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

struct Executor::Instruction {
  enum class Kind {
    launch,
    copy,
    allReduce,
    reduceScatter,
    allGather,
    broadcast,
    allToAll,
    recordComm,
    waitComm
  };
  Kind kind = Kind::launch;
  /// What the instruction is, for error messages ("train.matmul #12").
  std::string label;
  KernelFn kernel;
  std::vector<const void *> ins;
  std::vector<void *> outs;
  int64_t bytes = 0;
  /// Collectives: elements per rank (reduce-scatter output, all-gather
  /// input, all-to-all block) or in total (all-reduce, broadcast).
  int64_t count = 0;
  DType dtype = DType::f32;
  ReduceKind reduce = ReduceKind::sum;
  int root = 0;
  /// Collectives on the compute stream complete before the next instruction.
  bool synchronous = false;
  int event = -1;
};

void Executor::FreeDeleter::operator()(void *pointer) const {
  std::free(pointer);
}

Executor::Executor(Communicator &comm) : comm(comm) {}
Executor::~Executor() = default;

size_t Executor::numInstructions() const { return instructions.size(); }

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
  std::string computeStream = "compute";

  absl::Status declareBuffer(zrt::BufferOp buffer);
  absl::Status resolve(mlir::Operation *op);
  absl::Status addInstruction(mlir::Operation *op);
  absl::Status addCollective(mlir::Operation *op, Instruction::Kind kind,
                             mlir::Value input, mlir::Value output,
                             llvm::StringRef stream);
  void noteArenaUse(mlir::Value memref);

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

  // Aligned for vector loads; zeroed so padding reads as zero.
  int64_t size = std::max<int64_t>(64, (decl.bytes + 63) / 64 * 64);
  void *memory = std::aligned_alloc(64, size);
  if (!memory)
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", size, " bytes for ", decl.name));
  std::memset(memory, 0, size);
  executor.storage.emplace_back(memory);
  MemoryFigures &figures = executor.figures;
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
  char *base = static_cast<char *>(executor.arena.get());
  char *address = addresses.lookup(memref);
  int64_t offset = address - base;
  int64_t bytes =
      mlir::cast<mlir::MemRefType>(memref.getType()).getNumElements();
  bytes *= dtypeBytes(*getDType(
      mlir::cast<mlir::MemRefType>(memref.getType()).getElementType()));
  if (offset >= 0 && offset <= executor.figures.arenaBytes)
    executor.figures.arenaHighWater =
        std::max(executor.figures.arenaHighWater, offset + bytes);
}

absl::Status Executor::Loader::resolve(mlir::Operation *op) {
  if (auto ref = mlir::dyn_cast<zrt::BufferRefOp>(op)) {
    int index = executor.findBuffer(ref.getBuffer().str());
    if (index < 0)
      return error(op, "refers to an undeclared buffer");
    addresses[ref] = static_cast<char *>(executor.bufferData(index));
    return absl::OkStatus();
  }
  if (auto view = mlir::dyn_cast<zrt::ArenaViewOp>(op)) {
    if (view.getOffset() + view.getSizeInBytes() >
        static_cast<uint64_t>(executor.figures.arenaBytes))
      return error(op, "lies outside the arena");
    addresses[view] = static_cast<char *>(executor.arena.get()) +
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
                                             Instruction::Kind kind,
                                             mlir::Value input,
                                             mlir::Value output,
                                             llvm::StringRef stream) {
  Instruction instruction;
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
      kind == Instruction::Kind::reduceScatter ? outputCount : inputCount;
  if (kind == Instruction::Kind::allToAll)
    instruction.count = inputCount / executor.comm.size();
  instruction.synchronous = stream == computeStream;
  noteArenaUse(input);
  noteArenaUse(output);
  executor.instructions.push_back(std::move(instruction));
  return absl::OkStatus();
}

absl::Status Executor::Loader::addInstruction(mlir::Operation *op) {
  using Kind = Instruction::Kind;
  if (auto launch = mlir::dyn_cast<zrt::LaunchOp>(op)) {
    Instruction instruction;
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
    absl::StatusOr<KernelFn> kernel = bindCpuKernel(
        launch.getKernel().str(),
        launch.getParams().value_or(mlir::DictionaryAttr()), inSpecs, outSpecs);
    if (!kernel.ok())
      return error(op, kernel.status().message());
    instruction.kernel = std::move(*kernel);
    executor.instructions.push_back(std::move(instruction));
    return absl::OkStatus();
  }
  if (auto copy = mlir::dyn_cast<zrt::CopyOp>(op)) {
    Instruction instruction;
    instruction.kind = Kind::copy;
    instruction.label = "zrt.copy";
    instruction.ins = {addresses.lookup(copy.getSource())};
    instruction.outs = {addresses.lookup(copy.getTarget())};
    absl::StatusOr<TensorSpec> spec = getSpec(copy.getSource().getType());
    if (!spec.ok())
      return error(op, spec.status().message());
    instruction.bytes = spec->numElements() * dtypeBytes(spec->dtype);
    noteArenaUse(copy.getSource());
    noteArenaUse(copy.getTarget());
    executor.instructions.push_back(std::move(instruction));
    return absl::OkStatus();
  }
  if (auto allReduce = mlir::dyn_cast<zrt::AllReduceOp>(op)) {
    absl::Status status =
        addCollective(op, Kind::allReduce, allReduce.getInput(),
                      allReduce.getOutput(), allReduce.getStream());
    executor.instructions.back().reduce = getReduceKind(allReduce.getReduce());
    return status;
  }
  if (auto reduceScatter = mlir::dyn_cast<zrt::ReduceScatterOp>(op)) {
    absl::Status status =
        addCollective(op, Kind::reduceScatter, reduceScatter.getInput(),
                      reduceScatter.getOutput(), reduceScatter.getStream());
    executor.instructions.back().reduce =
        getReduceKind(reduceScatter.getReduce());
    return status;
  }
  if (auto allGather = mlir::dyn_cast<zrt::AllGatherOp>(op))
    return addCollective(op, Kind::allGather, allGather.getInput(),
                         allGather.getOutput(), allGather.getStream());
  if (auto broadcast = mlir::dyn_cast<zrt::BroadcastOp>(op)) {
    absl::Status status =
        addCollective(op, Kind::broadcast, broadcast.getInput(),
                      broadcast.getOutput(), broadcast.getStream());
    executor.instructions.back().root = static_cast<int>(broadcast.getRoot());
    return status;
  }
  if (auto allToAll = mlir::dyn_cast<zrt::AllToAllOp>(op))
    return addCollective(op, Kind::allToAll, allToAll.getInput(),
                         allToAll.getOutput(), allToAll.getStream());
  // Compute runs synchronously on the CPU, so only the communication side of
  // an event matters: which collective it marks, and who waits for it.
  if (auto record = mlir::dyn_cast<zrt::RecordOp>(op)) {
    if (record.getStream() == computeStream)
      return absl::OkStatus();
    Instruction instruction;
    instruction.kind = Kind::recordComm;
    instruction.label = "zrt.record";
    instruction.event =
        events.try_emplace(record.getEvent(), events.size()).first->second;
    executor.instructions.push_back(std::move(instruction));
    return absl::OkStatus();
  }
  if (auto wait = mlir::dyn_cast<zrt::WaitOp>(op)) {
    if (wait.getStream() != computeStream)
      return absl::OkStatus();
    auto event = events.find(wait.getEvent());
    if (event == events.end())
      return error(op, "waits for an event no communication work recorded");
    Instruction instruction;
    instruction.kind = Kind::waitComm;
    instruction.label = "zrt.wait";
    instruction.event = event->second;
    executor.instructions.push_back(std::move(instruction));
    return absl::OkStatus();
  }
  if (mlir::isa<zrt::YieldOp>(op))
    return absl::OkStatus();
  return error(op, "is not an instruction the runtime knows");
}

absl::StatusOr<std::unique_ptr<Executor>>
Executor::create(zrt::ProgramOp program, Communicator &comm) {
  auto placement = program.getPlacement();
  int64_t ranks = placement.getGrid().empty() ? 1 : placement.getGrid().front();
  if (placement.getGrid().size() != 1 || ranks != comm.size())
    return absl::InvalidArgumentError(absl::StrCat(
        "program @", program.getSymName().str(), " is placed on ", ranks,
        " ranks but the job has ", comm.size(),
        " (compile it for this many ranks, or launch with -n ", ranks, ")"));
  std::unique_ptr<Executor> executor(new Executor(comm));
  Loader loader(*executor, program);
  executor->figures.arenaBytes = program.getArenaBytes();
  void *arena = std::aligned_alloc(
      64, std::max<int64_t>(64, (executor->figures.arenaBytes + 63) / 64 * 64));
  if (!arena)
    return absl::ResourceExhaustedError("cannot allocate the arena");
  executor->arena.reset(arena);

  zrt::StepOp step;
  for (mlir::Operation &op : program.getBody().front()) {
    if (auto buffer = mlir::dyn_cast<zrt::BufferOp>(op)) {
      if (absl::Status status = loader.declareBuffer(buffer); !status.ok())
        return status;
    } else if (auto stepOp = mlir::dyn_cast<zrt::StepOp>(op)) {
      step = stepOp;
    }
  }
  // The compute stream is the one kernels run on.
  step.walk([&](zrt::LaunchOp launch) {
    loader.computeStream = launch.getStream().str();
    return mlir::WalkResult::interrupt();
  });
  for (mlir::Operation &op : step.getBody().front()) {
    absl::Status status =
        mlir::isa<zrt::BufferRefOp, zrt::ArenaViewOp, zrt::ViewOp>(op)
            ? loader.resolve(&op)
            : loader.addInstruction(&op);
    if (!status.ok())
      return status;
  }
  executor->eventTickets.assign(loader.events.size(), -1);
  return executor;
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

absl::Status Executor::runInstruction(const Instruction &instruction,
                                      const KernelContext &context) {
  using Kind = Instruction::Kind;
  auto start = [&]() -> absl::StatusOr<Communicator::Ticket> {
    const void *in = instruction.ins[0];
    void *out = instruction.outs[0];
    switch (instruction.kind) {
    case Kind::allReduce:
      return comm.startAllReduce(in, out, instruction.count, instruction.dtype,
                                 instruction.reduce);
    case Kind::reduceScatter:
      return comm.startReduceScatter(in, out, instruction.count,
                                     instruction.dtype, instruction.reduce);
    case Kind::allGather:
      return comm.startAllGather(in, out, instruction.count, instruction.dtype);
    case Kind::broadcast:
      return comm.startBroadcast(in, out, instruction.count, instruction.dtype,
                                 instruction.root);
    default:
      return comm.startAllToAll(in, out, instruction.count, instruction.dtype);
    }
  };
  switch (instruction.kind) {
  case Kind::launch:
    return instruction.kernel(instruction.ins, instruction.outs, context);
  case Kind::copy:
    std::memmove(instruction.outs[0], instruction.ins[0], instruction.bytes);
    return absl::OkStatus();
  case Kind::recordComm:
    eventTickets[instruction.event] = inFlight.empty() ? -1 : inFlight.back();
    return absl::OkStatus();
  case Kind::waitComm: {
    Communicator::Ticket ticket = eventTickets[instruction.event];
    while (!inFlight.empty() && inFlight.front() <= ticket) {
      Communicator::Ticket oldest = inFlight.front();
      inFlight.erase(inFlight.begin());
      if (absl::Status status = comm.wait(oldest); !status.ok())
        return status;
    }
    return absl::OkStatus();
  }
  default:
    break;
  }
  // One collective in flight at a time keeps the communication stream in
  // program order: a collective may read what the previous one wrote.
  for (Communicator::Ticket ticket : inFlight)
    if (absl::Status status = comm.wait(ticket); !status.ok())
      return status;
  inFlight.clear();
  absl::StatusOr<Communicator::Ticket> ticket = start();
  if (!ticket.ok())
    return ticket.status();
  if (instruction.synchronous)
    return comm.wait(*ticket);
  inFlight.push_back(*ticket);
  return absl::OkStatus();
}

absl::Status Executor::runStep(int64_t step) {
  KernelContext context{step, comm.rank(), comm.size()};
  for (size_t index = 0; index < instructions.size(); ++index) {
    absl::Status status = runInstruction(instructions[index], context);
    if (!status.ok())
      return absl::Status(status.code(),
                          absl::StrCat("step ", step, ", instruction ", index,
                                       " (", instructions[index].label,
                                       "): ", status.message()));
  }
  for (Communicator::Ticket ticket : inFlight)
    if (absl::Status status = comm.wait(ticket); !status.ok())
      return status;
  inFlight.clear();
  return absl::OkStatus();
}
