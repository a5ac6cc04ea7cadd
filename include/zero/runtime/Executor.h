//===- Executor.h - Replays a zrt program, step after step -----*- C++ -*-===//
//
// Loads a lowered `zrt.program` once: allocates its persistent buffers and
// its arena, binds every kernel, resolves every view to an address, and
// turns the step into a flat instruction list. A step is then a replay of
// that list, with no parsing, allocation or per-parameter host work. Where
// the buffers live and how the list runs is the backend's business
// (ExecutionBackend.h): host memory and CPU kernels by default, device
// memory, CUDA streams and NCCL with the CUDA backends.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_EXECUTOR_H
#define ZERO_RUNTIME_EXECUTOR_H

#include "zero/runtime/Communicator.h"
#include "zero/runtime/CpuKernels.h"
#include "zero/runtime/ExecutionBackend.h"
#include "zero/runtime/Initializer.h"

#include "absl/status/statusor.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zero::zrt {
class ProgramOp;
} // namespace zero::zrt

namespace zero::rt {

enum class BufferRole {
  param,
  frozen,
  master,
  slot,
  grad_accum,
  input,
  output,
  /// The dynamic loss scaler's scale and good-step count.
  scaler
};
const char *bufferRoleName(BufferRole role);

/// A persistent buffer of the program and what the runtime needs to fill it.
struct BufferDecl {
  std::string name;
  BufferRole role = BufferRole::param;
  TensorSpec spec;
  int64_t bytes = 0;
  /// State: the logical tensor, how it is laid out over ranks, and where its
  /// initial value comes from (`initName` is the owner for master copies).
  std::vector<int64_t> logicalShape;
  std::string layout = "replicated";
  /// A sharded buffer's placement axes, the major one first: its ranks hold
  /// the shards, numbered by their coordinates along these axes in mixed
  /// radix; the ranks of the other axes hold copies (hybrid sharding on a
  /// mesh). {1, 0} on an R x S mesh is full 2-D sharding.
  std::vector<int> shardAxes = {0};
  /// Tensor parallelism: the logical dimension split exactly over the ranks
  /// of placement axis `splitAxis` (-1 for both: not split). Each rank
  /// holds the slice at its coordinate along that axis.
  int splitDim = -1;
  int splitAxis = -1;
  std::optional<InitSpec> init;
  std::string initName;
  /// Inputs: split along dimension 0 over the ranks of `batchAxes` (each
  /// rank holds the slice of the global batch at its index along them; the
  /// ranks of the other axes, tensor-parallel ones, hold the same slice),
  /// and the number of classes or rows an integer input indexes (0 when
  /// unknown).
  std::vector<int> batchAxes;
  bool batchSplit() const { return !batchAxes.empty(); }
  int64_t indexBound = 0;
  /// "embedding" or "labels" for integer inputs whose use the compiler saw.
  std::string indexOf;
  /// Labels a loss ignores (its ignore_index), accepted besides the bound.
  std::optional<int64_t> indexIgnored;
  /// Not batch data: the f32 count of the labels in input `labelCountOf`
  /// other than `labelCountIgnored` over every micro-batch of the step this
  /// rank holds, divided by the micro-batches; runTrainingStep fills it
  /// (accumulation with a loss that ignores labels).
  std::string labelCountOf;
  int64_t labelCountIgnored = 0;
  /// The box of that input's local shape the count covers, [begin, end).
  std::vector<int64_t> labelCountBegin, labelCountEnd;
  /// In host memory (zero-offload), not in the backend's device memory.
  bool host = false;
};

/// Bytes one rank holds, by category, and the arena's figures.
struct MemoryFigures {
  int64_t parameters = 0; // param + frozen
  int64_t masters = 0;
  int64_t slots = 0;
  int64_t gradAccumulators = 0;
  int64_t inputsOutputs = 0;
  int64_t arenaBytes = 0;
  /// Highest arena byte any instruction touches.
  int64_t arenaHighWater = 0;
  /// Of the persistent bytes, those in host memory; and the host arena.
  int64_t hostPersistent = 0;
  int64_t hostArenaBytes = 0;
  int64_t hostArenaHighWater = 0;
  /// Bytes the loaded program copies between the pools per optimizer step.
  int64_t hostLinkBytesPerStep = 0;
  /// The most gathered parameter bytes (all-gather outputs in the arena and
  /// the copies out of them) alive at once, in program order: what
  /// zero-report's `peak gathered` predicts, padding rows included.
  int64_t gatheredPeak = 0;
  int64_t persistent() const {
    return parameters + masters + slots + gradAccumulators + inputsOutputs;
  }
  /// The two pools: device memory (all of it without offload) and host.
  int64_t deviceBytes() const {
    return persistent() - hostPersistent + arenaBytes;
  }
  int64_t deviceHighWater() const {
    return persistent() - hostPersistent + arenaHighWater;
  }
  int64_t hostBytes() const { return hostPersistent + hostArenaBytes; }
};

/// What the instructions really wrote into one arena, measured while the
/// program ran, not derived from its operands (Executor::startWriteCheck).
struct ArenaWrites {
  /// One past the highest byte written; 0 when none was.
  int64_t highWater = 0;
  /// Bytes written at least once.
  int64_t bytes = 0;
  /// Bytes of the guard band past the arena's end written at least once:
  /// an instruction that wrote beyond its view and the arena.
  int64_t guardBytes = 0;
};

/// What a checkpoint records about the program it was taken from.
struct ProgramInfo {
  std::string name;
  /// The ZeRO stage the program was compiled for; -1 when it does not say.
  int stage = -1;
  /// Each distinct update (train.sgd, train.adam, ..., and the loss
  /// scaler's) with its hyper-parameters, as text, sorted: resuming under
  /// another optimizer would silently change the training.
  std::vector<std::string> optimizer;
};

class Executor {
public:
  /// Builds the executor for `program`, whose placement must have as many
  /// ranks as `comm`, on `backend` (the CPU backend over `comm` when null).
  /// `comm` is the job's host communicator: the CPU backend runs the
  /// program's collectives on it, and state and batch I/O use it on every
  /// backend. Fails on anything the runtime cannot run, naming the
  /// instruction.
  static absl::StatusOr<std::unique_ptr<Executor>>
  create(zrt::ProgramOp program, Communicator &comm,
         std::unique_ptr<ExecutionBackend> backend = nullptr);
  ~Executor();

  /// Checks that `program` is placed on `jobRanks` ranks, as create() does;
  /// also for a launcher that checks before any rank starts.
  static absl::Status checkPlacement(zrt::ProgramOp program, int64_t jobRanks);

  /// Micro-batches per optimizer step: 1, or K for a program that
  /// accumulates gradients (a micro-step body run K times, then an apply
  /// body).
  int64_t accumulateSteps() const { return microSteps; }
  /// Runs one whole step of a program without accumulation; `step` is
  /// 1-based (Adam's bias correction reads it).
  absl::Status runStep(int64_t step);
  /// With accumulation: the forward and backward of the micro-batch in the
  /// input buffers, its gradients added into the accumulators (the whole
  /// step without accumulation). `step` is the optimizer step.
  absl::Status runMicroStep(int64_t step, int64_t microStep = 0);
  /// With accumulation: the update from the accumulated gradients, which it
  /// clears; nothing without.
  absl::Status runApply(int64_t step);

  /// Multiplies every update's learning rate from the next step on
  /// (KernelContext::learningRateFactor): a rate changed between steps, as
  /// PyTorch's `param_group["lr"] = ...`. 1 (the default) runs the compiled
  /// rates exactly. Checkpoints record it and loadCheckpoint restores it.
  void setLearningRateFactor(double factor) { lrFactor = factor; }
  /// The seed train.dropout draws its masks from (KernelContext::seed):
  /// the trainer's, set with the initial state (initializeState).
  void setRandomSeed(uint64_t seed) { randomSeed = seed; }
  uint64_t getRandomSeed() const { return randomSeed; }
  double learningRateFactor() const { return lrFactor; }

  /// Marks the training state as not usable: a checkpoint load failed
  /// after it had begun to overwrite it (a checksum found wrong once its
  /// file's bytes were in place, on this rank or another). Steps and saves
  /// then refuse, saying so, until a load succeeds (OkStatus clears it).
  void setStateLost(absl::Status why) { stateLost = std::move(why); }
  /// OkStatus, or why the state may not be trained on or saved.
  absl::Status stateUsable() const;

  const std::vector<BufferDecl> &buffers() const { return decls; }
  /// The buffer in the backend's memory: host memory on the CPU backend,
  /// device memory on the CUDA backends. From the host, go through
  /// readBuffer and writeBuffer, which work on every backend.
  void *bufferData(size_t index) { return storage[index]; }
  /// Copies buffer `index` (decls[index].bytes) to or from host memory.
  absl::Status readBuffer(size_t index, void *host) const;
  absl::Status writeBuffer(size_t index, const void *host);
  /// The value of element 0 of a float buffer, as a float (NaN if the
  /// buffer is not float or cannot be read): the loss, the loss scale.
  float readScalar(size_t index) const;
  /// Index of the buffer named `name`, or -1.
  int findBuffer(const std::string &name) const;
  const MemoryFigures &memory() const { return figures; }
  /// The checking mode of zero-run --check-memory (docs/runtime.md,
  /// "What is measured"): fills both arenas with kArenaCanary, so that
  /// measureArenaWrites() can later tell every byte an instruction wrote.
  /// Call it before the first step. A device arena (CUDA) is filled and,
  /// by measureArenaWrites(), scanned through the backend's blocking copies.
  absl::Status startWriteCheck();
  /// The device (first) and host (second) arenas' written bytes since
  /// startWriteCheck(). A byte written with the canary's own value is not
  /// seen; repeated, 0xA5 reads as -2.9e-16 in f32 and bf16, -0.022 in f16
  /// and -1515870811 in i32, values a step rarely writes exactly, and a
  /// miss can only make the figures smaller, never larger.
  absl::StatusOr<std::pair<ArenaWrites, ArenaWrites>>
  measureArenaWrites() const;
  static constexpr uint8_t kArenaCanary = 0xA5;
  /// Every arena is allocated this much longer than the program's header
  /// says: the guard band startWriteCheck() fills with the canary too, so
  /// that a write past the arena's end is seen rather than landing in
  /// whatever the allocator put after it.
  static constexpr int64_t kArenaGuardBytes = 4096;
  const ProgramInfo &program() const { return info; }
  size_t numInstructions() const;
  /// The job's host communicator.
  Communicator &communicator() { return comm; }
  /// The group of placement axis `axis`: the job's communicator for a
  /// one-axis placement, else the ranks whose grid coordinates differ only
  /// along `axis` (row-major ranks: the last axis varies fastest). Its
  /// traffic() is that axis's.
  Communicator &axisCommunicator(int axis) {
    return axisCommunicators.empty() ? comm : *axisCommunicators[axis];
  }
  /// The placement grid the program runs on ([N] for one axis).
  const std::vector<int64_t> &grid() const { return placementGrid; }
  /// Which shard of sharded buffer `decl` rank `rank` holds: its
  /// coordinates along the buffer's shard axes, the major one first (the
  /// rank itself on one axis).
  int shardIndex(const BufferDecl &decl, int rank) const;
  /// How many shards sharded buffer `decl` is cut into: the product of its
  /// shard axes' extents.
  int shardCount(const BufferDecl &decl) const;
  /// Whether rank `rank` holds the first copy of sharded buffer `decl`'s
  /// shard: every coordinate but the shard axes' is 0. One copy of each
  /// shard is what a checkpoint writes.
  bool holdsFirstCopy(const BufferDecl &decl, int rank) const;
  /// Rank `rank`'s index along `axes` in mixed radix, the first axis major
  /// (its coordinate along a single axis; 0 for none).
  int64_t indexAlong(const std::vector<int> &axes, int rank) const;
  /// The product of the extents of `axes` (1 for none).
  int64_t extentAlong(const std::vector<int> &axes) const;
  ExecutionBackend &backend() { return *executionBackend; }
  /// The loaded step bodies (the plain step, or micro-step and apply).
  const std::vector<StepBody> &stepBodies() const { return bodies; }
  /// The program's stream names by index; 0 is the compute stream.
  const std::vector<std::string> &streamNames() const { return streams; }

private:
  struct Loader;
  Executor(Communicator &comm, std::unique_ptr<ExecutionBackend> backend);

  Communicator &comm;
  /// Placements of several axes: one communicator per axis, split from
  /// `comm`. Declared before the backend, which uses them until it is gone.
  std::vector<std::unique_ptr<Communicator>> axisCommunicators;
  std::unique_ptr<ExecutionBackend> executionBackend;
  double lrFactor = 1.0;
  uint64_t randomSeed = 0;
  /// The axes the step's batch is split over: every axis but a
  /// tensor-parallel one.
  std::vector<int> stepBatchAxes;
  /// This rank's index along stepBatchAxes (KernelContext::batchRank).
  int batchRank = 0;
  absl::Status stateLost = absl::OkStatus();
  std::vector<int64_t> placementGrid;
  std::vector<BufferDecl> decls;
  /// Owned: released through the backend by the destructor.
  std::vector<void *> storage;
  void *arena = nullptr;
  void *hostArena = nullptr;
  /// The plain step, or the micro-step and the apply step.
  std::vector<StepBody> bodies;
  std::vector<std::string> streams;
  int64_t microSteps = 1;
  MemoryFigures figures;
  ProgramInfo info;
  bool writeCheck = false;
};

} // namespace zero::rt

#endif // ZERO_RUNTIME_EXECUTOR_H
