//===- TensorFile.cpp - Helpers shared by the tensor file formats ---------===//

#include "zero/runtime/TensorFile.h"

#include "Crc32.h"
#include "FileIO.h"

#include "absl/strings/str_join.h"

namespace zero::rt {

int64_t HostTensor::numElements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    if (!io::multiplyChecked(dim, &count))
      return -1;
  return count;
}

absl::Status checkTensor(const HostTensor &tensor, absl::string_view what) {
  int64_t bytes = dtypeBytes(tensor.dtype);
  for (int64_t dim : tensor.shape)
    if (!io::multiplyChecked(dim, &bytes))
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": invalid shape [", absl::StrJoin(tensor.shape, ", "), "]"));
  if (static_cast<uint64_t>(bytes) != tensor.data.size())
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": shape [", absl::StrJoin(tensor.shape, ", "),
                     "] of ", dtypeName(tensor.dtype), " needs ", bytes,
                     " bytes but the data has ", tensor.data.size()));
  return absl::OkStatus();
}

absl::StatusOr<const HostTensor *> findTensor(const TensorMap &tensors,
                                              absl::string_view name,
                                              absl::string_view path) {
  auto it = tensors.find(std::string(name));
  if (it != tensors.end())
    return &it->second;
  std::vector<std::string> names;
  for (const auto &entry : tensors)
    names.push_back(entry.first);
  return io::fileError(absl::StatusCode::kNotFound, path,
                       absl::StrCat("no tensor '", name, "' (the file has ",
                                    io::listNames(names), ")"));
}

uint32_t tensorChecksum(const HostTensor &tensor, uint32_t crc) {
  int64_t header[2] = {static_cast<int64_t>(tensor.dtype),
                       static_cast<int64_t>(tensor.shape.size())};
  crc = io::crc32(crc, header, sizeof(header));
  crc = io::crc32(crc, tensor.shape.data(),
                  tensor.shape.size() * sizeof(int64_t));
  return io::crc32(crc, tensor.data.data(), tensor.data.size());
}

uint32_t stateChecksum(const TensorMap &tensors) {
  uint32_t crc = 0;
  for (const auto &[name, tensor] : tensors) {
    // The name's terminating NUL keeps "ab" + "c" apart from "a" + "bc".
    crc = io::crc32(crc, name.c_str(), name.size() + 1);
    crc = tensorChecksum(tensor, crc);
  }
  return crc;
}

} // namespace zero::rt
