//===- TrainingState.h - Initial state, batches, final state ----*- C++ -*-===//
//
// What the runtime puts into a program's persistent buffers: the initial
// state (drawn from a seed, or read from a .safetensors file; each rank keeps
// its shard of the logical tensor, so the model is the same whatever N and
// the stage), every step's batch (synthetic from the seed, or rows of
// .npy/.npz arrays; each rank takes its slice of the global batch), and the
// consolidated state at the end.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_TRAININGSTATE_H
#define ZERO_RUNTIME_TRAININGSTATE_H

#include "zero/runtime/Executor.h"
#include "zero/runtime/TensorFile.h"

#include <memory>
#include <string>
#include <vector>

namespace zero::rt {

/// Fills every state buffer: from `initFile` when not empty (tensors named
/// after the parameters, at their logical shapes; master copies and slots
/// missing from the file start as their parameter and as their
/// initializer), otherwise from each buffer's initializer and `seed`.
/// Every rank starts from rank 0's file tensors, as PyTorch's DDP and
/// FSDP's sync_module_states make every rank start from rank 0's module:
/// the names of those that differed on some rank go to `takenFromRankZero`
/// where given (a tensor missing on a rank, or of another type or shape,
/// is refused). Collective when a file is given on several ranks.
absl::Status
initializeState(Executor &executor, uint64_t seed, const std::string &initFile,
                std::vector<std::string> *takenFromRankZero = nullptr);

/// Replaces the parameters with `state` (logical tensors by name, as
/// gatherState gives them; PyTorch's `load_state_dict`): every parameter
/// and frozen parameter must be there; master copies and the loss scaler
/// are taken when present, a master otherwise from its parameter; optimizer
/// slots and accumulators are left as they are. A name the program does not
/// hold, a missing parameter, a wrong shape or kind is refused before
/// anything is written. No collective: every rank takes its shard. `what`
/// names the state in errors.
absl::Status loadState(Executor &executor, const TensorMap &state,
                       const std::string &what);

/// The logical (unsharded, unpadded) value of every parameter, frozen
/// parameter, master copy and loss-scaler tensor, gathered from the ranks'
/// shards. Every rank must call it (it runs all-gathers); every rank gets the
/// whole map.
absl::StatusOr<TensorMap> gatherState(Executor &executor);

/// Fills the program's input buffers for each step.
///
/// An optimizer step's global batch is the same rows whatever the number of
/// ranks N and of micro-batches K: micro-batch k (0-based) holds its rows
/// [k N B, (k + 1) N B), and rank r the B rows from k N B + r B. So K
/// micro-batches of B rows per rank train on the rows one batch of K B per
/// rank does.
class BatchSource {
public:
  virtual ~BatchSource() = default;
  /// Micro-batch `micro` (< the program's accumulate steps) of optimizer
  /// step `step` (1-based).
  virtual absl::Status fill(int64_t step, int64_t micro) = 0;
  /// Samples (rows along dimension 0) of the global batch per optimizer
  /// step, all micro-batches together.
  virtual int64_t globalBatch() const = 0;
  /// How many global batches the source holds before it repeats (1 for
  /// synthetic data, drawn afresh per step).
  virtual int64_t batchesHeld() const { return 1; }
  virtual std::string describe() const = 0;
};

/// Rows of one optimizer step's global batch: every rank's rows of every
/// micro-batch (what a BatchSource's globalBatch() is for this program).
int64_t globalBatchRows(Executor &executor);

/// Runs optimizer step `step` (1-based): for each of the program's
/// micro-batches, fills it from `batches` and runs the micro-step, then runs
/// the apply step. Returns the step's loss: the mean of the micro-batches'
/// `output0` (NaN when the program has no float output0).
absl::StatusOr<float> runTrainingStep(Executor &executor, BatchSource &batches,
                                      int64_t step);

/// Synthetic batches that a model can learn: uniform features with labels
/// from a fixed random linear teacher (classifiers), or random tokens whose
/// label is a fixed function of the token (language models), drawn from
/// `seed` the same way whatever the number of ranks.
absl::StatusOr<std::unique_ptr<BatchSource>>
createSyntheticBatches(Executor &executor, uint64_t seed);

/// Batches read from `path` (.npz with arrays named input0, input1, ...; or
/// .npy for a program with one input): each array holds one or more global
/// batches along dimension 0, used in turn.
absl::StatusOr<std::unique_ptr<BatchSource>>
createFileBatches(Executor &executor, const std::string &path,
                  bool checkFinite = true);

/// Batches from arrays in memory, named input0, input1, ... and shaped as
/// for createFileBatches; `what` names them in errors. With `checkFinite`,
/// a NaN or infinity in a float array is refused, naming it and where: it
/// would make every weight it reaches NaN while the loss can still look
/// finite (a relu of NaN is NaN, but a masked or ignored position's is not
/// in the loss). With `oneBatch`, the arrays must hold exactly one global
/// batch (Trainer.step's), and a wrong row count is said so.
absl::StatusOr<std::unique_ptr<BatchSource>>
createArrayBatches(Executor &executor, TensorMap arrays,
                   const std::string &what, bool checkFinite = true,
                   bool oneBatch = false);

} // namespace zero::rt

#endif // ZERO_RUNTIME_TRAININGSTATE_H
