//===- Checkpoint.h - Saving and resuming a running program -----*- C++ -*-===//
//
// Moves the training state between an executor's buffers and a checkpoint
// directory (CheckpointFormat.h). Both calls are collective: every rank of
// the job calls them with the same arguments, and a failure on any rank is
// a failure on every rank, so that no rank trains on while another stopped.
//
// A checkpoint holds the state by logical tensor, not by buffer, so loading
// maps each of this rank's buffers to the logical elements it holds under
// its own plan: any number of ranks, stage and layout loads any checkpoint
// of the same model, and each rank reads only the bytes it keeps.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CHECKPOINT_H
#define ZERO_RUNTIME_CHECKPOINT_H

#include "zero/runtime/CheckpointFormat.h"
#include "zero/runtime/Executor.h"

#include <string>

namespace zero::rt {

/// What a save records beside the state: where the data continues.
struct CheckpointContext {
  uint64_t seed = 0;
  /// Samples of one optimizer step, all micro-batches together.
  int64_t globalBatch = 0;
};

/// Writes the state after optimizer step `step` as `<root>/step-<8 digits>`
/// (docs/checkpoints.md): each rank its file, rank 0 the manifest and
/// `latest`, then all but the newest `keep` checkpoints are removed (0:
/// none). Returns the checkpoint's directory. Gradient accumulators are
/// not saved: at an optimizer-step boundary they are zero.
absl::StatusOr<std::string>
saveCheckpoint(Executor &executor, const std::string &root, int64_t step,
               const CheckpointContext &context, int keep);

/// Loads `path` (a checkpoint, or a directory with `latest`) into the
/// executor's state. Everything is checked before any buffer is written:
/// the format version, the model (every tensor's name, role, dtype and
/// logical shape), the optimizer and its hyper-parameters, and the files
/// (sizes, CRC-32s, headers). Returns the checkpoint's manifest; its `step`
/// is the last optimizer step the state includes.
absl::StatusOr<CheckpointManifest> loadCheckpoint(Executor &executor,
                                                  const std::string &path);

} // namespace zero::rt

#endif // ZERO_RUNTIME_CHECKPOINT_H
