//===- TrainingState.cpp - Initial state and final state
//-------------------===//

#include "zero/runtime/TrainingState.h"
#include "zero/support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <cstring>
#include <vector>

using namespace zero::rt;

static int64_t product(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t extent : shape)
    count *= extent;
  return count;
}

static bool isState(BufferRole role) {
  return role != BufferRole::input && role != BufferRole::output;
}

/// The first logical element this rank's buffer holds. Flat shards and dim-0
/// shards are both one contiguous run of the flattened logical tensor, the
/// shard's index (the rank's coordinate along the shard axis) times its size.
static int64_t getShardBegin(const Executor &executor, const BufferDecl &decl,
                             int rank) {
  if (decl.layout == "replicated")
    return 0;
  return static_cast<int64_t>(executor.shardIndex(decl, rank)) *
         decl.spec.numElements();
}

/// A contiguous run of the flattened logical tensor a rank's buffer holds:
/// logical elements [begin, begin + count) at element `offset` of the
/// buffer.
struct HeldRun {
  int64_t begin, count, offset;
};

/// The elements of the tensor-parallel shard a split buffer's ZeRO shard
/// (or the whole buffer, unsharded) covers: [begin, begin + count) of the
/// flattened shard, padding past its end excluded.
static std::pair<int64_t, int64_t> shardRangeOfSplit(const Executor &executor,
                                                     const BufferDecl &decl,
                                                     int rank,
                                                     int64_t splitElements) {
  if (decl.layout == "replicated")
    return {0, splitElements};
  int64_t begin = getShardBegin(executor, decl, rank);
  return {begin, std::clamp<int64_t>(splitElements - begin, 0,
                                     decl.spec.numElements())};
}

/// The runs of the logical tensor rank `rank` holds in buffer `decl`: one
/// for a replicated, flat or dim-0 buffer; for a tensor-parallel split of
/// dimension d, one per index of the dimensions before d (the slice at the
/// rank's coordinate along the split axis, rows of the dimensions after d
/// whole), cut to the part of it a ZeRO shard of the split holds.
static std::vector<HeldRun> heldRuns(const Executor &executor,
                                     const BufferDecl &decl, int rank) {
  if (decl.splitDim < 0)
    return {{getShardBegin(executor, decl, rank), decl.spec.numElements(), 0}};
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < decl.splitDim; ++d)
    outer *= decl.logicalShape[d];
  for (size_t d = decl.splitDim + 1; d < decl.logicalShape.size(); ++d)
    inner *= decl.logicalShape[d];
  int64_t full = decl.logicalShape[decl.splitDim];
  int64_t local = full / executor.extentAlong({decl.splitAxis});
  int64_t coordinate = executor.indexAlong({decl.splitAxis}, rank);
  // The split's runs, then the part of them the rank's ZeRO shard holds
  // (flat and dim-0 shards are one contiguous range of the split).
  int64_t runLength = local * inner;
  auto [begin, count] =
      shardRangeOfSplit(executor, decl, rank, outer * runLength);
  std::vector<HeldRun> runs;
  for (int64_t o = begin / std::max<int64_t>(runLength, 1);
       o < outer && o * runLength < begin + count; ++o) {
    int64_t first = std::max(begin, o * runLength);
    int64_t last = std::min(begin + count, (o + 1) * runLength);
    runs.push_back(
        {(o * full + coordinate * local) * inner + (first - o * runLength),
         last - first, first - begin});
  }
  return runs;
}

static std::string shapeString(const std::vector<int64_t> &shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

/// Copies logical elements [begin, begin + count) of `tensor` into `out`,
/// converting to `dtype`; elements past the logical end are zero.
static void copyShard(const HostTensor &tensor, int64_t begin, int64_t count,
                      DType dtype, void *out) {
  int64_t logical = tensor.numElements();
  for (int64_t index = 0; index < count; ++index) {
    int64_t source = begin + index;
    if (isFloat(dtype)) {
      float value = source < logical
                        ? loadAsFloat(tensor.data.data(), tensor.dtype, source)
                        : 0.0f;
      storeFromFloat(out, dtype, index, value);
    } else if (dtype == DType::i32) {
      static_cast<int32_t *>(out)[index] =
          source < logical
              ? reinterpret_cast<const int32_t *>(tensor.data.data())[source]
              : 0;
    } else {
      static_cast<int64_t *>(out)[index] =
          source < logical
              ? reinterpret_cast<const int64_t *>(tensor.data.data())[source]
              : 0;
    }
  }
}

/// Whether `source` can fill buffer `decl`: its logical shape, and a float
/// tensor for a float buffer (an integer one for an integer buffer).
static absl::Status checkLogical(const BufferDecl &decl,
                                 const HostTensor &source,
                                 const std::string &what) {
  if (source.shape != decl.logicalShape)
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": tensor '", decl.name, "' has shape ",
                     shapeString(source.shape), ", but the program's is ",
                     shapeString(decl.logicalShape)));
  if (isFloat(source.dtype) != isFloat(decl.spec.dtype))
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": tensor '", decl.name, "' is ", dtypeName(source.dtype),
        ", but the program stores ", dtypeName(decl.spec.dtype)));
  return absl::OkStatus();
}

/// Zeroed host bytes for buffer `decl`, in `staging`: one staging area for
/// all the buffers a load writes, not a fresh allocation per buffer (a
/// large one is new pages from the kernel each time, whose first touch is
/// most of the load on a virtual machine: 0.6-10 s a GiB measured here).
static void *stage(std::vector<uint8_t> &staging, const BufferDecl &decl) {
  staging.assign(decl.bytes, 0);
  return staging.data();
}

/// Writes this rank's part of `source`, a logical tensor named after
/// buffer `index` in `what`, into that buffer, converted to its type.
static absl::Status writeLogical(Executor &executor, size_t index,
                                 const HostTensor &source,
                                 const std::string &what,
                                 std::vector<uint8_t> &staging) {
  const BufferDecl &decl = executor.buffers()[index];
  ZERO_RETURN_IF_ERROR(checkLogical(decl, source, what));
  void *host = stage(staging, decl);
  int64_t elementBytes = dtypeBytes(decl.spec.dtype);
  for (const HeldRun &run :
       heldRuns(executor, decl, executor.communicator().rank()))
    copyShard(source, run.begin, run.count, decl.spec.dtype,
              static_cast<uint8_t *>(host) + run.offset * elementBytes);
  return executor.writeBuffer(index, host);
}

absl::Status zero::rt::loadState(Executor &executor, const TensorMap &state,
                                 const std::string &what) {
  const std::vector<BufferDecl> &decls = executor.buffers();
  std::vector<std::string> known;
  for (const BufferDecl &decl : decls)
    if (decl.role == BufferRole::param || decl.role == BufferRole::frozen ||
        decl.role == BufferRole::master || decl.role == BufferRole::scaler)
      known.push_back(decl.name);
  for (const auto &[name, tensor] : state)
    if (std::find(known.begin(), known.end(), name) == known.end())
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": the program has no parameter '", name,
                       "' (its parameters: ", absl::StrJoin(known, ", "), ")"));
  // Everything is checked before anything is written: a refused state
  // leaves the trainer as it was.
  std::vector<std::pair<size_t, const HostTensor *>> writes;
  for (size_t index = 0; index < decls.size(); ++index) {
    const BufferDecl &decl = decls[index];
    auto it = state.find(decl.name);
    if (decl.role == BufferRole::param || decl.role == BufferRole::frozen) {
      // A key missing from a state the caller gave is a bad argument (a
      // ValueError in Python, as PyTorch's strict load refuses it), not a
      // missing file.
      if (it == state.end())
        return absl::InvalidArgumentError(absl::StrCat(
            what, " has no tensor '", decl.name, "' (logical shape ",
            shapeString(decl.logicalShape), ")"));
    } else if (decl.role == BufferRole::master) {
      // A master copy missing from the state starts as its parameter.
      if (it == state.end())
        it = state.find(decl.initName);
    } else if (decl.role != BufferRole::scaler) {
      continue;
    }
    if (it == state.end())
      continue;
    ZERO_RETURN_IF_ERROR(checkLogical(decl, it->second, what));
    writes.push_back({index, &it->second});
  }
  std::vector<uint8_t> staging;
  for (const auto &[index, source] : writes)
    ZERO_RETURN_IF_ERROR(writeLogical(executor, index, *source, what, staging));
  return absl::OkStatus();
}

/// The file tensor buffer `decl` starts from, or null: its own, else (for
/// a master copy) its parameter's.
static HostTensor *findInitSource(TensorMap &file, const BufferDecl &decl) {
  if (auto it = file.find(decl.name); it != file.end())
    return &it->second;
  if (auto owner = file.find(decl.initName);
      decl.role == BufferRole::master && owner != file.end())
    return &owner->second;
  return nullptr;
}

/// Makes every rank's initial tensors rank 0's, as PyTorch's DDP does at
/// construction (it broadcasts rank 0's module states) and FSDP with
/// sync_module_states: ranks that each seeded their own torch.manual_seed
/// before building the module would otherwise each keep their shard of a
/// different model (a mix at stages 1-3, diverging copies at stage 0).
/// Tensors that differ only in value are broadcast from rank 0 and named
/// in `taken`; one missing on a rank, or of another type or shape, is
/// refused, naming it. One all-gather of three words per tensor when the
/// ranks agree.
static absl::Status takeRankZeroState(Executor &executor, TensorMap &file,
                                      const std::string &initFile,
                                      std::vector<std::string> &taken) {
  Communicator &comm = executor.communicator();
  // Every rank given a file takes part, even one whose file is empty.
  if (comm.size() < 2 || initFile.empty())
    return absl::OkStatus();
  // The file tensors the state may start from, in buffer order: a buffer's
  // own, and a master copy's parameter's. The names come from the program
  // alone, so that every rank compares the same list.
  std::vector<std::string> names;
  for (const BufferDecl &decl : executor.buffers()) {
    if (!isState(decl.role))
      continue;
    for (const std::string &name : {decl.name, decl.initName})
      if (!name.empty() &&
          std::find(names.begin(), names.end(), name) == names.end())
        names.push_back(name);
  }
  // Per tensor: present, the checksum of its type and shape, of its bytes.
  constexpr int kWords = 3;
  std::vector<int64_t> mine(kWords * names.size(), 0);
  for (size_t index = 0; index < names.size(); ++index) {
    auto it = file.find(names[index]);
    if (it == file.end())
      continue;
    // The type and shape alone: a tensor without its bytes (not a copy).
    HostTensor header;
    header.dtype = it->second.dtype;
    header.shape = it->second.shape;
    mine[kWords * index] = 1;
    mine[kWords * index + 1] = tensorChecksum(header);
    mine[kWords * index + 2] = tensorChecksum(it->second);
  }
  std::vector<int64_t> all(mine.size() * comm.size());
  if (absl::Status status =
          comm.allGather(mine.data(), all.data(),
                         static_cast<int64_t>(mine.size()), DType::i64);
      !status.ok())
    return absl::Status(status.code(),
                        absl::StrCat("comparing the ranks' initial state (",
                                     initFile, "): ", status.message()));
  std::vector<size_t> differing;
  for (size_t index = 0; index < names.size(); ++index) {
    const int64_t *first = &all[kWords * index];
    bool sameBytes = true;
    for (int rank = 1; rank < comm.size(); ++rank) {
      const int64_t *theirs = &all[(rank * names.size() + index) * kWords];
      if (theirs[0] != first[0] || theirs[1] != first[1]) {
        std::string quoted = absl::StrCat("'", names[index], "'");
        std::string how =
            !theirs[0]  ? absl::StrCat("rank ", rank, " has no tensor ", quoted,
                                       " where rank 0 has one")
            : !first[0] ? absl::StrCat("rank ", rank, " has a tensor ", quoted,
                                       " where rank 0 has none")
                        : absl::StrCat("rank ", rank, "'s tensor ", quoted,
                                       " has another type or shape than "
                                       "rank 0's");
        return absl::InvalidArgumentError(
            absl::StrCat("the ranks' initial states (", initFile,
                         ") are not one model: ", how,
                         "; every rank must start from the same model"));
      }
      sameBytes &= theirs[2] == first[2];
    }
    if (!sameBytes && first[0])
      differing.push_back(index);
  }
  // MPI counts are ints: large tensors go in pieces.
  constexpr int64_t kPiece = int64_t{1} << 30;
  for (size_t index : differing) {
    std::vector<uint8_t> &bytes = file[names[index]].data;
    for (int64_t begin = 0; begin < static_cast<int64_t>(bytes.size());
         begin += kPiece) {
      int64_t count =
          std::min<int64_t>(kPiece, static_cast<int64_t>(bytes.size()) - begin);
      ZERO_RETURN_IF_ERROR(comm.broadcast(bytes.data() + begin,
                                          bytes.data() + begin, count,
                                          DType::i8, /*root=*/0));
    }
    taken.push_back(names[index]);
  }
  return absl::OkStatus();
}

absl::Status
zero::rt::initializeState(Executor &executor, uint64_t seed,
                          const std::string &initFile,
                          std::vector<std::string> *takenFromRankZero) {
  // train.dropout draws its masks from the seed of the state too.
  executor.setRandomSeed(seed);
  TensorMap file;
  if (!initFile.empty()) {
    ZERO_ASSIGN_OR_RETURN(TensorMap read, readSafetensors(initFile));
    file = std::move(read);
  }
  std::vector<std::string> taken;
  ZERO_RETURN_IF_ERROR(takeRankZeroState(executor, file, initFile, taken));
  if (takenFromRankZero)
    *takenFromRankZero = std::move(taken);
  const std::vector<BufferDecl> &decls = executor.buffers();
  int rank = executor.communicator().rank();
  std::vector<uint8_t> staging;
  for (size_t index = 0; index < decls.size(); ++index) {
    const BufferDecl &decl = decls[index];
    if (!isState(decl.role))
      continue;
    int64_t logical = product(decl.logicalShape);

    // A tensor in the file wins; a master copy without one starts as its
    // parameter's tensor.
    const HostTensor *source = findInitSource(file, decl);
    if (!source && !file.empty() &&
        (decl.role == BufferRole::param || decl.role == BufferRole::frozen))
      return absl::InvalidArgumentError(absl::StrCat(
          initFile, " has no tensor '", decl.name, "' (logical shape ",
          shapeString(decl.logicalShape), ")"));
    if (source) {
      ZERO_RETURN_IF_ERROR(
          writeLogical(executor, index, *source, initFile, staging));
      continue;
    }
    // Filled on the host, then copied to wherever the backend keeps it.
    void *out = stage(staging, decl);
    auto store = [&] { return executor.writeBuffer(index, out); };
    // Master copies take their parameter's initializer and name, so that
    // they start equal to it.
    std::optional<InitSpec> init = decl.init;
    if (!init && decl.initName != decl.name) {
      int owner = executor.findBuffer(decl.initName);
      if (owner >= 0)
        init = decls[owner].init;
    }
    if (!init) {
      ZERO_RETURN_IF_ERROR(store());
      continue;
    }
    if (absl::Status status = validateInitSpec(*init); !status.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("initializer of ", decl.name, ": ", status.message()));
    // Each run drawn as the same elements of the logical tensor are at any
    // rank count, stage and tensor-parallel degree.
    int64_t elementBytes = dtypeBytes(decl.spec.dtype);
    for (const HeldRun &run : heldRuns(executor, decl, rank))
      fillInitialized(*init, seed, decl.initName, logical, run.begin, run.count,
                      decl.spec.dtype,
                      static_cast<uint8_t *>(out) + run.offset * elementBytes);
    ZERO_RETURN_IF_ERROR(store());
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorMap> zero::rt::gatherState(Executor &executor) {
  TensorMap state;
  const std::vector<BufferDecl> &decls = executor.buffers();
  for (size_t index = 0; index < decls.size(); ++index) {
    const BufferDecl &decl = decls[index];
    if (decl.role != BufferRole::param && decl.role != BufferRole::frozen &&
        decl.role != BufferRole::master && decl.role != BufferRole::scaler)
      continue;
    HostTensor tensor;
    tensor.dtype = decl.spec.dtype;
    tensor.shape = decl.logicalShape;
    int64_t elementBytes = dtypeBytes(decl.spec.dtype);
    int64_t logicalBytes = product(decl.logicalShape) * elementBytes;
    std::vector<uint8_t> local(decl.bytes);
    ZERO_RETURN_IF_ERROR(executor.readBuffer(index, local.data()));
    if (decl.splitDim >= 0) {
      // Every rank's part (its tensor-parallel split, or its ZeRO shard of
      // it), placed run by run; copies place the same values again.
      Communicator &job = executor.communicator();
      std::vector<uint8_t> byRank(decl.bytes * job.size());
      ZERO_RETURN_IF_ERROR(job.allGather(local.data(), byRank.data(),
                                         decl.spec.numElements(),
                                         decl.spec.dtype));
      tensor.data.assign(logicalBytes, 0);
      for (int peer = 0; peer < job.size(); ++peer)
        for (const HeldRun &run : heldRuns(executor, decl, peer))
          std::memcpy(tensor.data.data() + run.begin * elementBytes,
                      byRank.data() + peer * decl.bytes +
                          run.offset * elementBytes,
                      run.count * elementBytes);
    } else if (decl.layout == "replicated") {
      local.resize(logicalBytes);
      tensor.data = std::move(local);
    } else {
      int64_t count = decl.spec.numElements();
      int64_t shardBytes = count * elementBytes;
      std::vector<uint8_t> gathered(shardBytes * executor.shardCount(decl));
      if (decl.shardAxes.size() == 1) {
        // The shards are held along one axis: gathered over its group.
        Communicator &group = executor.axisCommunicator(decl.shardAxes[0]);
        ZERO_RETURN_IF_ERROR(group.allGather(local.data(), gathered.data(),
                                             count, decl.spec.dtype));
      } else {
        // Cut over several axes: every rank's shard, put in shard order.
        Communicator &job = executor.communicator();
        std::vector<uint8_t> byRank(shardBytes * job.size());
        ZERO_RETURN_IF_ERROR(
            job.allGather(local.data(), byRank.data(), count, decl.spec.dtype));
        for (int rank = 0; rank < job.size(); ++rank)
          std::memcpy(gathered.data() +
                          executor.shardIndex(decl, rank) * shardBytes,
                      byRank.data() + rank * shardBytes, shardBytes);
      }
      gathered.resize(logicalBytes);
      tensor.data = std::move(gathered);
    }
    state[decl.name] = std::move(tensor);
  }
  return state;
}
