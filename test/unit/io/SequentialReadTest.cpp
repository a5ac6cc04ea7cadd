//===- SequentialReadTest.cpp - One ordered pass, O_DIRECT where allowed --===//
//
// readSequentially reads aligned pieces with O_DIRECT where the file system
// allows it (ext4 here) and through the page cache where it does not
// (tmpfs: /dev/shm). Either way `consume` must see exactly the bytes of the
// range asked for, in order, whatever the range's alignment.
//
//===----------------------------------------------------------------------===//

#include "FileIO.h"
#include "IoTestUtil.h"

#include <sys/stat.h>
#include <unistd.h>

using namespace zero::rt;
using zero::rt::testing::randomBytes;
using zero::rt::testing::TempDir;
using zero::rt::testing::writeBytes;

namespace {

/// What readSequentially hands over for [begin, end), checked to arrive in
/// order and without gaps.
std::vector<uint8_t> streamed(const std::string &path, uint64_t begin,
                              uint64_t end) {
  std::vector<uint8_t> got;
  uint64_t expected = begin;
  absl::Status status = io::readSequentially(
      path, begin, end,
      [&](uint64_t offset, const uint8_t *data, uint64_t length) {
        EXPECT_EQ(offset, expected);
        EXPECT_GT(length, 0u);
        got.insert(got.end(), data, data + length);
        expected = offset + length;
        return absl::OkStatus();
      });
  EXPECT_TRUE(status.ok()) << status;
  return got;
}

void expectEveryRange(const std::string &path,
                      const std::vector<uint8_t> &bytes) {
  uint64_t size = bytes.size();
  // Whole, from an unaligned start, a range inside one piece, one across a
  // piece's end, the last byte, and an empty range at the end.
  std::vector<std::pair<uint64_t, uint64_t>> ranges = {
      {0, size},  {5000, size},     {3 * 4096 + 7, (8 << 20) + 5},
      {100, 200}, {size - 1, size}, {size, size}};
  for (auto [begin, end] : ranges) {
    std::vector<uint8_t> got = streamed(path, begin, end);
    ASSERT_EQ(got.size(), end - begin) << "[" << begin << ", " << end << ")";
    EXPECT_TRUE(std::equal(got.begin(), got.end(), bytes.begin() + begin))
        << "[" << begin << ", " << end << ")";
  }
}

} // namespace

TEST(SequentialRead, GivesEveryRangeOnADiskFileSystem) {
  TempDir dir;
  std::vector<uint8_t> bytes = randomBytes((size_t{17} << 20) + 1234, 5);
  writeBytes(dir.file("data.bin"), bytes);
  expectEveryRange(dir.file("data.bin"), bytes);
}

TEST(SequentialRead, GivesEveryRangeWhereODirectIsRefused) {
  struct stat info;
  if (::stat("/dev/shm", &info) != 0 || !S_ISDIR(info.st_mode))
    GTEST_SKIP() << "no /dev/shm on this machine";
  std::string path =
      "/dev/shm/zero-sequential-read-" + std::to_string(::getpid()) + ".bin";
  std::vector<uint8_t> bytes = randomBytes((size_t{9} << 20) + 3, 6);
  writeBytes(path, bytes);
  expectEveryRange(path, bytes);
  ::unlink(path.c_str());
}

TEST(SequentialRead, RefusesARangePastTheEnd) {
  TempDir dir;
  writeBytes(dir.file("short.bin"), randomBytes(10000, 7));
  absl::Status status = io::readSequentially(
      dir.file("short.bin"), 0, 10001,
      [](uint64_t, const uint8_t *, uint64_t) { return absl::OkStatus(); });
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(status.message().find("truncated"), std::string::npos) << status;
}

TEST(SequentialRead, StopsAtTheFirstErrorOfTheConsumer) {
  TempDir dir;
  writeBytes(dir.file("data.bin"), randomBytes(size_t{30} << 20, 8));
  int calls = 0;
  absl::Status status = io::readSequentially(
      dir.file("data.bin"), 0, size_t{30} << 20,
      [&](uint64_t, const uint8_t *, uint64_t) {
        return ++calls == 2 ? absl::AbortedError("enough") : absl::OkStatus();
      });
  EXPECT_EQ(status, absl::AbortedError("enough"));
  EXPECT_EQ(calls, 2);
}

TEST(SequentialRead, RefusesAMissingFile) {
  absl::Status status = io::readSequentially(
      "/nonexistent/zero.bin", 0, 1,
      [](uint64_t, const uint8_t *, uint64_t) { return absl::OkStatus(); });
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("/nonexistent/zero.bin"), std::string::npos);
}
