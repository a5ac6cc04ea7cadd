//===- SequentialRead.cpp - One pass over a file, O_DIRECT where allowed --===//
//
// A checkpoint load used to read each rank's file twice: once to check its
// CRC-32, then once more, through the page cache, for the tensors. Through
// the page cache this VM's disk reads at about 60% of what `dd
// iflag=direct` gets; a single O_DIRECT pass in 8 MiB pieces, the next
// piece on its way while this one is checksummed and copied, is what `dd`
// does and keeps the disk busy.
//
//===----------------------------------------------------------------------===//

#include "FileIO.h"

#include "zero/runtime/TensorFile.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <future>
#include <sys/stat.h>
#include <unistd.h>

namespace zero::rt::io {

namespace {
constexpr uint64_t kAlign = kDirectIoAlignment;
constexpr uint64_t kPieceBytes = uint64_t{8} << 20;

struct AlignedFree {
  void operator()(uint8_t *data) const { std::free(data); }
};
using AlignedBuffer = std::unique_ptr<uint8_t[], AlignedFree>;

/// Reads at least `needed` bytes at `offset` (an aligned `capacity` is
/// asked for, as O_DIRECT wants; the file's end may cut it short). On
/// EINVAL under O_DIRECT (a file system that accepted the flag at open but
/// not these reads) the descriptor drops O_DIRECT and the read is retried
/// through the page cache.
absl::Status readPiece(int fd, uint8_t *out, uint64_t offset, uint64_t needed,
                       uint64_t capacity, const std::string &path) {
  uint64_t got = 0;
  while (got < needed) {
    ssize_t n = ::pread(fd, out + got, capacity - got,
                        static_cast<off_t>(offset + got));
    if (n < 0) {
      if (errno == EINTR || dropDirectIo(fd, errno))
        continue;
      return errnoError(errno, path, "cannot read");
    }
    if (n == 0)
      return fileError(absl::StatusCode::kDataLoss, path,
                       absl::StrCat("file shrank while reading: byte ",
                                    offset + got, " is gone"));
    got += static_cast<uint64_t>(n);
    // Once O_DIRECT is dropped a short read may end off the alignment; the
    // rest of the piece is then read through the page cache as well.
  }
  return absl::OkStatus();
}
} // namespace

absl::Status readSequentially(
    const std::string &path, uint64_t begin, uint64_t end,
    absl::FunctionRef<absl::Status(uint64_t offset, const uint8_t *data,
                                   uint64_t length)>
        consume) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  if (fd < 0 && errno == EINVAL) // tmpfs and others refuse the flag
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errnoError(errno, path, "cannot open");
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat info;
  if (::fstat(fd, &info) != 0)
    return errnoError(errno, path, "cannot stat");
  uint64_t size = static_cast<uint64_t>(info.st_size);
  if (begin > end || end > size)
    return fileError(absl::StatusCode::kDataLoss, path,
                     absl::StrCat("truncated: bytes [", begin, ", ", end,
                                  ") are needed but the file has ", size,
                                  " bytes"));
  if (begin == end)
    return absl::OkStatus();

  AlignedBuffer buffers[2];
  for (AlignedBuffer &buffer : buffers) {
    void *memory = nullptr;
    if (::posix_memalign(&memory, kAlign, kPieceBytes) != 0)
      return fileError(absl::StatusCode::kResourceExhausted, path,
                       "cannot allocate the read buffers");
    buffer.reset(static_cast<uint8_t *>(memory));
  }
  // Pieces start at aligned offsets; the first one's leading bytes before
  // `begin` are read and skipped.
  uint64_t first = begin / kAlign * kAlign;
  auto start = [&](uint64_t at, int slot) {
    uint64_t needed = std::min(kPieceBytes, end - at);
    return std::async(std::launch::async, [=, &buffers, &path] {
      return readPiece(fd, buffers[slot].get(), at, needed, kPieceBytes, path);
    });
  };
  std::future<absl::Status> pending = start(first, 0);
  int slot = 0;
  for (uint64_t at = first; at < end; at += kPieceBytes, slot = 1 - slot) {
    absl::Status read = pending.get();
    if (!read.ok())
      return read;
    uint64_t next = at + kPieceBytes;
    if (next < end)
      pending = start(next, 1 - slot);
    uint64_t from = std::max(at, begin);
    uint64_t to = std::min(next, end);
    absl::Status consumed =
        consume(from, buffers[slot].get() + (from - at), to - from);
    if (!consumed.ok()) {
      if (pending.valid())
        pending.wait();
      return consumed;
    }
  }
  return absl::OkStatus();
}

} // namespace zero::rt::io
