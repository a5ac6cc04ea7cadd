//===- Checkpoint.cpp - Saving and resuming a running program -------------===//

#include "zero/runtime/Checkpoint.h"

#include "OptimizerChange.h"

#include "zero/runtime/ExecutionBackend.h"
#include "zero/runtime/TensorFile.h"
#include "zero/runtime/TrainingState.h"
#include "zero/support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>
#include <utility>

#include <sched.h>
#include <sys/mman.h>

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
/// contiguous run starting at the shard's index (the rank's coordinate along
/// the shard axis) x the shard's size.
std::pair<int64_t, int64_t> heldRange(const Executor &executor,
                                      const BufferDecl &decl, int rank) {
  int64_t total = logicalElements(decl);
  if (decl.layout == "replicated")
    return {0, total};
  int64_t count = decl.spec.numElements();
  int64_t begin = std::min(
      total, static_cast<int64_t>(executor.shardIndex(decl, rank)) * count);
  return {begin, std::min(total, begin + count)};
}

/// Which rank writes each saved buffer: a sharded buffer's every rank (its
/// own range; on a mesh the first copy's), a replicated one the rank with
/// the fewest bytes so far, so that ZeRO-1/2 parameters do not all land on
/// rank 0.
std::vector<int> replicatedWriters(const Executor &executor, int ranks) {
  const std::vector<BufferDecl> &decls = executor.buffers();
  std::vector<int64_t> load(ranks, 0);
  for (const BufferDecl &decl : decls)
    if (isSaved(decl.role) && decl.layout != "replicated")
      for (int rank = 0; rank < ranks; ++rank) {
        if (!executor.holdsFirstCopy(decl, rank))
          continue;
        auto [begin, end] = heldRange(executor, decl, rank);
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
writtenRanges(const Executor &executor, const std::vector<int> &writers,
              int rank) {
  const std::vector<BufferDecl> &decls = executor.buffers();
  std::vector<std::tuple<size_t, int64_t, int64_t>> ranges;
  for (size_t index = 0; index < decls.size(); ++index) {
    const BufferDecl &decl = decls[index];
    if (!isSaved(decl.role))
      continue;
    if (decl.layout == "replicated" && writers[index] != rank)
      continue;
    if (decl.layout != "replicated" && !executor.holdsFirstCopy(decl, rank))
      continue;
    auto [begin, end] = heldRange(executor, decl, rank);
    if (end > begin)
      ranges.emplace_back(index, begin, end);
  }
  return ranges;
}

/// Whether the executor's buffers are host memory (the CPU backend and its
/// kin), which a checkpoint can write from and read into directly; device
/// buffers go through a host staging buffer.
bool inHostMemory(Executor &executor) {
  return executor.backend().hostAddressable();
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
  ZERO_RETURN_IF_ERROR(
      comm.allGather(mine.data(), all.data(), kWords, DType::i32));
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
  std::map<std::string, TrafficCount> saved;
};

std::string describe(DType dtype, const std::vector<int64_t> &shape,
                     absl::string_view role) {
  return absl::StrCat(role, " ", dtypeName(dtype), "[",
                      absl::StrJoin(shape, ", "), "]");
}

/// What this rank's file declares: its ranges of the state, each tensor's
/// logical shape and range in the metadata (so that the file explains
/// itself). Built on the training thread, so that the writer thread needs
/// nothing of the executor.
struct RankFileLayout {
  std::vector<SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;
  /// Bytes of each entry, in the order written.
  std::vector<uint64_t> bytes;
};

RankFileLayout rankFileLayout(Executor &executor,
                              const std::vector<int> &writers, int64_t step) {
  const std::vector<BufferDecl> &decls = executor.buffers();
  Communicator &comm = executor.communicator();
  RankFileLayout layout;
  layout.metadata = {
      {"format", "zero-checkpoint"},
      {"format_version", std::to_string(kCheckpointFormatVersion)},
      {"step", std::to_string(step)},
      {"rank", std::to_string(comm.rank())},
      {"ranks", std::to_string(comm.size())}};
  for (auto [index, begin, end] :
       writtenRanges(executor, writers, comm.rank())) {
    const BufferDecl &decl = decls[index];
    layout.entries.push_back({decl.name, decl.spec.dtype, {end - begin}, 0, 0});
    layout.bytes.push_back((end - begin) * dtypeBytes(decl.spec.dtype));
    layout.metadata[decl.name] = absl::StrCat(
        "{\"logical_shape\":[", absl::StrJoin(decl.logicalShape, ","),
        "],\"begin\":", begin, ",\"end\":", end, "}");
  }
  return layout;
}

/// Where the bytes of entry `i` of the layout are, valid until the next
/// call.
using PieceSource = std::function<absl::StatusOr<const uint8_t *>(size_t)>;

/// Writes the snapshot's pieces in place, at most `bytesPerSecond` when
/// that is set: in pieces of a tenth of a second's bytes (64 KiB to 8 MiB),
/// each begun no sooner than the rate allows. The pieces end on aligned
/// addresses, so that each next one still goes to the disk in place.
class WritePacer {
public:
  explicit WritePacer(uint64_t bytesPerSecond)
      : bytesPerSecond(bytesPerSecond),
        piece(std::clamp<uint64_t>(bytesPerSecond / 10, uint64_t{64} << 10,
                                   uint64_t{8} << 20)),
        start(std::chrono::steady_clock::now()) {}

  absl::Status write(SafetensorsWriter &writer, const uint8_t *data,
                     uint64_t bytes) {
    if (bytesPerSecond == 0)
      return writer.writeInPlace(data, bytes);
    while (bytes > 0) {
      uint64_t take = std::min<uint64_t>(bytes, piece);
      if (take < bytes)
        take -= reinterpret_cast<uintptr_t>(data + take) % kDirectIoAlignment;
      std::this_thread::sleep_until(
          start + std::chrono::duration<double>(static_cast<double>(sent) /
                                                bytesPerSecond));
      ZERO_RETURN_IF_ERROR(writer.writeInPlace(data, take));
      sent += take;
      data += take;
      bytes -= take;
    }
    return absl::OkStatus();
  }

private:
  uint64_t bytesPerSecond;
  uint64_t piece;
  std::chrono::steady_clock::time_point start;
  uint64_t sent = 0;
};

/// This rank's file, streamed one entry at a time; the size and CRC-32
/// come from the writer, so that the file is read never. Synchronous and
/// asynchronous saves both write through here, which is what makes their
/// files byte-identical. A background source's pieces stay valid until
/// this returns; its write goes at most `bytesPerSecond` (0: unpaced).
/// Returns {bytes, crc32}.
absl::StatusOr<std::pair<uint64_t, uint32_t>>
writeRankFile(const std::string &path, const RankFileLayout &layout,
              const PieceSource &source, int rank, bool background,
              uint64_t bytesPerSecond) {
  WritePacer pacer(bytesPerSecond);
  // The writer lays tensors out in the order declared: the order written.
  ZERO_ASSIGN_OR_RETURN(
      std::unique_ptr<SafetensorsWriter> writer,
      SafetensorsWriter::create(path, layout.entries, layout.metadata));
  for (size_t piece = 0; piece < layout.bytes.size(); ++piece) {
    ZERO_ASSIGN_OR_RETURN(const uint8_t *data, source(piece));
    // The background write's source is the snapshot, laid out so that
    // the disk reads it in place; the synchronous one reuses its staging.
    absl::Status status = background
                              ? pacer.write(*writer, data, layout.bytes[piece])
                              : (writer)->write(data, layout.bytes[piece]);
    if (!status.ok())
      return status;
    // Half-way through a background write: the training thread is busy
    // with steps, which is what the crash test wants to interrupt.
    if (background && piece == layout.bytes.size() / 2)
      checkpointCrashPoint("async-writing", rank);
  }
  ZERO_RETURN_IF_ERROR((writer)->commit());
  return std::make_pair((writer)->fileBytes(), (writer)->fileCrc32());
}

/// Reads this rank's written ranges straight from the buffers: host
/// memory in place, device buffers through one reused staging buffer.
PieceSource bufferSource(Executor &executor, const std::vector<int> &writers,
                         std::vector<uint8_t> &staging) {
  const std::vector<BufferDecl> &decls = executor.buffers();
  int rank = executor.communicator().rank();
  auto ranges = writtenRanges(executor, writers, rank);
  bool host = inHostMemory(executor);
  return [&executor, &decls, &staging, ranges, rank,
          host](size_t piece) -> absl::StatusOr<const uint8_t *> {
    auto [index, begin, end] = ranges[piece];
    const BufferDecl &decl = decls[index];
    const uint8_t *data =
        static_cast<const uint8_t *>(executor.bufferData(index));
    if (!host) {
      staging.resize(std::max<size_t>(staging.size(), decl.bytes));
      ZERO_RETURN_IF_ERROR(executor.readBuffer(index, staging.data()));
      data = staging.data();
    }
    int64_t held = heldRange(executor, decl, rank).first;
    return data + (begin - held) * dtypeBytes(decl.spec.dtype);
  };
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
  manifest.learningRateFactor = context.learningRateFactor;
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
    if (decl.layout != "replicated") {
      // The shards along the shard axes cover the tensor once.
      int64_t shards = executor.shardCount(decl);
      tensor.padding = decl.spec.numElements() * shards - logicalElements(decl);
    }
  }
  for (int rank = 0; rank < ranks; ++rank) {
    CheckpointFile file;
    file.name = checkpointFileName(rank, ranks);
    file.rank = rank;
    file.bytes = static_cast<uint64_t>(fileFacts[2 * rank]);
    file.crc32 = static_cast<uint32_t>(fileFacts[2 * rank + 1]);
    std::string path = (std::filesystem::path(temporary) / file.name).string();
    ZERO_ASSIGN_OR_RETURN(SafetensorsIndex header, readSafetensorsIndex(path));
    std::map<std::string, uint64_t> offsets;
    for (const SafetensorsEntry &entry : header.entries)
      offsets[entry.name] = entry.offset;
    for (auto [index, begin, end] : writtenRanges(executor, writers, rank)) {
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
                            const CheckpointManifest &manifest,
                            const LoadOptions &options) {
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
  // Another accumulation count is another optimizer step unless the global
  // batch is the same (fewer ranks, more micro-batches): refused otherwise,
  // as another learning rate is.
  int64_t rows = globalBatchRows(executor);
  if (manifest.accumulateSteps != executor.accumulateSteps() &&
      manifest.globalBatch != rows)
    return absl::InvalidArgumentError(absl::StrCat(
        dir, ": the checkpoint accumulated ", manifest.accumulateSteps,
        " micro-batch(es) per optimizer step (a global batch of ",
        manifest.globalBatch, " rows); this program accumulates ",
        executor.accumulateSteps(), " (", rows,
        " rows): each update would average another batch than the run "
        "saved did. Resume with ",
        manifest.accumulateSteps,
        " accumulation steps (or another count "
        "that gives ",
        manifest.globalBatch, " rows a step)"));
  return checkOptimizerChange(dir, manifest.optimizer,
                              executor.program().optimizer,
                              options.scheduleTotal);
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

zero::rt::AsyncCheckpointSave::AsyncCheckpointSave(
    Executor &executor, std::string root, int64_t step,
    const CheckpointContext &context, int keep)
    : executor(executor), root(std::move(root)), step_(step), context(context),
      keep(keep) {
  // The rate the saved state was trained under, not the one in effect when
  // the background write commits.
  this->context.learningRateFactor = executor.learningRateFactor();
}

zero::rt::AsyncCheckpointSave::~AsyncCheckpointSave() {
  if (writer.joinable())
    writer.join();
}

absl::StatusOr<std::unique_ptr<AsyncCheckpointSave>>
zero::rt::AsyncCheckpointSave::start(Executor &executor,
                                     const std::string &root, int64_t step,
                                     const CheckpointContext &context, int keep,
                                     uint64_t writeBytesPerSecond) {
  return begin(executor, root, step, context, keep, /*background=*/true,
               writeBytesPerSecond);
}

namespace {
/// The asynchronous saves' copy of the state, kept from one save to the
/// next, as torch DCP keeps its pinned staging memory: a fresh 1.4 GB
/// buffer per save was zeroed and faulted in while the training waited
/// (2 s of the 2.3 s the steps waited per save on the CI VM), where a
/// reused one is a plain memcpy. The price is that memory held between
/// saves; a synchronous save needs none.
struct SnapshotMemory {
  std::mutex mutex;
  AsyncCheckpointSave::Snapshot data;
  uint64_t bytes = 0;
};

SnapshotMemory &snapshotMemory() {
  static SnapshotMemory memory;
  return memory;
}

/// At least `bytes` of memory aligned for O_DIRECT, and its size; null
/// when it cannot be had.
std::pair<AsyncCheckpointSave::Snapshot, uint64_t>
takeSnapshotMemory(uint64_t bytes) {
  SnapshotMemory &kept = snapshotMemory();
  {
    std::lock_guard<std::mutex> lock(kept.mutex);
    if (kept.data && kept.bytes >= bytes)
      return {std::move(kept.data), std::exchange(kept.bytes, 0)};
    kept.data.reset();
    kept.bytes = 0;
  }
  // Uninitialized: the copy overwrites every byte the file holds.
  // In 2 MiB pages where the kernel has them: the background write pins
  // every page of the copy for O_DIRECT, and with 512 times fewer pages to
  // pin it takes less from the steps it overlaps (docs/benchmarks.md,
  // "Checkpoint save and load").
  constexpr size_t kHugePage = size_t{2} << 20;
  void *memory = nullptr;
  if (::posix_memalign(&memory, kHugePage, std::max<uint64_t>(bytes, 1)) != 0)
    return {nullptr, 0};
  (void)::madvise(memory, bytes, MADV_HUGEPAGE); // a hint; 4 KiB pages work
  return {AsyncCheckpointSave::Snapshot(static_cast<uint8_t *>(memory)), bytes};
}

void returnSnapshotMemory(AsyncCheckpointSave::Snapshot data, uint64_t bytes) {
  if (!data)
    return;
  SnapshotMemory &kept = snapshotMemory();
  std::lock_guard<std::mutex> lock(kept.mutex);
  if (bytes >= kept.bytes) {
    kept.data = std::move(data);
    kept.bytes = bytes;
  }
}
} // namespace

/// Checkpoints record each buffer as contiguous ranges of its logical
/// tensor; a tensor-parallel slice of a dimension other than the first is
/// not one, so those programs are refused (every rank alike) rather than
/// saved or loaded wrong.
static absl::Status refuseTensorParallel(const Executor &executor,
                                         absl::string_view what) {
  for (const BufferDecl &decl : executor.buffers())
    if (decl.splitDim >= 0)
      return absl::UnimplementedError(absl::StrCat(
          what, ": '", decl.name,
          "' is split over a tensor-parallel axis, and checkpoints of "
          "tensor-parallel programs are not supported yet; train with "
          "tp=1 to checkpoint"));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<AsyncCheckpointSave>>
zero::rt::AsyncCheckpointSave::begin(Executor &executor,
                                     const std::string &root, int64_t step,
                                     const CheckpointContext &context, int keep,
                                     bool background,
                                     uint64_t writeBytesPerSecond) {
  ZERO_RETURN_IF_ERROR(refuseTensorParallel(executor, "saving a checkpoint"));
  auto clock = std::chrono::steady_clock::now();
  Communicator &comm = executor.communicator();
  // Only the collectives of start() itself: the steps trained before
  // finish() count as training.
  TrafficGuard guard(comm);
  int rank = comm.rank();
  // A lost state is lost on every rank (the failed load agreed on it), so
  // every rank refuses here without a collective.
  ZERO_RETURN_IF_ERROR(executor.stateUsable());
  absl::Status prepared = absl::OkStatus();
  if (rank == 0)
    prepared = prepareCheckpointDirectory(root, step).status();
  ZERO_RETURN_IF_ERROR(agree(comm, prepared, "preparing the checkpoint"));

  std::unique_ptr<AsyncCheckpointSave> save(
      new AsyncCheckpointSave(executor, root, step, context, keep));
  save->writers = replicatedWriters(executor, comm.size());
  std::string path =
      (std::filesystem::path(temporaryCheckpointDir(root, step)) /
       checkpointFileName(rank, comm.size()))
          .string();
  RankFileLayout layout = rankFileLayout(executor, save->writers, step);
  checkpointCrashPoint("before-rank-file", rank);
  if (!background) {
    auto writing = std::chrono::steady_clock::now();
    std::vector<uint8_t> staging;
    absl::StatusOr<std::pair<uint64_t, uint32_t>> file = writeRankFile(
        path, layout, bufferSource(executor, save->writers, staging), rank,
        /*background=*/false, /*bytesPerSecond=*/0);
    save->written = file.status();
    if (file.ok())
      std::tie(save->fileBytes, save->fileCrc32) = *file;
    save->writeSeconds_ = secondsSince(writing);
    checkpointCrashPoint("after-rank-file", rank);
    save->startSeconds_ = secondsSince(clock);
    return save;
  }

  // The copy: one host buffer in file order, each byte at an address that
  // agrees with its file offset modulo the O_DIRECT alignment, so that the
  // disk reads it in place (SafetensorsWriter::writeInPlace) and the
  // background write copies nothing. A failure is the write's, reported
  // by finish().
  absl::StatusOr<uint64_t> dataOffset =
      SafetensorsWriter::dataOffset(path, layout.entries, layout.metadata);
  if (!dataOffset.ok())
    save->written = dataOffset.status();
  uint64_t total = dataOffset.ok() ? *dataOffset % kDirectIoAlignment : 0;
  std::vector<uint64_t> offsets;
  for (uint64_t bytes : layout.bytes) {
    offsets.push_back(total);
    total += bytes;
  }
  std::vector<uint8_t> staging;
  PieceSource source = bufferSource(executor, save->writers, staging);
  if (save->written.ok())
    std::tie(save->snapshot, save->snapshotBytes) = takeSnapshotMemory(total);
  if (save->written.ok() && !save->snapshot)
    save->written = absl::ResourceExhaustedError(
        absl::StrCat("cannot hold a ", total,
                     "-byte copy of the state for an "
                     "asynchronous save (save synchronously)"));
  for (size_t piece = 0; piece < offsets.size() && save->written.ok();
       ++piece) {
    absl::StatusOr<const uint8_t *> data = source(piece);
    if (!data.ok())
      save->written = data.status();
    else
      std::memcpy(save->snapshot.get() + offsets[piece], *data,
                  layout.bytes[piece]);
  }
  // Every rank's copy is done before any returns: a rank slower to copy
  // (ranks that share cores) is waited for here, where the save counts
  // it, not in the next step's first collective, and the steps overlap
  // the background writes only. A rank that could not copy stops all.
  if (absl::Status status = agree(comm, save->written, "copying the state");
      !status.ok())
    save->written = status;
  save->startSeconds_ = secondsSince(clock);
  if (!save->written.ok())
    return save;
  AsyncCheckpointSave *self = save.get();
  self->writing_.store(true, std::memory_order_release);
  self->writer =
      std::thread([self, path, rank, layout = std::move(layout),
                   offsets = std::move(offsets), writeBytesPerSecond] {
        auto writing = std::chrono::steady_clock::now();
        // The write yields the cores to the training (SCHED_IDLE, which
        // the O_DIRECT writer thread it starts inherits): it runs when a
        // core would idle, and the steps it overlaps keep their speed. A
        // hint; without it the write runs at normal priority.
        sched_param idle{};
        (void)::sched_setscheduler(0, SCHED_IDLE, &idle);
        PieceSource fromCopy =
            [&](size_t piece) -> absl::StatusOr<const uint8_t *> {
          return self->snapshot.get() + offsets[piece];
        };
        absl::StatusOr<std::pair<uint64_t, uint32_t>> file =
            writeRankFile(path, layout, fromCopy, rank, /*background=*/true,
                          writeBytesPerSecond);
        self->written = file.status();
        if (file.ok())
          std::tie(self->fileBytes, self->fileCrc32) = *file;
        self->writeSeconds_ = secondsSince(writing);
        checkpointCrashPoint("after-rank-file", rank);
        self->writing_.store(false, std::memory_order_release);
      });
  return save;
}

std::string zero::rt::AsyncCheckpointSave::describeWait() const {
  return absl::StrFormat(" in the background; the steps waited %.3f s "
                         "(copy %.3f s, finish %.3f s)",
                         startSeconds_ + finishSeconds_, startSeconds_,
                         finishSeconds_);
}

absl::StatusOr<std::string> zero::rt::AsyncCheckpointSave::finish() {
  if (finished)
    return absl::FailedPreconditionError(
        "the checkpoint save was already finished");
  finished = true;
  auto clock = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> committed = commit();
  finishSeconds_ = secondsSince(clock);
  return committed;
}

absl::StatusOr<std::string> zero::rt::AsyncCheckpointSave::commit() {
  if (writer.joinable())
    writer.join();
  // The copy is written: its memory waits for the next save.
  returnSnapshotMemory(std::move(snapshot), snapshotBytes);
  snapshotBytes = 0;
  Communicator &comm = executor.communicator();
  TrafficGuard guard(comm);
  ZERO_RETURN_IF_ERROR(agree(comm, written, "writing its checkpoint file"));
  // Size and checksum of every rank's file, for the manifest.
  int64_t facts[2] = {static_cast<int64_t>(fileBytes),
                      static_cast<int64_t>(fileCrc32)};
  std::vector<int64_t> fileFacts(2 * comm.size());
  ZERO_RETURN_IF_ERROR(comm.allGather(facts, fileFacts.data(), 2, DType::i64));

  absl::Status committed = absl::OkStatus();
  if (comm.rank() == 0) {
    std::string temporary = temporaryCheckpointDir(root, step_);
    absl::StatusOr<CheckpointManifest> manifest =
        buildManifest(executor, temporary, step_, context, writers, fileFacts);
    committed = manifest.ok()
                    ? commitCheckpoint(root, temporary, *manifest, keep)
                    : manifest.status();
  }
  ZERO_RETURN_IF_ERROR(agree(comm, committed, "publishing the checkpoint"));
  return (std::filesystem::path(root) / checkpointDirName(step_)).string();
}

absl::StatusOr<std::string>
zero::rt::saveCheckpoint(Executor &executor, const std::string &root,
                         int64_t step, const CheckpointContext &context,
                         int keep) {
  ZERO_ASSIGN_OR_RETURN(std::unique_ptr<AsyncCheckpointSave> save,
                        AsyncCheckpointSave::begin(executor, root, step,
                                                   context, keep,
                                                   /*background=*/false,
                                                   /*writeBytesPerSecond=*/0));
  return (save)->finish();
}

absl::StatusOr<CheckpointManifest>
zero::rt::loadCheckpoint(Executor &executor, const std::string &path,
                         const LoadOptions &options) {
  ZERO_RETURN_IF_ERROR(refuseTensorParallel(executor, "loading a checkpoint"));
  Communicator &comm = executor.communicator();
  TrafficGuard guard(comm);
  // Every rank reads and checks the same small files, so every rank fails
  // the same way on them without a collective.
  ZERO_ASSIGN_OR_RETURN(std::string dir, resolveCheckpoint(path));
  ZERO_ASSIGN_OR_RETURN(CheckpointManifest manifest,
                        readCheckpointManifest(dir));
  ZERO_RETURN_IF_ERROR(checkSignature(dir, executor, manifest, options));

  // Sizes and headers: cheap, every rank checks every file before any
  // buffer is touched.
  ZERO_RETURN_IF_ERROR(
      agree(comm, verifyCheckpointFiles(dir, manifest, /*checksums=*/false),
            "verifying the checkpoint"));

  // One pass over the files: each rank checks the CRC-32 of a contiguous
  // block of the files while reading its ranges straight into its buffers
  // (or into host staging for device memory). Shards are contiguous ranks'
  // ranges, so a block is the files the rank reads anyway: its own at the
  // same N, both halves' at N / 2; no file is read by one rank only to be
  // checked by another.
  std::vector<size_t> mine;
  size_t files = manifest.files.size();
  for (size_t index = 0; index < files; ++index)
    if (static_cast<int64_t>(index * comm.size() / files) == comm.rank())
      mine.push_back(index);
  const std::vector<BufferDecl> &decls = executor.buffers();
  bool host = inHostMemory(executor);
  std::vector<CheckpointRead> reads;
  std::vector<std::pair<size_t, std::vector<uint8_t>>> staged;
  for (size_t index = 0; index < decls.size(); ++index) {
    const BufferDecl &decl = decls[index];
    if (!isSaved(decl.role) && decl.role != BufferRole::grad_accum)
      continue;
    uint8_t *data = static_cast<uint8_t *>(executor.bufferData(index));
    if (!host) {
      staged.emplace_back(index, std::vector<uint8_t>(decl.bytes));
      data = staged.back().second.data();
    }
    int64_t filled = 0;
    if (isSaved(decl.role)) {
      auto [begin, end] = heldRange(executor, decl, comm.rank());
      if (end > begin)
        reads.push_back({manifest.findTensor(decl.name), begin, end, data});
      filled = (end - begin) * dtypeBytes(decl.spec.dtype);
    }
    // What the checkpoint does not fill (padding, accumulators) is cleared.
    std::memset(data + filled, 0, decl.bytes - filled);
  }
  if (absl::Status status =
          agree(comm, readCheckpoint(dir, manifest, reads, mine),
                "loading the checkpoint");
      !status.ok()) {
    // Host buffers were written before the checksums were known, on every
    // rank, whichever rank's file failed.
    if (host)
      executor.setStateLost(status);
    return status;
  }
  if (!host) {
    absl::Status copied = absl::OkStatus();
    for (auto &[index, bytes] : staged)
      if (copied.ok())
        copied = executor.writeBuffer(index, bytes.data());
    if (absl::Status status =
            agree(comm, copied, "copying the checkpoint to the device");
        !status.ok()) {
      executor.setStateLost(status);
      return status;
    }
  }
  executor.setStateLost(absl::OkStatus());
  executor.setLearningRateFactor(manifest.learningRateFactor);
  return manifest;
}
