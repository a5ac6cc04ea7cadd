//===- Zip.h - The zip container under .npz ---------------------*- C++ -*-===//
//
// Internal to the io library. Just enough of PKZIP for NumPy archives:
// reading stored and deflated entries (zip64 included, since numpy.savez
// forces zip64 headers), writing stored entries. Sizes and offsets come from
// the central directory; every one is checked against the file before use.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_IO_ZIP_H
#define ZERO_RUNTIME_IO_ZIP_H

#include "FileIO.h"

#include <vector>

namespace zero::rt::io {

struct ZipEntry {
  std::string name;
  uint16_t flags = 0;
  uint16_t method = 0;
  uint32_t crc32 = 0;
  uint64_t compressedSize = 0;
  uint64_t size = 0;
  uint64_t localHeaderOffset = 0;
};

/// The entries of the central directory, in archive order.
absl::StatusOr<std::vector<ZipEntry>> listZip(const InputFile &file);

/// The uncompressed bytes of `entry`, CRC-checked.
absl::StatusOr<std::vector<uint8_t>> readZipEntry(const InputFile &file,
                                                  const ZipEntry &entry);

/// Appends stored entries to `out`; finish() writes the central directory.
class ZipWriter {
public:
  explicit ZipWriter(AtomicOutputFile &out) : out_(out) {}
  /// One entry whose content is `head` followed by `data` (an npy header and
  /// the array), so that the array is never copied.
  absl::Status add(const std::string &name, const std::string &head,
                   const uint8_t *data, uint64_t dataBytes);
  absl::Status finish();

private:
  AtomicOutputFile &out_;
  std::vector<ZipEntry> entries_;
};

} // namespace zero::rt::io

#endif // ZERO_RUNTIME_IO_ZIP_H
