//===- FileIO.cpp - Bounded reads and atomic writes -----------------------===//

#include "FileIO.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

// The tensor formats are little-endian and tensors are copied to and from
// them byte for byte.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the tensor file readers assume a little-endian host"
#endif

namespace zero::rt::io {

absl::Status fileError(absl::StatusCode code, absl::string_view path,
                       absl::string_view message) {
  return absl::Status(code, absl::StrCat(path, ": ", message));
}

absl::Status errnoError(int error, absl::string_view path,
                        absl::string_view action) {
  return fileError(absl::ErrnoToStatusCode(error), path,
                   absl::StrCat(action, ": ", std::strerror(error)));
}

std::string listNames(const std::vector<std::string> &names, size_t limit) {
  if (names.empty())
    return "none";
  std::string out;
  for (size_t i = 0; i < names.size() && i < limit; ++i)
    absl::StrAppend(&out, i ? ", '" : "'", names[i], "'");
  if (names.size() > limit)
    absl::StrAppend(&out, ", ... (", names.size(), " in all)");
  return out;
}

bool multiplyChecked(int64_t a, int64_t *product) {
  constexpr int64_t limit = int64_t{1} << 62;
  if (a < 0 || *product < 0)
    return false;
  if (a != 0 && *product > limit / a)
    return false;
  *product *= a;
  return true;
}

bool dropDirectIo(int fd, int error) {
  int flags = ::fcntl(fd, F_GETFL);
  return error == EINVAL && flags >= 0 && (flags & O_DIRECT) &&
         ::fcntl(fd, F_SETFL, flags & ~O_DIRECT) == 0;
}

absl::StatusOr<std::unique_ptr<InputFile>>
InputFile::open(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errnoError(errno, path, "cannot open");
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    int error = errno;
    ::close(fd);
    return errnoError(error, path, "cannot stat");
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return formatError(path, "not a regular file");
  }
  return std::unique_ptr<InputFile>(
      new InputFile(path, fd, static_cast<uint64_t>(info.st_size)));
}

InputFile::~InputFile() { ::close(fd_); }

absl::Status InputFile::readAt(uint64_t offset, uint64_t length, void *out,
                               absl::string_view what) const {
  if (offset > size_ || length > size_ - offset)
    return fileError(absl::StatusCode::kDataLoss, path_,
                     absl::StrCat("truncated: ", what, " needs bytes [", offset,
                                  ", ", offset + length, ") but the file has ",
                                  size_, " bytes"));
  auto *dst = static_cast<uint8_t *>(out);
  while (length > 0) {
    // pread may return less than asked for; large tensors need several calls.
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(length, 1u << 30));
    ssize_t got = ::pread(fd_, dst, chunk, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR)
        continue;
      return errnoError(errno, path_, absl::StrCat("cannot read ", what));
    }
    if (got == 0)
      return fileError(absl::StatusCode::kDataLoss, path_,
                       absl::StrCat("file shrank while reading ", what));
    dst += got;
    offset += static_cast<uint64_t>(got);
    length -= static_cast<uint64_t>(got);
  }
  return absl::OkStatus();
}

} // namespace zero::rt::io
