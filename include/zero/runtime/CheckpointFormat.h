//===- CheckpointFormat.h - Checkpoints on disk -----------------*- C++ -*-===//
//
// A checkpoint is a directory `<root>/step-<8 digits>/` holding one
// `.safetensors` file per rank with the logical elements that rank kept, and
// a `manifest.json` written last: the step, the plan it was taken under, the
// model's signature, where every logical tensor's elements are, and every
// file's size and CRC-32. `<root>/latest` names the newest checkpoint. The
// layout is independent of padding and of the ranks' buffers, so a
// checkpoint loads under any number of ranks, stage and layout
// (docs/checkpoints.md).
//
// This part knows files only: writing the directory atomically, reading and
// checking what is there. Moving state between a running program's buffers
// and a checkpoint is Checkpoint.h's.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CHECKPOINTFORMAT_H
#define ZERO_RUNTIME_CHECKPOINTFORMAT_H

#include "zero/runtime/DType.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace zero::rt {

/// The manifest's `format_version` this build writes and the only one it
/// reads: a newer checkpoint is refused, not misread.
constexpr int kCheckpointFormatVersion = 1;

/// A run of a logical tensor's flattened elements [begin, end), stored in
/// `file` from byte `offset` on, in the tensor's dtype.
struct CheckpointChunk {
  std::string file;
  int64_t begin = 0;
  int64_t end = 0;
  uint64_t offset = 0;
};

/// One logical tensor of the training state.
struct CheckpointTensor {
  std::string name;
  /// "param", "frozen", "master", "slot" or "scaler".
  std::string role;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  /// How the saving plan stored it: "replicated", "flat" or "dim0".
  std::string layout = "replicated";
  /// Elements of padding the saving plan added over all ranks (none on
  /// disk).
  int64_t padding = 0;
  std::vector<CheckpointChunk> chunks;

  int64_t numElements() const;
};

struct CheckpointFile {
  std::string name;
  int rank = 0;
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
};

struct CheckpointManifest {
  int formatVersion = kCheckpointFormatVersion;
  /// The last optimizer step the state includes.
  int64_t step = 0;
  /// The plan: ranks, ZeRO stage (-1 unknown), micro-batches per step.
  int ranks = 1;
  int stage = -1;
  int64_t accumulateSteps = 1;
  std::string program;
  /// Where the data continues: the seed of synthetic data and the global
  /// batch of one optimizer step (the next step is step + 1).
  uint64_t seed = 0;
  int64_t globalBatch = 0;
  /// Each update kernel of the program with its hyper-parameters, sorted.
  std::vector<std::string> optimizer;
  /// Executor::learningRateFactor when the state was saved: a rate changed
  /// between steps continues after a resume.
  double learningRateFactor = 1.0;
  /// Sorted by name.
  std::vector<CheckpointTensor> tensors;
  std::vector<CheckpointFile> files;

  const CheckpointTensor *findTensor(const std::string &name) const;
  /// Bytes of all the rank files.
  uint64_t fileBytes() const;
};

/// "2 files, 1.17 MiB in 0.012 s (98.1 MiB/s)": what a save or a load
/// moved, for the tools' progress lines.
std::string describeCheckpointIO(const CheckpointManifest &manifest,
                                 double seconds);

/// "step-00000042".
std::string checkpointDirName(int64_t step);
/// "rank-00003-of-00008.safetensors".
std::string checkpointFileName(int rank, int ranks);

/// `path` itself when it holds a manifest.json; otherwise the newest
/// complete `step-*` in it (the one `latest` names, unless a crash came
/// between publishing a checkpoint and updating `latest`). Anything else is
/// an error saying what was looked for.
absl::StatusOr<std::string> resolveCheckpoint(const std::string &path);

/// Reads and checks `<dir>/manifest.json` (every field, the version, that
/// chunks lie in listed files and cover each tensor exactly once).
absl::StatusOr<CheckpointManifest>
readCheckpointManifest(const std::string &dir);

/// The CRC-32 (zlib's) and size of a whole file, read in bounded pieces.
absl::StatusOr<std::pair<uint32_t, uint64_t>>
fileChecksum(const std::string &path);

/// Checks every file of the checkpoint: present, of the listed size, and
/// (with `checksums`) of the listed CRC-32; then that each file's
/// safetensors header places every chunk where the manifest says. `files`
/// restricts the checksum pass to those file indices (all when empty).
absl::Status verifyCheckpointFiles(const std::string &dir,
                                   const CheckpointManifest &manifest,
                                   bool checksums,
                                   const std::vector<size_t> &only = {});

/// Copies elements [begin, end) of `tensor` into `out` (dtypeBytes each)
/// from the chunks that hold them, reading only those bytes. Every element
/// of the range must be in some chunk.
absl::Status readCheckpointRange(const std::string &dir,
                                 const CheckpointTensor &tensor, int64_t begin,
                                 int64_t end, void *out);

/// Where a loading rank wants elements [begin, end) of `tensor`: at `out`,
/// dtypeBytes each.
struct CheckpointRead {
  const CheckpointTensor *tensor = nullptr;
  int64_t begin = 0;
  int64_t end = 0;
  void *out = nullptr;
};

/// Copies every range of `reads` and checks the CRC-32 of every file whose
/// index is in `checked`, reading each file once: a checked file whole, any
/// other from its first to its last wanted byte, sequentially, bypassing
/// the page cache where the file system allows it. Each range must lie in
/// the chunks of its tensor, which verifyCheckpointFiles (without
/// checksums) has matched against the files' headers. A checksum that
/// differs is a DataLoss naming the file, found after its bytes were
/// copied: the destinations then hold part of a corrupt checkpoint.
absl::Status readCheckpoint(const std::string &dir,
                            const CheckpointManifest &manifest,
                            const std::vector<CheckpointRead> &reads,
                            const std::vector<size_t> &checked);

//===----------------------------------------------------------------------===//
// Writing (the commit protocol of docs/checkpoints.md)
//===----------------------------------------------------------------------===//

/// `<root>/.step-<8 digits>.tmp`: where a save of `step` is written before
/// it is published.
std::string temporaryCheckpointDir(const std::string &root, int64_t step);

/// Makes `<root>/.step-<8 digits>.tmp/`, the directory the ranks write
/// into, removing what a crashed save left there; fails when the
/// checkpoint itself already exists (it is never overwritten).
absl::StatusOr<std::string> prepareCheckpointDirectory(const std::string &root,
                                                       int64_t step);

/// Writes manifest.json into the temporary directory, renames it to
/// `<root>/step-<8 digits>`, points `latest` at it, and removes all but the
/// newest `keep` complete checkpoints (0: keep every one). Every write is
/// synced before the rename that publishes it, so a crash at any moment
/// leaves the previous checkpoint (and `latest`, or a `latest` the loader
/// can see past) intact.
absl::Status commitCheckpoint(const std::string &root,
                              const std::string &temporary,
                              const CheckpointManifest &manifest, int keep);

/// Test hook: when the environment variable ZERO_CHECKPOINT_CRASH is
/// `<point>` (or `<point>:<rank>` with `rank` equal), the process kills
/// itself with SIGKILL there, to check that a save interrupted at that
/// point leaves the previous checkpoint loadable.
void checkpointCrashPoint(const char *point, int rank);

} // namespace zero::rt

#endif // ZERO_RUNTIME_CHECKPOINTFORMAT_H
