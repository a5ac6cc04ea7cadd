//===- Checkpoint.cpp - Saving and resuming a running program -------------===//

#include "zero/runtime/Checkpoint.h"

#include "zero/runtime/ExecutionBackend.h"
#include "zero/runtime/TensorFile.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

using namespace zero::rt;

namespace {

/// The buffers a checkpoint holds: everything that persists across steps
/// except the gradient accumulators, which are zero between optimizer
/// steps.
bool isSaved(BufferRole role) {
  return role == BufferRole::param || role == BufferRole::frozen ||
         role == BufferRole::master || role == BufferRole::slot ||
         role == BufferRole::scaler;
}

int64_t logicalElements(const BufferDecl &decl) {
  int64_t count = 1;
  for (int64_t extent : decl.logicalShape)
    count *= extent;
  return count;
}

/// The logical elements [begin, end) of the flattened tensor that `rank`'s
/// buffer holds (its padding excluded). Flat and dim-0 shards are both one
/// contiguous run starting at rank x the shard's size.
std::pair<int64_t, int64_t> heldRange(const BufferDecl &decl, int rank) {
  int64_t total = logicalElements(decl);
  if (decl.layout == "replicated")
    return {0, total};
  int64_t count = decl.spec.numElements();
  int64_t begin = std::min(total, static_cast<int64_t>(rank) * count);
  return {begin, std::min(total, begin + count)};
}

/// Which rank writes each saved buffer: a sharded buffer's every rank (its
/// own range), a replicated one the rank with the fewest bytes so far, so
/// that ZeRO-1/2 parameters do not all land on rank 0.
std::vector<int> replicatedWriters(const std::vector<BufferDecl> &decls,
                                   int ranks) {
  std::vector<int64_t> load(ranks, 0);
  for (const BufferDecl &decl : decls)
    if (isSaved(decl.role) && decl.layout != "replicated")
      for (int rank = 0; rank < ranks; ++rank) {
        auto [begin, end] = heldRange(decl, rank);
        load[rank] += (end - begin) * dtypeBytes(decl.spec.dtype);
      }
  std::vector<int> writer(decls.size(), -1);
  for (size_t index = 0; index < decls.size(); ++index) {
    const BufferDecl &decl = decls[index];
    if (!isSaved(decl.role) || decl.layout != "replicated")
      continue;
    int rank = static_cast<int>(std::min_element(load.begin(), load.end()) -
                                load.begin());
    writer[index] = rank;
    load[rank] += logicalElements(decl) * dtypeBytes(decl.spec.dtype);
  }
  return writer;
}

/// The ranges `rank` writes: (buffer index, begin, end).
std::vector<std::tuple<size_t, int64_t, int64_t>>
writtenRanges(const std::vector<BufferDecl> &decls,
              const std::vector<int> &writers, int rank) {
  std::vector<std::tuple<size_t, int64_t, int64_t>> ranges;
  for (size_t index = 0; index < decls.size(); ++index) {
    const BufferDecl &decl = decls[index];
    if (!isSaved(decl.role))
      continue;
    if (decl.layout == "replicated" && writers[index] != rank)
      continue;
    auto [begin, end] = heldRange(decl, rank);
    if (end > begin)
      ranges.emplace_back(index, begin, end);
  }
  return ranges;
}

/// Whether the executor's buffers are host memory (the CPU backend and its
/// kin), which a checkpoint can write from and read into directly; device
/// buffers go through a host staging buffer.
bool inHostMemory(Executor &executor) {
  return dynamic_cast<HostExecutionBackend *>(&executor.backend()) != nullptr;
}

/// Collective: OK when `local` is OK on every rank; otherwise every rank
/// returns the first failing rank's status, message included, so that
/// whichever rank reports it says what went wrong.
absl::Status agree(Communicator &comm, const absl::Status &local,
                   absl::string_view what) {
  // Code and message in a fixed-size record: 4 + 508 bytes.
  constexpr int64_t kWords = 128;
  std::vector<int32_t> mine(kWords, 0), all(kWords * comm.size());
  if (!local.ok()) {
    mine[0] = static_cast<int32_t>(local.code());
    std::string message(local.message().substr(0, (kWords - 1) * 4 - 1));
    std::memcpy(&mine[1], message.data(), message.size());
  }
  if (absl::Status status =
          comm.allGather(mine.data(), all.data(), kWords, DType::i32);
      !status.ok())
    return status;
  for (int rank = 0; rank < comm.size(); ++rank) {
    const int32_t *record = &all[rank * kWords];
    if (record[0] == 0)
      continue;
    if (rank == comm.rank())
      return local;
    const char *text = reinterpret_cast<const char *>(record + 1);
    return absl::Status(
        static_cast<absl::StatusCode>(record[0]),
        absl::StrCat(std::string(text, strnlen(text, (kWords - 1) * 4)),
                     " (rank ", rank, ", ", what, ")"));
  }
  return absl::OkStatus();
}

/// Keeps the collectives of saving and loading out of the training's
/// traffic figures, which are compared with the compile-time report.
class TrafficGuard {
public:
  explicit TrafficGuard(Communicator &comm)
      : comm(comm), saved(comm.traffic()) {}
  ~TrafficGuard() {
    comm.resetTraffic();
    comm.addTraffic(saved);
  }

private:
  Communicator &comm;
  std::map<std::string, TrafficStats> saved;
};

std::string describe(DType dtype, const std::vector<int64_t> &shape,
                     absl::string_view role) {
  return absl::StrCat(role, " ", dtypeName(dtype), "[",
                      absl::StrJoin(shape, ", "), "]");
}

/// This rank's file, streamed: its ranges of the state, each tensor's
/// logical shape and range in the metadata (so that the file explains
/// itself). One staging buffer, reused, holds a buffer at a time; the size
/// and CRC-32 come from the writer. Returns {bytes, crc32}.
absl::StatusOr<std::pair<uint64_t, uint32_t>>
writeRankFile(Executor &executor, const std::string &path,
              const std::vector<int> &writers, int64_t step) {
  const std::vector<BufferDecl> &decls = executor.buffers();
  Communicator &comm = executor.communicator();
  std::map<std::string, std::string> metadata{
      {"format", "zero-checkpoint"},
      {"format_version", std::to_string(kCheckpointFormatVersion)},
      {"step", std::to_string(step)},
      {"rank", std::to_string(comm.rank())},
      {"ranks", std::to_string(comm.size())}};
  auto ranges = writtenRanges(decls, writers, comm.rank());
  std::vector<SafetensorsEntry> entries;
  for (auto [index, begin, end] : ranges) {
    const BufferDecl &decl = decls[index];
    entries.push_back({decl.name, decl.spec.dtype, {end - begin}, 0, 0});
    metadata[decl.name] = absl::StrCat(
        "{\"logical_shape\":[", absl::StrJoin(decl.logicalShape, ","),
        "],\"begin\":", begin, ",\"end\":", end, "}");
  }
  // The writer lays tensors out in the order declared: the order written.
  absl::StatusOr<std::unique_ptr<SafetensorsWriter>> writer =
      SafetensorsWriter::create(path, entries, metadata);
  if (!writer.ok())
    return writer.status();
  std::vector<uint8_t> staging;
  bool host = inHostMemory(executor);
  for (auto [index, begin, end] : ranges) {
    const BufferDecl &decl = decls[index];
    const uint8_t *data =
        static_cast<const uint8_t *>(executor.bufferData(index));
    if (!host) {
      staging.resize(std::max<size_t>(staging.size(), decl.bytes));
      if (absl::Status status = executor.readBuffer(index, staging.data());
          !status.ok())
        return status;
      data = staging.data();
    }
    int64_t elementBytes = dtypeBytes(decl.spec.dtype);
    int64_t held = heldRange(decl, comm.rank()).first;
    if (absl::Status status = (*writer)->write(
            data + (begin - held) * elementBytes, (end - begin) * elementBytes);
        !status.ok())
      return status;
  }
  if (absl::Status status = (*writer)->commit(); !status.ok())
    return status;
  return std::make_pair((*writer)->fileBytes(), (*writer)->fileCrc32());
}

/// Rank 0: the manifest, from the plan and the files' own headers.
absl::StatusOr<CheckpointManifest>
buildManifest(Executor &executor, const std::string &temporary, int64_t step,
              const CheckpointContext &context, const std::vector<int> &writers,
              const std::vector<int64_t> &fileFacts) {
  const std::vector<BufferDecl> &decls = executor.buffers();
  int ranks = executor.communicator().size();
  CheckpointManifest manifest;
  manifest.step = step;
  manifest.ranks = ranks;
  manifest.stage = executor.program().stage;
  manifest.accumulateSteps = executor.accumulateSteps();
  manifest.program = executor.program().name;
  manifest.seed = context.seed;
  manifest.globalBatch = context.globalBatch;
  manifest.optimizer = executor.program().optimizer;
  std::map<size_t, CheckpointTensor> tensors;
  for (size_t index = 0; index < decls.size(); ++index) {
    const BufferDecl &decl = decls[index];
    if (!isSaved(decl.role))
      continue;
    CheckpointTensor &tensor = tensors[index];
    tensor.name = decl.name;
    tensor.role = bufferRoleName(decl.role);
    tensor.dtype = decl.spec.dtype;
    tensor.shape = decl.logicalShape;
    tensor.layout = decl.layout;
    if (decl.layout != "replicated")
      tensor.padding = decl.spec.numElements() * ranks - logicalElements(decl);
  }
  for (int rank = 0; rank < ranks; ++rank) {
    CheckpointFile file;
    file.name = checkpointFileName(rank, ranks);
    file.rank = rank;
    file.bytes = static_cast<uint64_t>(fileFacts[2 * rank]);
    file.crc32 = static_cast<uint32_t>(fileFacts[2 * rank + 1]);
    std::string path = (std::filesystem::path(temporary) / file.name).string();
    absl::StatusOr<SafetensorsIndex> header = readSafetensorsIndex(path);
    if (!header.ok())
      return header.status();
    std::map<std::string, uint64_t> offsets;
    for (const SafetensorsEntry &entry : header->entries)
      offsets[entry.name] = entry.offset;
    for (auto [index, begin, end] : writtenRanges(decls, writers, rank)) {
      auto offset = offsets.find(decls[index].name);
      if (offset == offsets.end())
        return absl::InternalError(absl::StrCat(
            path, " lacks tensor '", decls[index].name, "' it was to hold"));
      tensors[index].chunks.push_back({file.name, begin, end, offset->second});
    }
    manifest.files.push_back(std::move(file));
  }
  for (auto &[index, tensor] : tensors)
    manifest.tensors.push_back(std::move(tensor));
  std::sort(manifest.tensors.begin(), manifest.tensors.end(),
            [](const CheckpointTensor &a, const CheckpointTensor &b) {
              return a.name < b.name;
            });
  return manifest;
}

/// The model and optimizer of the checkpoint against the program's; the
/// first differences, in the user's terms.
absl::Status checkSignature(const std::string &dir, Executor &executor,
                            const CheckpointManifest &manifest) {
  std::vector<std::string> problems;
  std::set<std::string> names;
  for (const BufferDecl &decl : executor.buffers()) {
    if (!isSaved(decl.role))
      continue;
    names.insert(decl.name);
    std::string here =
        describe(decl.spec.dtype, decl.logicalShape, bufferRoleName(decl.role));
    const CheckpointTensor *saved = manifest.findTensor(decl.name);
    if (!saved) {
      problems.push_back(absl::StrCat("tensor '", decl.name, "' (", here,
                                      ") is not in the checkpoint"));
      continue;
    }
    std::string there = describe(saved->dtype, saved->shape, saved->role);
    if (here != there)
      problems.push_back(absl::StrCat("tensor '", decl.name, "' is ", there,
                                      " in the checkpoint but ", here,
                                      " in the program"));
  }
  for (const CheckpointTensor &tensor : manifest.tensors)
    if (!names.count(tensor.name))
      problems.push_back(
          absl::StrCat("the checkpoint has tensor '", tensor.name, "' (",
                       describe(tensor.dtype, tensor.shape, tensor.role),
                       "), which the program does not"));
  if (!problems.empty()) {
    size_t shown = std::min<size_t>(problems.size(), 4);
    std::string more =
        problems.size() > shown
            ? absl::StrCat("; and ", problems.size() - shown, " more")
            : std::string();
    return absl::InvalidArgumentError(absl::StrCat(
        dir, ": the checkpoint is of another model: ",
        absl::StrJoin(problems.begin(), problems.begin() + shown, "; "), more));
  }
  const std::vector<std::string> &mine = executor.program().optimizer;
  if (manifest.optimizer != mine) {
    auto differs = [](const std::vector<std::string> &a,
                      const std::vector<std::string> &b) {
      for (const std::string &item : a)
        if (std::find(b.begin(), b.end(), item) == b.end())
          return item;
      return std::string("(none)");
    };
    return absl::InvalidArgumentError(absl::StrCat(
        dir, ": the checkpoint was trained with another optimizer: it has '",
        differs(manifest.optimizer, mine), "' where the program has '",
        differs(mine, manifest.optimizer),
        "' (resuming would silently change the training)"));
  }
  return absl::OkStatus();
}

} // namespace

absl::StatusOr<std::string>
zero::rt::saveCheckpoint(Executor &executor, const std::string &root,
                         int64_t step, const CheckpointContext &context,
                         int keep) {
  Communicator &comm = executor.communicator();
  TrafficGuard guard(comm);
  int rank = comm.rank();
  absl::Status prepared = absl::OkStatus();
  if (rank == 0)
    prepared = prepareCheckpointDirectory(root, step).status();
  if (absl::Status status = agree(comm, prepared, "preparing the checkpoint");
      !status.ok())
    return status;

  std::string temporary = temporaryCheckpointDir(root, step);
  std::vector<int> writers = replicatedWriters(executor.buffers(), comm.size());
  std::string path =
      (std::filesystem::path(temporary) / checkpointFileName(rank, comm.size()))
          .string();
  checkpointCrashPoint("before-rank-file", rank);
  absl::StatusOr<std::pair<uint64_t, uint32_t>> file =
      writeRankFile(executor, path, writers, step);
  // Size and checksum of this rank's file, for the manifest.
  int64_t facts[2] = {0, 0};
  absl::Status written = file.status();
  if (file.ok()) {
    facts[0] = static_cast<int64_t>(file->first);
    facts[1] = static_cast<int64_t>(file->second);
  }
  checkpointCrashPoint("after-rank-file", rank);
  if (absl::Status status = agree(comm, written, "writing its checkpoint file");
      !status.ok())
    return status;
  std::vector<int64_t> fileFacts(2 * comm.size());
  if (absl::Status status =
          comm.allGather(facts, fileFacts.data(), 2, DType::i64);
      !status.ok())
    return status;

  absl::Status committed = absl::OkStatus();
  if (rank == 0) {
    absl::StatusOr<CheckpointManifest> manifest =
        buildManifest(executor, temporary, step, context, writers, fileFacts);
    committed = manifest.ok()
                    ? commitCheckpoint(root, temporary, *manifest, keep)
                    : manifest.status();
  }
  if (absl::Status status = agree(comm, committed, "publishing the checkpoint");
      !status.ok())
    return status;
  return (std::filesystem::path(root) / checkpointDirName(step)).string();
}

absl::StatusOr<CheckpointManifest>
zero::rt::loadCheckpoint(Executor &executor, const std::string &path) {
  Communicator &comm = executor.communicator();
  TrafficGuard guard(comm);
  // Every rank reads and checks the same small files, so every rank fails
  // the same way on them without a collective.
  absl::StatusOr<std::string> dir = resolveCheckpoint(path);
  if (!dir.ok())
    return dir.status();
  absl::StatusOr<CheckpointManifest> manifest = readCheckpointManifest(*dir);
  if (!manifest.ok())
    return manifest.status();
  if (absl::Status status = checkSignature(*dir, executor, *manifest);
      !status.ok())
    return status;

  // The checksums are the expensive part: each rank checks every N-th file.
  std::vector<size_t> mine;
  for (size_t index = comm.rank(); index < manifest->files.size();
       index += comm.size())
    mine.push_back(index);
  absl::Status verified = verifyCheckpointFiles(*dir, *manifest,
                                                /*checksums=*/true, mine);
  if (absl::Status status = agree(comm, verified, "verifying the checkpoint");
      !status.ok())
    return status;

  const std::vector<BufferDecl> &decls = executor.buffers();
  absl::Status loaded = absl::OkStatus();
  // One staging buffer, reused: only what the checkpoint does not fill
  // (padding, accumulators) is cleared.
  std::vector<uint8_t> staging;
  bool host = inHostMemory(executor);
  for (size_t index = 0; index < decls.size() && loaded.ok(); ++index) {
    const BufferDecl &decl = decls[index];
    if (!isSaved(decl.role) && decl.role != BufferRole::grad_accum)
      continue;
    uint8_t *data = static_cast<uint8_t *>(executor.bufferData(index));
    if (!host) {
      staging.resize(std::max<size_t>(staging.size(), decl.bytes));
      data = staging.data();
    }
    int64_t filled = 0;
    if (isSaved(decl.role)) {
      auto [begin, end] = heldRange(decl, comm.rank());
      if (end > begin)
        loaded = readCheckpointRange(*dir, *manifest->findTensor(decl.name),
                                     begin, end, data);
      filled = (end - begin) * dtypeBytes(decl.spec.dtype);
    }
    std::memset(data + filled, 0, decl.bytes - filled);
    if (loaded.ok() && !host)
      loaded = executor.writeBuffer(index, data);
  }
  if (absl::Status status = agree(comm, loaded, "loading the checkpoint");
      !status.ok())
    return status;
  return manifest;
}
