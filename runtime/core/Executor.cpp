//===- Executor.cpp - Replays a zrt program, step after step
//---------------===//

#include "zero/runtime/Executor.h"

#include "ProgramLoader.h"

#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/train/TrainDialect.h"
#include "zero/dialects/zrt/ZrtOps.h"
#include "zero/support/Status.h"

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

static ProgramInfo getProgramInfo(zrt::ProgramOp program) {
  ProgramInfo info;
  info.name = program.getSymName().str();
  if (auto stage = program->getAttrOfType<mlir::IntegerAttr>(
          zrt::ZrtDialect::getZeroStageAttrName()))
    info.stage = static_cast<int>(stage.getInt());
  // The clipping too: a checkpoint resumed under another max_norm would
  // train on differently scaled gradients without a word.
  static constexpr llvm::StringLiteral kUpdates[] = {
      "train.sgd",   "train.sgd_momentum",      "train.adam",
      "train.adamw", "train.update_loss_scale", "train.scale_by_norm"};
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
  return static_cast<int>(indexAlong(decl.shardAxes, rank));
}

int Executor::shardCount(const BufferDecl &decl) const {
  return static_cast<int>(extentAlong(decl.shardAxes));
}

int64_t Executor::indexAlong(const std::vector<int> &axes, int rank) const {
  if (placementGrid.size() < 2)
    return axes.empty() ? 0 : rank;
  std::vector<int64_t> coordinates = coordinatesOf(placementGrid, rank);
  int64_t index = 0;
  for (int axis : axes)
    index = index * placementGrid[axis] + coordinates[axis];
  return index;
}

int64_t Executor::extentAlong(const std::vector<int> &axes) const {
  int64_t extent = 1;
  for (int axis : axes)
    extent *= placementGrid[axis];
  return extent;
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
  ZERO_RETURN_IF_ERROR(checkPlacement(program, comm.size()));
  if (!backend)
    backend = createCpuBackend(comm);
  std::unique_ptr<Executor> executor(new Executor(comm, std::move(backend)));
  llvm::ArrayRef<int64_t> grid = program.getPlacement().getGrid();
  executor->placementGrid.assign(grid.begin(), grid.end());
  if (grid.size() > 1) {
    // Host-staged collectives run on the axes' MPI communicators, as the
    // CPU backend's do; NCCL would need one communicator per axis.
    if (!executor->executionBackend->runsCollectivesPerAxis())
      return absl::UnimplementedError(
          absl::StrCat("program @", program.getSymName().str(),
                       " is placed on a ", absl::StrJoin(grid, "x"),
                       " grid; placements of several axes run on "
                       "the cpu and cuda-host-staged backends, not on ",
                       executor->executionBackend->name(),
                       " (one NCCL communicator per axis is not built yet)"));
    ZERO_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Communicator>> axes,
                          splitPlacementAxes(comm, grid));
    executor->axisCommunicators = std::move(axes);
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
      ZERO_RETURN_IF_ERROR(loader.declareBuffer(buffer));
    } else if (auto stepOp = mlir::dyn_cast<zrt::StepOp>(op)) {
      steps.push_back(stepOp);
    }
  }
  // The batch's axes, from the inputs that split it; every axis when none
  // does (all ranks then read the same rows).
  for (const BufferDecl &decl : executor->decls)
    if (decl.role == BufferRole::input && decl.batchSplit()) {
      executor->stepBatchAxes = decl.batchAxes;
      break;
    }
  if (executor->stepBatchAxes.empty())
    for (size_t axis = 0; axis < executor->placementGrid.size(); ++axis)
      executor->stepBatchAxes.push_back(static_cast<int>(axis));
  executor->batchRank = static_cast<int>(
      executor->indexAlong(executor->stepBatchAxes, comm.rank()));
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
  ZERO_RETURN_IF_ERROR(executor->executionBackend->prepare(
      executor->bodies, std::max<int>(1, loader.streams.size()),
      loader.events.size()));
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
  ZERO_RETURN_IF_ERROR(stateUsable());
  KernelContext context{step, comm.rank(), comm.size()};
  context.batchRank = batchRank;
  context.learningRateFactor = lrFactor;
  context.seed = randomSeed;
  context.microStep = microStep;
  return executionBackend->runBody(0, context);
}

absl::Status Executor::runApply(int64_t step) {
  ZERO_RETURN_IF_ERROR(stateUsable());
  if (bodies.size() < 2)
    return absl::OkStatus();
  KernelContext context{step, comm.rank(), comm.size()};
  context.batchRank = batchRank;
  context.learningRateFactor = lrFactor;
  context.seed = randomSeed;
  return executionBackend->runBody(1, context);
}
