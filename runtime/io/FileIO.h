//===- FileIO.h - Bounded reads and atomic writes ----------------*- C++
//-*-===//
//
// Internal to the io library. Readers never trust a size or offset found in
// a file: every read goes through InputFile::readAt, which turns a read past
// the end into a "truncated" Status instead of a short read.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_IO_FILEIO_H
#define ZERO_RUNTIME_IO_FILEIO_H

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zero::rt::io {

/// "<path>: <message>" with the status code `code`.
absl::Status fileError(absl::StatusCode code, absl::string_view path,
                       absl::string_view message);
/// "<path>: <action>: <strerror(error)>", with the code errno maps to.
absl::Status errnoError(int error, absl::string_view path,
                        absl::string_view action);
inline absl::Status formatError(absl::string_view path,
                                absl::string_view message) {
  return fileError(absl::StatusCode::kInvalidArgument, path, message);
}

/// "'a', 'b', 'c'" for a message; "none" when empty, elided past `limit`
/// since a model has thousands of tensors.
std::string listNames(const std::vector<std::string> &names, size_t limit = 20);

/// Multiplies `*product` by `a` (both >= 0); false past 2^62, which no real
/// tensor reaches and which keeps later byte counts far from overflowing.
bool multiplyChecked(int64_t a, int64_t *product);

class InputFile {
public:
  static absl::StatusOr<std::unique_ptr<InputFile>>
  open(const std::string &path);
  ~InputFile();
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;

  const std::string &path() const { return path_; }
  uint64_t size() const { return size_; }
  /// Reads [offset, offset + length); `what` names the part for the error
  /// when the file ends too early.
  absl::Status readAt(uint64_t offset, uint64_t length, void *out,
                      absl::string_view what) const;

private:
  InputFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  std::string path_;
  int fd_;
  uint64_t size_;
};

/// After a read or write on `fd` failed with `error`: true when that was
/// EINVAL under O_DIRECT (a file system that accepted the flag at open but
/// not these sizes or addresses) and the descriptor now goes through the
/// page cache, so that the call can be retried.
bool dropDirectIo(int fd, int error);

/// Streams bytes [begin, end) of `path` to `consume` in order, in pieces
/// of up to 8 MiB (`offset` is each piece's position in the file), reading
/// the next piece while `consume` works on this one. Where the file system
/// allows it the reads bypass the page cache (O_DIRECT, as `dd
/// iflag=direct`): a file read once, to be checked and copied, gains
/// nothing from the cache and reads at the disk's speed. The first error,
/// of the reads or of `consume`, ends the pass.
absl::Status readSequentially(
    const std::string &path, uint64_t begin, uint64_t end,
    absl::FunctionRef<absl::Status(uint64_t offset, const uint8_t *data,
                                   uint64_t length)>
        consume);

/// Writes to a temporary file beside `path` and renames it over `path` on
/// commit(); dropping it uncommitted removes the temporary file, so readers
/// see the old file or the complete new one, never a partial one.
/// A file written under a temporary name in the target's directory and
/// renamed over the target by commit(), after fsync: readers see the old
/// file or the whole new one, never a part, whatever crashes when.
///
/// Where the file system allows it (not tmpfs), the data bypasses the page
/// cache: it is staged in two 8 MiB aligned buffers and written with
/// O_DIRECT by a writer thread while the caller fills the other buffer, as
/// `dd oflag=direct` writes; a copy through the page cache ran at a fifth of
/// the disk's speed (docs/benchmarks.md, "Checkpoint save and load").
/// Elsewhere writes are buffered through the page cache.
class AtomicOutputFile {
public:
  static absl::StatusOr<std::unique_ptr<AtomicOutputFile>>
  create(const std::string &path);
  ~AtomicOutputFile();
  AtomicOutputFile(const AtomicOutputFile &) = delete;
  AtomicOutputFile &operator=(const AtomicOutputFile &) = delete;

  const std::string &path() const { return path_; }
  /// Buffered: an .npz of many small arrays is three small pieces per
  /// entry, which must not cost three system calls each.
  absl::Status write(const void *data, uint64_t length);
  /// As write(), but under O_DIRECT the bytes are read where they are,
  /// without a copy, when `data` and the file position agree modulo 4096
  /// (kDirectIoAlignment): `data` must stay unchanged until commit()
  /// returns or the file is dropped. An asynchronous checkpoint save lays
  /// its snapshot out so, and saves a copy of the whole state per save.
  absl::Status writeInPlace(const void *data, uint64_t length);
  uint64_t bytesWritten() const { return written_; }
  absl::Status commit();

private:
  struct DirectWriter;
  AtomicOutputFile(std::string path, std::string tempPath, int fd);
  std::string path_;
  std::string tempPath_;
  int fd_;
  absl::Status flush();
  absl::Status writeDirect(const uint8_t *data, uint64_t length);
  std::vector<uint8_t> buffer_;
  /// Set while the file is written with O_DIRECT.
  std::unique_ptr<DirectWriter> direct_;
  uint64_t written_ = 0;
  bool committed_ = false;
};

/// Little-endian field access; the formats here are little-endian whatever
/// the host, and unaligned.
inline uint16_t loadLE16(const uint8_t *p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
inline uint32_t loadLE32(const uint8_t *p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
inline uint64_t loadLE64(const uint8_t *p) {
  return static_cast<uint64_t>(loadLE32(p)) |
         (static_cast<uint64_t>(loadLE32(p + 4)) << 32);
}
inline void appendLE16(std::string &out, uint16_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>(v >> 8));
}
inline void appendLE32(std::string &out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void appendLE64(std::string &out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

} // namespace zero::rt::io

#endif // ZERO_RUNTIME_IO_FILEIO_H
