//===- TensorFile.h - Tensors on disk: safetensors, npy, npz ----*- C++ -*-===//
//
// Initial parameters come from `.safetensors`, data sets from `.npy`/`.npz`,
// and checkpoints are written as `.safetensors`. Files come from other tools
// and from users, so every reader validates everything it is given and
// answers a malformed file with a Status naming the file and the problem;
// nothing here throws or aborts on bad input.
//
// Only little-endian, C-ordered data of the runtime's element types is
// accepted: converting float64 or big-endian data silently would hide a
// doubled memory footprint or a wrong export from the user.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_TENSORFILE_H
#define ZERO_RUNTIME_TENSORFILE_H

#include "zero/runtime/DType.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace zero::rt {

/// A dense, C-ordered tensor in host memory; `data` holds exactly
/// numElements() * dtypeBytes(dtype) bytes in little-endian order.
struct HostTensor {
  DType dtype = DType::f32;
  /// Empty for a scalar.
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  /// -1 for a negative dimension or a product past 2^62; checkTensor says
  /// which.
  int64_t numElements() const;
};

using TensorMap = std::map<std::string, HostTensor>;

/// The CRC-32 of one tensor's type, shape and bytes, continued from `crc`.
uint32_t tensorChecksum(const HostTensor &tensor, uint32_t crc = 0);

/// The CRC-32 of every tensor's name, type, shape and bytes, in name order:
/// what ranks compare to check that they were given the same state.
uint32_t stateChecksum(const TensorMap &tensors);

/// Checks that `tensor.data` has the size its shape and dtype call for and
/// that no dimension is negative; `what` names it in the message.
absl::Status checkTensor(const HostTensor &tensor, absl::string_view what);

/// Safetensors: 8-byte little-endian header length, a JSON header, then the
/// data. Element types F32, BF16, F16, I32, I64.
absl::StatusOr<TensorMap> readSafetensors(const std::string &path);
/// Like readSafetensors, also returning the `__metadata__` string map.
absl::StatusOr<TensorMap>
readSafetensors(const std::string &path,
                std::map<std::string, std::string> *metadata);
/// Where a tensor of a safetensors file is, without its data.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  /// Absolute byte offset of the tensor's first byte in the file, and its
  /// size in bytes.
  uint64_t offset = 0;
  uint64_t bytes = 0;
};
struct SafetensorsIndex {
  std::vector<SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;
  uint64_t fileBytes = 0;
};
/// The header of a safetensors file, checked as readSafetensors checks it,
/// without reading any tensor's data.
absl::StatusOr<SafetensorsIndex> readSafetensorsIndex(const std::string &path);
/// Writes atomically (temporary file in the same directory, then rename), so
/// that a crash never leaves a half-written checkpoint under `path`.
absl::Status
writeSafetensors(const std::string &path, const TensorMap &tensors,
                 const std::map<std::string, std::string> &metadata = {});

/// Writes a safetensors file tensor by tensor, for files larger than
/// memory: every tensor is declared up front (name, dtype, shape; offsets
/// are assigned in that order), then their bytes are written in that order
/// in pieces of any size. Atomic like writeSafetensors: nothing appears
/// under `path` unless commit() succeeds.
/// What O_DIRECT wants aligned (addresses, sizes, file offsets): the
/// logical block size, 512 or 4096 bytes; 4096 suits both.
inline constexpr uint64_t kDirectIoAlignment = 4096;

class SafetensorsWriter {
public:
  static absl::StatusOr<std::unique_ptr<SafetensorsWriter>>
  create(const std::string &path, const std::vector<SafetensorsEntry> &tensors,
         const std::map<std::string, std::string> &metadata = {});
  /// The file offset of the first tensor's bytes in the file create()
  /// writes for these arguments: the size of the header before them.
  static absl::StatusOr<uint64_t>
  dataOffset(const std::string &path,
             const std::vector<SafetensorsEntry> &tensors,
             const std::map<std::string, std::string> &metadata = {});
  ~SafetensorsWriter();
  absl::Status write(const void *data, uint64_t bytes);
  /// As write(), but bytes whose address agrees with their file offset
  /// modulo kDirectIoAlignment are written to the disk from where they are,
  /// without a copy: they must stay unchanged until commit() returns or the
  /// writer is dropped.
  absl::Status writeInPlace(const void *data, uint64_t bytes);
  /// Fails unless exactly the declared bytes were written.
  absl::Status commit();
  /// The whole file's size and CRC-32 (zlib's), header included, computed
  /// as it is written: no second read.
  uint64_t fileBytes() const;
  uint32_t fileCrc32() const;

private:
  struct State;
  explicit SafetensorsWriter(std::unique_ptr<State> state);
  std::unique_ptr<State> state;
};

/// NumPy `.npy` versions 1.0, 2.0 and 3.0 with descr '<f4', '<f2', '<i4' or
/// '<i8' in C order. There is no bf16 in NumPy: writeNpy refuses it.
absl::StatusOr<HostTensor> readNpy(const std::string &path);
/// Written atomically, as version 1.0 (2.0 when the header needs it).
absl::Status writeNpy(const std::string &path, const HostTensor &tensor);

/// NumPy `.npz`: a zip archive of `.npy` entries, stored or deflated, zip64
/// included (numpy.savez writes zip64 headers). Keys drop the ".npy" suffix.
absl::StatusOr<TensorMap> readNpz(const std::string &path);
/// Reads one array of an `.npz`; a missing key is a NotFound error listing
/// the keys that are there.
absl::StatusOr<HostTensor> readNpzEntry(const std::string &path,
                                        absl::string_view key);
/// Stored entries (no compression), written atomically.
absl::Status writeNpz(const std::string &path, const TensorMap &tensors);

/// Looks `name` up in tensors read from `path`; a missing name is a NotFound
/// error listing what the file has.
absl::StatusOr<const HostTensor *> findTensor(const TensorMap &tensors,
                                              absl::string_view name,
                                              absl::string_view path);

} // namespace zero::rt

#endif // ZERO_RUNTIME_TENSORFILE_H
