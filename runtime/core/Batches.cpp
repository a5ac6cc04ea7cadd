//===- Batches.cpp - Every step's inputs
//-----------------------------------===//

#include "zero/runtime/TrainingState.h"
#include "zero/support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

using namespace zero::rt;

namespace {

/// One input buffer and the part of the global batch this rank holds.
struct InputSlot {
  int buffer = -1;
  const BufferDecl *decl = nullptr;
  /// Rows this rank holds, and rows of the global batch.
  int64_t localRows = 1;
  int64_t globalRows = 1;
  int64_t rowElements = 1;
  /// First row of the global batch this rank holds.
  int64_t firstRow = 0;
};

std::vector<InputSlot> getInputSlots(Executor &executor) {
  std::vector<InputSlot> slots;
  Communicator &comm = executor.communicator();
  const std::vector<BufferDecl> &decls = executor.buffers();
  for (size_t index = 0; index < decls.size(); ++index) {
    const BufferDecl &decl = decls[index];
    // A count of labels is computed from the batch, not part of it.
    if (decl.role != BufferRole::input || !decl.labelCountOf.empty())
      continue;
    InputSlot slot;
    slot.buffer = static_cast<int>(index);
    slot.decl = &decl;
    if (!decl.spec.shape.empty()) {
      slot.localRows = decl.spec.shape[0];
      slot.rowElements =
          slot.localRows ? decl.spec.numElements() / slot.localRows : 0;
    }
    slot.globalRows = slot.localRows;
    if (decl.batchSplit()) {
      // Tensor-parallel ranks (the axes not in batchAxes) share a slice.
      slot.globalRows = slot.localRows * executor.extentAlong(decl.batchAxes);
      slot.firstRow =
          slot.localRows * executor.indexAlong(decl.batchAxes, comm.rank());
    }
    slots.push_back(slot);
  }
  return slots;
}

int64_t getGlobalBatch(const std::vector<InputSlot> &slots) {
  for (const InputSlot &slot : slots)
    if (slot.decl->batchSplit())
      return slot.globalRows;
  return slots.empty() ? 0 : slots.front().globalRows;
}

template <typename T> void storeIndex(void *out, int64_t index, int64_t value) {
  static_cast<T *>(out)[index] = static_cast<T>(value);
}

int64_t loadIndex(const void *data, DType dtype, int64_t index) {
  return dtype == DType::i32 ? static_cast<const int32_t *>(data)[index]
                             : static_cast<const int64_t *>(data)[index];
}

void storeIndexAs(void *out, DType dtype, int64_t index, int64_t value) {
  if (dtype == DType::i32)
    storeIndex<int32_t>(out, index, value);
  else
    storeIndex<int64_t>(out, index, value);
}

class SyntheticBatches : public BatchSource {
public:
  SyntheticBatches(Executor &executor, uint64_t seed)
      : executor(executor), seed(seed), slots(getInputSlots(executor)) {}

  absl::Status fill(int64_t step, int64_t micro) override;
  int64_t globalBatch() const override {
    return getGlobalBatch(slots) * executor.accumulateSteps();
  }
  std::string describe() const override {
    return absl::StrCat("synthetic (seed ", seed, ")");
  }

private:
  void fillLabels(const InputSlot &slot, int64_t step, int64_t micro,
                  void *out);

  Executor &executor;
  uint64_t seed;
  std::vector<InputSlot> slots;
  /// Each slot's batch as drawn on the host.
  std::vector<std::vector<uint8_t>> host;
};

absl::Status SyntheticBatches::fill(int64_t step, int64_t micro) {
  // Features and tokens first: labels are computed from them. Everything is
  // drawn on the host, then copied to the backend's buffers.
  host.resize(slots.size());
  for (size_t index = 0; index < slots.size(); ++index) {
    const InputSlot &slot = slots[index];
    const BufferDecl &decl = *slot.decl;
    host[index].resize(decl.bytes);
    void *out = host[index].data();
    // Drawn per element of the optimizer step's global batch.
    int64_t begin =
        (micro * slot.globalRows + slot.firstRow) * slot.rowElements;
    int64_t count = decl.spec.numElements();
    bool positions = decl.indexOf == "embedding" &&
                     decl.spec.shape.size() >= 2 &&
                     decl.indexBound == decl.spec.shape.back();
    if (positions) {
      for (int64_t index = 0; index < count; ++index)
        storeIndexAs(out, decl.spec.dtype, index,
                     index % decl.spec.shape.back());
    } else if (decl.indexOf != "labels") {
      fillUniform(seed, decl.name, step, begin, count, decl.spec.dtype, out,
                  decl.indexBound);
    }
  }
  for (size_t index = 0; index < slots.size(); ++index)
    if (slots[index].decl->indexOf == "labels")
      fillLabels(slots[index], step, micro, host[index].data());
  for (size_t index = 0; index < slots.size(); ++index)
    ZERO_RETURN_IF_ERROR(
        executor.writeBuffer(slots[index].buffer, host[index].data()));
  return absl::OkStatus();
}

/// Labels a model can learn: a fixed function of the token at the same
/// position (language models), or the class a fixed random linear teacher
/// picks for the row's features (classifiers).
void SyntheticBatches::fillLabels(const InputSlot &labels, int64_t step,
                                  int64_t micro, void *out) {
  const BufferDecl &decl = *labels.decl;
  int64_t classes = std::max<int64_t>(1, decl.indexBound);
  int64_t count = decl.spec.numElements();
  for (size_t index = 0; index < slots.size(); ++index) {
    const InputSlot &slot = slots[index];
    if (slot.decl->indexOf != "embedding" ||
        slot.decl->spec.shape != decl.spec.shape ||
        slot.decl->indexBound == slot.decl->spec.shape.back())
      continue;
    const void *tokens = host[index].data();
    for (int64_t index = 0; index < count; ++index)
      storeIndexAs(out, decl.spec.dtype, index,
                   (loadIndex(tokens, slot.decl->spec.dtype, index) * 7 + 3) %
                       classes);
    return;
  }
  for (size_t index = 0; index < slots.size(); ++index) {
    const InputSlot &slot = slots[index];
    if (!isFloat(slot.decl->spec.dtype) || slot.localRows != labels.localRows)
      continue;
    const void *features = host[index].data();
    InitSpec teacher = InitSpec::normal(0.0, 1.0);
    for (int64_t row = 0; row < labels.localRows; ++row) {
      int64_t best = 0;
      double bestScore = -INFINITY;
      for (int64_t label = 0; label < classes; ++label) {
        double score = 0;
        for (int64_t column = 0; column < slot.rowElements; ++column)
          score += loadAsFloat(features, slot.decl->spec.dtype,
                               row * slot.rowElements + column) *
                   initializedValue(teacher, seed, "teacher",
                                    column * classes + label);
        if (score > bestScore) {
          bestScore = score;
          best = label;
        }
      }
      for (int64_t column = 0; column < labels.rowElements; ++column)
        storeIndexAs(out, decl.spec.dtype, row * labels.rowElements + column,
                     best);
    }
    return;
  }
  fillUniform(seed, decl.name, step,
              (micro * labels.globalRows + labels.firstRow) *
                  labels.rowElements,
              count, decl.spec.dtype, out, classes);
}

class FileBatches : public BatchSource {
public:
  FileBatches(Executor &executor, std::string path, TensorMap arrays,
              std::vector<InputSlot> slots, int64_t batches)
      : executor(executor), path(std::move(path)), arrays(std::move(arrays)),
        slots(std::move(slots)), batches(batches) {}

  absl::Status fill(int64_t step, int64_t micro) override {
    int64_t batch = (step - 1) % batches;
    int64_t microSteps = executor.accumulateSteps();
    for (const InputSlot &slot : slots) {
      const HostTensor &array = arrays.at(slot.decl->name);
      int64_t elementBytes = dtypeBytes(slot.decl->spec.dtype);
      int64_t row =
          (batch * microSteps + micro) * slot.globalRows + slot.firstRow;
      ZERO_RETURN_IF_ERROR(executor.writeBuffer(
          slot.buffer,
          array.data.data() + row * slot.rowElements * elementBytes));
    }
    return absl::OkStatus();
  }
  int64_t batchesHeld() const override { return batches; }
  int64_t globalBatch() const override {
    return getGlobalBatch(slots) * executor.accumulateSteps();
  }
  std::string describe() const override {
    return absl::StrCat(path, " (", batches, " global batches)");
  }

private:
  Executor &executor;
  std::string path;
  TensorMap arrays;
  std::vector<InputSlot> slots;
  int64_t batches;
};

std::string describeInputs(const std::vector<InputSlot> &slots) {
  std::vector<std::string> parts;
  for (const InputSlot &slot : slots) {
    std::vector<int64_t> shape = slot.decl->spec.shape;
    if (!shape.empty())
      shape[0] = slot.globalRows;
    parts.push_back(absl::StrCat(slot.decl->name, " ",
                                 dtypeName(slot.decl->spec.dtype), "[",
                                 absl::StrJoin(shape, ", "), "]"));
  }
  return absl::StrJoin(parts, ", ");
}

} // namespace

absl::StatusOr<std::unique_ptr<BatchSource>>
zero::rt::createSyntheticBatches(Executor &executor, uint64_t seed) {
  return std::make_unique<SyntheticBatches>(executor, seed);
}

absl::StatusOr<std::unique_ptr<BatchSource>>
zero::rt::createFileBatches(Executor &executor, const std::string &path,
                            bool checkFinite) {
  std::vector<InputSlot> slots = getInputSlots(executor);
  TensorMap arrays;
  bool npy = path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
  if (npy) {
    if (slots.size() != 1)
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": a .npy file feeds a program with one input; this one has ",
          slots.size(), " (", describeInputs(slots),
          "): use an .npz with one array per input"));
    ZERO_ASSIGN_OR_RETURN(HostTensor array, readNpy(path));
    arrays[slots.front().decl->name] = std::move(array);
  } else {
    ZERO_ASSIGN_OR_RETURN(TensorMap read, readNpz(path));
    arrays = std::move(read);
  }
  return createArrayBatches(executor, std::move(arrays), path, checkFinite);
}

/// The first element of a float array that is NaN or infinite, or -1.
static int64_t firstNonFinite(const HostTensor &array) {
  int64_t count = array.numElements();
  if (array.dtype == DType::f32) {
    // A NaN or an infinity has every exponent bit set. Blocks are scanned
    // without an early exit, so that the loop vectorizes (bench/
    // finite_check.py), and the one that holds such a value is searched.
    const uint8_t *bytes = array.data.data();
    constexpr int64_t kBlock = 4096;
    for (int64_t start = 0; start < count; start += kBlock) {
      int64_t end = std::min(count, start + kBlock);
      uint32_t found = 0;
      for (int64_t index = start; index < end; ++index) {
        uint32_t bits;
        std::memcpy(&bits, bytes + 4 * index, 4);
        found |= (bits & 0x7f800000u) == 0x7f800000u;
      }
      if (!found)
        continue;
      for (int64_t index = start; index < end; ++index) {
        uint32_t bits;
        std::memcpy(&bits, bytes + 4 * index, 4);
        if ((bits & 0x7f800000u) == 0x7f800000u)
          return index;
      }
    }
    return -1;
  }
  for (int64_t index = 0; index < count; ++index)
    if (!std::isfinite(loadAsFloat(array.data.data(), array.dtype, index)))
      return index;
  return -1;
}

/// `array` in the input's element type when a conversion loses nothing a
/// user would care about: a float array for a float input of another
/// width (numpy has no bfloat16: f32 arrays feed a bf16 step, rounded to
/// nearest even), int32 and int64 ids either way (numpy's default integer
/// is int64) when every value fits. False when the kinds differ.
static absl::StatusOr<bool> convertArray(HostTensor &array, DType dtype,
                                         const std::string &what) {
  if (array.dtype == dtype || isFloat(array.dtype) != isFloat(dtype))
    return false;
  HostTensor converted;
  converted.dtype = dtype;
  converted.shape = array.shape;
  int64_t count = array.numElements();
  converted.data.resize(static_cast<size_t>(count * dtypeBytes(dtype)));
  for (int64_t index = 0; index < count; ++index) {
    if (isFloat(dtype)) {
      storeFromFloat(converted.data.data(), dtype, index,
                     loadAsFloat(array.data.data(), array.dtype, index));
      continue;
    }
    int64_t value = loadIndex(array.data.data(), array.dtype, index);
    if (dtype == DType::i32 && (value < INT32_MIN || value > INT32_MAX))
      return absl::InvalidArgumentError(
          absl::StrCat(what, " holds ", value, " at element ", index,
                       ", which does not fit the input's i32"));
    storeIndexAs(converted.data.data(), dtype, index, value);
  }
  array = std::move(converted);
  return true;
}

absl::StatusOr<std::unique_ptr<BatchSource>>
zero::rt::createArrayBatches(Executor &executor, TensorMap arrays,
                             const std::string &what, bool checkFinite,
                             bool oneBatch) {
  std::vector<InputSlot> slots = getInputSlots(executor);
  // An array no input takes is a mistake (a batch built for another
  // program, inputs out of order), not something to ignore.
  for (const auto &entry : arrays) {
    const std::string &name = entry.first;
    if (std::none_of(slots.begin(), slots.end(), [&](const InputSlot &slot) {
          return slot.decl->name == name;
        }))
      return absl::InvalidArgumentError(
          absl::StrCat(what, " has an array '", name,
                       "' that no input takes; the program's inputs are ",
                       describeInputs(slots)));
  }
  int64_t batches = -1;
  for (const InputSlot &slot : slots) {
    const BufferDecl &decl = *slot.decl;
    auto it = arrays.find(decl.name);
    if (it == arrays.end())
      return absl::InvalidArgumentError(
          absl::StrCat(what, " has no array '", decl.name,
                       "'; the program's inputs are ", describeInputs(slots)));
    if (absl::StatusOr<bool> converted =
            convertArray(it->second, decl.spec.dtype,
                         absl::StrCat(what, ": array '", decl.name, "'"));
        !converted.ok())
      return converted.status();
    const HostTensor &array = it->second;
    std::vector<int64_t> expected = decl.spec.shape;
    // One optimizer step's rows: every micro-batch's.
    int64_t stepRows = slot.globalRows * executor.accumulateSteps();
    bool rowsOk = !array.shape.empty() && !expected.empty() &&
                  array.shape[0] > 0 &&
                  (oneBatch ? array.shape[0] == stepRows
                            : array.shape[0] % stepRows == 0);
    bool restOk = array.shape.size() == expected.size() &&
                  std::equal(array.shape.begin() + (expected.empty() ? 0 : 1),
                             array.shape.end(),
                             expected.begin() + (expected.empty() ? 0 : 1));
    if (!rowsOk || !restOk || array.dtype != decl.spec.dtype) {
      if (!expected.empty())
        expected[0] = stepRows;
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": array '", decl.name, "' is ", dtypeName(array.dtype), "[",
          absl::StrJoin(array.shape, ", "), "], expected ",
          dtypeName(decl.spec.dtype), "[", absl::StrJoin(expected, ", "), "]",
          oneBatch ? absl::StrCat(" (one global batch: ", stepRows,
                                  " rows, every rank passing all of them)")
                   : absl::StrCat(" (or a multiple of ", stepRows,
                                  " rows: one global batch per optimizer "
                                  "step, used in turn)")));
    }
    int64_t count = array.shape[0] / stepRows;
    if (batches >= 0 && count != batches)
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": array '", decl.name, "' holds ", count,
          " global batches, but the arrays before it hold ", batches));
    batches = count;
    if (checkFinite && isFloat(array.dtype))
      if (int64_t index = firstNonFinite(array); index >= 0) {
        float value = loadAsFloat(array.data.data(), array.dtype, index);
        int64_t rowElements = array.numElements() / array.shape[0];
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": array '", decl.name, "' holds ", value, " at element ",
            index, " (row ", index / rowElements,
            "); a non-finite input makes every weight it reaches NaN, "
            "whatever the loss shows. Clean the batch, or turn the check "
            "off (Trainer.check_finite = False) to train on it as PyTorch "
            "would"));
      }
    if (decl.indexBound > 0 && !isFloat(array.dtype))
      for (int64_t index = 0; index < array.numElements(); ++index) {
        int64_t id = loadIndex(array.data.data(), array.dtype, index);
        if ((id < 0 || id >= decl.indexBound) && id != decl.indexIgnored)
          return absl::InvalidArgumentError(absl::StrCat(
              what, ": array '", decl.name, "' holds ", id, " at element ",
              index, "; the program accepts ids in [0, ", decl.indexBound, ")",
              decl.indexIgnored
                  ? absl::StrCat(" and ", *decl.indexIgnored, " (ignored)")
                  : ""));
      }
  }
  return std::make_unique<FileBatches>(executor, what, std::move(arrays),
                                       std::move(slots),
                                       std::max<int64_t>(batches, 1));
}

/// The labels other than `ignored` in the box [begin, end) of a row-major
/// tensor of `shape`.
static int64_t countKept(const void *data, DType dtype,
                         const std::vector<int64_t> &shape,
                         const std::vector<int64_t> &begin,
                         const std::vector<int64_t> &end, int64_t ignored) {
  size_t rank = shape.size();
  for (size_t d = 0; d < rank; ++d)
    if (begin[d] >= end[d])
      return 0;
  std::vector<int64_t> at = begin;
  int64_t kept = 0;
  while (true) {
    int64_t flat = 0;
    for (size_t d = 0; d < rank; ++d)
      flat = flat * shape[d] + at[d];
    kept += loadIndex(data, dtype, flat) != ignored;
    // The next position of the box, last dimension fastest.
    size_t d = rank;
    while (d > 0 && ++at[d - 1] == end[d - 1]) {
      at[d - 1] = begin[d - 1];
      --d;
    }
    if (d == 0)
      return kept;
  }
}

/// Fills each label-count input (BufferDecl::labelCountOf) with the labels
/// kept over every micro-batch of `step` this rank holds, divided by the
/// micro-batches: a pass over the micro-batches before the first runs.
static absl::Status fillLabelCounts(Executor &executor, BatchSource &batches,
                                    int64_t step) {
  struct Count {
    int buffer, labels;
    DType dtype;
    std::vector<int64_t> shape, begin, end;
    int64_t ignored;
    double kept = 0;
  };
  std::vector<Count> counts;
  const std::vector<BufferDecl> &decls = executor.buffers();
  for (size_t index = 0; index < decls.size(); ++index) {
    const BufferDecl &decl = decls[index];
    if (decl.labelCountOf.empty())
      continue;
    // The loader checked that it names an input and a box within it.
    int labels = executor.findBuffer(decl.labelCountOf);
    const TensorSpec &spec = decls[labels].spec;
    counts.push_back({static_cast<int>(index), labels, spec.dtype, spec.shape,
                      decl.labelCountBegin, decl.labelCountEnd,
                      decl.labelCountIgnored});
  }
  if (counts.empty())
    return absl::OkStatus();
  int64_t microSteps = executor.accumulateSteps();
  std::vector<uint8_t> host;
  for (int64_t micro = 0; micro < microSteps; ++micro) {
    ZERO_RETURN_IF_ERROR(batches.fill(step, micro));
    for (Count &count : counts) {
      host.resize(decls[count.labels].bytes);
      ZERO_RETURN_IF_ERROR(executor.readBuffer(count.labels, host.data()));
      count.kept += countKept(host.data(), count.dtype, count.shape,
                              count.begin, count.end, count.ignored);
    }
  }
  for (const Count &count : counts) {
    // Exact in f32 up to 2^24 labels, as train.count_labels.
    float value =
        static_cast<float>(count.kept / static_cast<double>(microSteps));
    ZERO_RETURN_IF_ERROR(executor.writeBuffer(count.buffer, &value));
  }
  return absl::OkStatus();
}

absl::StatusOr<float> zero::rt::runTrainingStep(Executor &executor,
                                                BatchSource &batches,
                                                int64_t step) {
  int loss = executor.findBuffer("output0");
  int64_t microSteps = executor.accumulateSteps();
  ZERO_RETURN_IF_ERROR(fillLabelCounts(executor, batches, step));
  // Summed in micro-batch order and divided once, like the gradients.
  float lossSum = 0;
  for (int64_t micro = 0; micro < microSteps; ++micro) {
    ZERO_RETURN_IF_ERROR(batches.fill(step, micro));
    ZERO_RETURN_IF_ERROR(executor.runMicroStep(step, micro));
    lossSum += loss < 0 ? NAN : executor.readScalar(loss);
  }
  ZERO_RETURN_IF_ERROR(executor.runApply(step));
  return microSteps == 1 ? lossSum : lossSum / static_cast<float>(microSteps);
}

int64_t zero::rt::globalBatchRows(Executor &executor) {
  return getGlobalBatch(getInputSlots(executor)) * executor.accumulateSteps();
}
