//===- Executor.h - Replays a zrt program, step after step -----*- C++ -*-===//
//
// Loads a lowered `zrt.program` once: allocates its persistent buffers and
// its arena, binds every kernel, resolves every view to an address, and
// turns the step into a flat instruction list. A step is then a loop over
// that list, with no parsing, allocation or per-parameter host work.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_EXECUTOR_H
#define ZERO_RUNTIME_EXECUTOR_H

#include "zero/runtime/Communicator.h"
#include "zero/runtime/CpuKernels.h"
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
  std::optional<InitSpec> init;
  std::string initName;
  /// Inputs: split along dimension 0 over the ranks (each rank holds its
  /// slice of the global batch), and the number of classes or rows an
  /// integer input indexes (0 when unknown).
  bool batchSplit = false;
  int64_t indexBound = 0;
  /// "embedding" or "labels" for integer inputs whose use the compiler saw.
  std::string indexOf;
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
  int64_t persistent() const {
    return parameters + masters + slots + gradAccumulators + inputsOutputs;
  }
};

class Executor {
public:
  /// Builds the executor for `program`, whose placement must have as many
  /// ranks as `comm`. Fails on anything the runtime cannot run, naming the
  /// instruction.
  static absl::StatusOr<std::unique_ptr<Executor>>
  create(zrt::ProgramOp program, Communicator &comm);
  ~Executor();

  /// Runs one step; `step` is 1-based (Adam's bias correction reads it).
  absl::Status runStep(int64_t step);

  const std::vector<BufferDecl> &buffers() const { return decls; }
  void *bufferData(size_t index) { return storage[index].get(); }
  /// Index of the buffer named `name`, or -1.
  int findBuffer(const std::string &name) const;
  const MemoryFigures &memory() const { return figures; }
  size_t numInstructions() const;
  Communicator &communicator() { return comm; }

private:
  struct Instruction;
  struct Loader;
  explicit Executor(Communicator &comm);
  absl::Status runInstruction(const Instruction &instruction,
                              const KernelContext &context);

  Communicator &comm;
  std::vector<BufferDecl> decls;
  struct FreeDeleter {
    void operator()(void *pointer) const;
  };
  std::vector<std::unique_ptr<void, FreeDeleter>> storage;
  std::unique_ptr<void, FreeDeleter> arena;
  std::vector<Instruction> instructions;
  /// Per event: the communication ticket recorded last (or -1).
  std::vector<Communicator::Ticket> eventTickets;
  /// Collectives started and not yet waited for, oldest first.
  std::vector<Communicator::Ticket> inFlight;
  MemoryFigures figures;
};

} // namespace zero::rt

#endif // ZERO_RUNTIME_EXECUTOR_H
