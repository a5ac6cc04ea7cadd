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

#include <atomic>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace zero::rt {

/// What a save records beside the state: where the data continues.
struct CheckpointContext {
  uint64_t seed = 0;
  /// Samples of one optimizer step, all micro-batches together.
  int64_t globalBatch = 0;
  /// The executor's learning-rate factor at the step boundary the state is
  /// from; AsyncCheckpointSave::start records it itself.
  double learningRateFactor = 1.0;
};

/// Writes the state after optimizer step `step` as `<root>/step-<8 digits>`
/// (docs/checkpoints.md): each rank its file, rank 0 the manifest and
/// `latest`, then all but the newest `keep` checkpoints are removed (0:
/// none). Returns the checkpoint's directory. Gradient accumulators are
/// not saved: at an optimizer-step boundary they are zero.
absl::StatusOr<std::string>
saveCheckpoint(Executor &executor, const std::string &root, int64_t step,
               const CheckpointContext &context, int keep);

/// A save that writes while the training goes on (docs/checkpoints.md,
/// "Asynchronous saves"). start() copies this rank's part of the state into
/// host memory at the step boundary and returns; a background thread
/// writes the rank file from that copy; finish() waits for it and commits
/// the checkpoint exactly as saveCheckpoint does (which is start and finish
/// with the write in the calling thread and no copy). Until finish()
/// returns, the checkpoint is not published: a crash, or dropping the
/// object unfinished, leaves the previous one as the newest.
///
/// Both calls are collective and belong to the thread that trains: the
/// background thread touches files only, never the communicator or the
/// executor, so the state may change under it.
class AsyncCheckpointSave {
public:
  /// `writeBytesPerSecond` paces the background write (0: as fast as the
  /// disk goes): a write at the disk's full speed slows the steps it
  /// overlaps where the I/O path shares the training's cores or memory
  /// bandwidth (docs/checkpoints.md, "Pacing the write").
  static absl::StatusOr<std::unique_ptr<AsyncCheckpointSave>>
  start(Executor &executor, const std::string &root, int64_t step,
        const CheckpointContext &context, int keep,
        uint64_t writeBytesPerSecond = 0);
  /// Joins the writer; the checkpoint stays unpublished.
  ~AsyncCheckpointSave();
  AsyncCheckpointSave(const AsyncCheckpointSave &) = delete;
  AsyncCheckpointSave &operator=(const AsyncCheckpointSave &) = delete;

  /// Returns the checkpoint's directory. Call once.
  absl::StatusOr<std::string> finish();

  int64_t step() const { return step_; }
  /// Seconds start() held the training: preparing the directory and
  /// copying the state.
  double startSeconds() const { return startSeconds_; }
  /// Seconds the rank file took to write (valid after finish()).
  double writeSeconds() const { return writeSeconds_; }
  /// Seconds finish() held the training: joining the writer and committing.
  double finishSeconds() const { return finishSeconds_; }
  /// Whether the background write is still going: the steps trained now
  /// share the machine with it.
  bool writing() const { return writing_.load(std::memory_order_acquire); }
  /// " in the background; the steps waited ... (copy ..., finish ...)":
  /// what the save cost the training, for the tools' "saved" lines.
  std::string describeWait() const;

private:
  AsyncCheckpointSave(Executor &executor, std::string root, int64_t step,
                      const CheckpointContext &context, int keep);
  /// finish()'s work: joins the writer, agrees and publishes.
  absl::StatusOr<std::string> commit();
  static absl::StatusOr<std::unique_ptr<AsyncCheckpointSave>>
  begin(Executor &executor, const std::string &root, int64_t step,
        const CheckpointContext &context, int keep, bool background,
        uint64_t writeBytesPerSecond);
  friend absl::StatusOr<std::string>
  saveCheckpoint(Executor &executor, const std::string &root, int64_t step,
                 const CheckpointContext &context, int keep);

  Executor &executor;
  std::string root;
  int64_t step_;
  CheckpointContext context;
  int keep;
  std::vector<int> writers;

public:
  struct FreeSnapshot {
    void operator()(uint8_t *data) const { std::free(data); }
  };
  /// Memory from posix_memalign, aligned for O_DIRECT.
  using Snapshot = std::unique_ptr<uint8_t[], FreeSnapshot>;

private:
  /// The state copied at start(), in the order the file holds it: memory
  /// kept across saves (see takeSnapshotMemory in Checkpoint.cpp).
  Snapshot snapshot;
  uint64_t snapshotBytes = 0;
  std::thread writer;
  std::atomic<bool> writing_{false};
  /// Written by the writer thread, read after joining it.
  absl::Status written;
  uint64_t fileBytes = 0;
  uint32_t fileCrc32 = 0;
  double startSeconds_ = 0;
  double writeSeconds_ = 0;
  double finishSeconds_ = 0;
  bool finished = false;
};

/// Loads `path` (a checkpoint, or a directory with `latest`) into the
/// executor's state. Checked before any buffer is written: the format
/// version, the model (every tensor's name, role, dtype and logical shape),
/// the optimizer and its hyper-parameters, and the files (sizes, headers).
/// The CRC-32s are computed as the files are read, in one pass straight
/// into the buffers (each rank checks every N-th file): a file that fails
/// its checksum has by then overwritten part of the state, on host
/// backends, so the executor is marked (Executor::setStateLost) and refuses
/// to train or save until a load succeeds. Device backends stage the
/// rank's state in host memory and copy it only once every rank's files
/// are checked. Returns the checkpoint's manifest; its `step` is the last
/// optimizer step the state includes.
///
/// A checkpoint whose updates differ from the program's only in their
/// schedule's length (a cosine schedule of 200 steps continued as one of
/// 400) is refused unless `options.scheduleTotal` is the program's length:
/// the user's word that the run continues under it.
struct LoadOptions {
  std::optional<int64_t> scheduleTotal;
};
absl::StatusOr<CheckpointManifest>
loadCheckpoint(Executor &executor, const std::string &path,
               const LoadOptions &options = {});

} // namespace zero::rt

#endif // ZERO_RUNTIME_CHECKPOINT_H
