//===- TrainingState.cpp - Initial state and final state
//-------------------===//

#include "zero/runtime/TrainingState.h"
#include "zero/support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <cstring>

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

/// Writes this rank's part of `source`, a logical tensor named after
/// buffer `index` in `what`, into that buffer, converted to its type.
static absl::Status writeLogical(Executor &executor, size_t index,
                                 const HostTensor &source,
                                 const std::string &what) {
  const BufferDecl &decl = executor.buffers()[index];
  ZERO_RETURN_IF_ERROR(checkLogical(decl, source, what));
  std::vector<uint8_t> host(decl.bytes);
  copyShard(source,
            getShardBegin(executor, decl, executor.communicator().rank()),
            decl.spec.numElements(), decl.spec.dtype, host.data());
  return executor.writeBuffer(index, host.data());
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
  for (const auto &[index, source] : writes)
    ZERO_RETURN_IF_ERROR(writeLogical(executor, index, *source, what));
  return absl::OkStatus();
}

absl::Status zero::rt::initializeState(Executor &executor, uint64_t seed,
                                       const std::string &initFile) {
  // train.dropout draws its masks from the seed of the state too.
  executor.setRandomSeed(seed);
  TensorMap file;
  if (!initFile.empty()) {
    ZERO_ASSIGN_OR_RETURN(TensorMap read, readSafetensors(initFile));
    file = std::move(read);
  }
  const std::vector<BufferDecl> &decls = executor.buffers();
  int rank = executor.communicator().rank();
  for (size_t index = 0; index < decls.size(); ++index) {
    const BufferDecl &decl = decls[index];
    if (!isState(decl.role))
      continue;
    int64_t logical = product(decl.logicalShape);
    int64_t begin = getShardBegin(executor, decl, rank);
    int64_t count = decl.spec.numElements();
    // Filled on the host, then copied to wherever the backend keeps it.
    std::vector<uint8_t> host(decl.bytes);
    void *out = host.data();
    auto store = [&] { return executor.writeBuffer(index, out); };

    // A tensor in the file wins; a master copy without one starts as its
    // parameter's tensor.
    const HostTensor *source = nullptr;
    if (auto it = file.find(decl.name); it != file.end())
      source = &it->second;
    else if (auto owner = file.find(decl.initName);
             decl.role == BufferRole::master && owner != file.end())
      source = &owner->second;
    else if (!file.empty() && (decl.role == BufferRole::param ||
                               decl.role == BufferRole::frozen))
      return absl::InvalidArgumentError(absl::StrCat(
          initFile, " has no tensor '", decl.name, "' (logical shape ",
          shapeString(decl.logicalShape), ")"));
    if (source) {
      ZERO_RETURN_IF_ERROR(writeLogical(executor, index, *source, initFile));
      continue;
    }
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
    fillInitialized(*init, seed, decl.initName, logical, begin, count,
                    decl.spec.dtype, out);
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
    if (decl.layout == "replicated") {
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
