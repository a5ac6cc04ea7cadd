//===- AtomicOutputFileTest.cpp - Write, sync, rename; O_DIRECT -----------===//
//
// AtomicOutputFile writes through two aligned staging buffers with O_DIRECT
// where the file system allows it (ext4 here) and through the page cache
// where it does not (tmpfs: /dev/shm): both must give back every byte, of
// any length and in pieces of any size, and only on commit.
//
//===----------------------------------------------------------------------===//

#include "FileIO.h"
#include "IoTestUtil.h"

#include <sys/stat.h>

using namespace zero::rt;
using zero::rt::testing::randomBytes;
using zero::rt::testing::readBytes;
using zero::rt::testing::TempDir;
using zero::rt::testing::writeBytes;

namespace {

/// Writes `bytes` to `path` in pieces of 1 byte to 3 MiB, then commits.
void writeInPieces(const std::string &path, const std::vector<uint8_t> &bytes) {
  auto file = io::AtomicOutputFile::create(path);
  ASSERT_TRUE(file.ok()) << file.status();
  std::mt19937 engine(7);
  size_t at = 0;
  while (at < bytes.size()) {
    size_t piece = std::min<size_t>(bytes.size() - at,
                                    engine() % 3 == 0 ? engine() % 64 + 1
                                                      : engine() % (3 << 20));
    ASSERT_TRUE((*file)->write(bytes.data() + at, piece).ok());
    at += piece;
  }
  EXPECT_EQ((*file)->bytesWritten(), bytes.size());
  ASSERT_TRUE((*file)->commit().ok());
}

bool directoryExists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

} // namespace

TEST(AtomicOutputFile, GivesBackEveryByteOfAnyLength) {
  TempDir dir;
  // Several staging buffers, a partial last block, an empty file, and a
  // file shorter than one block.
  for (size_t length :
       {size_t{20} << 20 | 1234, size_t{16} << 20, size_t{0}, size_t{100}}) {
    std::vector<uint8_t> bytes = randomBytes(length, 3);
    std::string path = dir.file("out.bin");
    writeInPieces(path, bytes);
    EXPECT_EQ(readBytes(path), bytes) << length << " bytes";
  }
  EXPECT_EQ(dir.list(), std::vector<std::string>{"out.bin"});
}

TEST(AtomicOutputFile, WorksWhereODirectIsRefused) {
  // tmpfs refuses O_DIRECT: the page-cache path.
  if (!directoryExists("/dev/shm"))
    GTEST_SKIP() << "no /dev/shm on this machine";
  std::string path =
      "/dev/shm/zero-atomic-output-" + std::to_string(::getpid()) + ".bin";
  std::vector<uint8_t> bytes = randomBytes((size_t{9} << 20) + 17, 5);
  writeInPieces(path, bytes);
  EXPECT_EQ(readBytes(path), bytes);
  ::unlink(path.c_str());
}

TEST(AtomicOutputFile, OnlyCommitReplacesTheTarget) {
  TempDir dir;
  std::string path = dir.file("state.bin");
  std::vector<uint8_t> old = randomBytes(5000, 1);
  writeBytes(path, old);
  std::vector<uint8_t> fresh = randomBytes((size_t{10} << 20) + 3, 2);
  {
    auto file = io::AtomicOutputFile::create(path);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE((*file)->write(fresh.data(), fresh.size()).ok());
    // Written but not committed: the old file is still what readers see.
    EXPECT_EQ(readBytes(path), old);
  }
  // Dropped without commit: the old file stays, the temporary one is gone.
  EXPECT_EQ(readBytes(path), old);
  EXPECT_EQ(dir.list(), std::vector<std::string>{"state.bin"});
  writeInPieces(path, fresh);
  EXPECT_EQ(readBytes(path), fresh);
}

TEST(AtomicOutputFile, WritesInPlaceWhereAddressAndOffsetAgree) {
  // An asynchronous checkpoint save's layout: a header of odd length
  // written through the staging buffer, then data whose addresses agree
  // with their file offsets modulo 4096, in pieces of any size (the disk
  // reads their aligned middles in place), and a piece that does not
  // agree, which falls back to the copy.
  TempDir dir;
  std::string path = dir.file("image.bin");
  std::vector<uint8_t> header = randomBytes(4096 * 2 + 777, 8);
  std::vector<uint8_t> body = randomBytes((size_t{19} << 20) + 4095, 9);
  std::vector<uint8_t> misplaced = randomBytes(12345, 10);
  void *memory = nullptr;
  ASSERT_EQ(::posix_memalign(&memory, 4096, body.size() + 4096), 0);
  std::unique_ptr<uint8_t, decltype(&std::free)> image(
      static_cast<uint8_t *>(memory), &std::free);
  uint8_t *data = image.get() + header.size() % 4096;
  std::memcpy(data, body.data(), body.size());
  {
    auto file = io::AtomicOutputFile::create(path);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE((*file)->write(header.data(), header.size()).ok());
    std::mt19937 engine(12);
    size_t at = 0;
    while (at < body.size()) {
      size_t piece = std::min<size_t>(body.size() - at,
                                      engine() % 3 == 0 ? engine() % 5000 + 1
                                                        : engine() % (6 << 20));
      ASSERT_TRUE((*file)->writeInPlace(data + at, piece).ok());
      at += piece;
    }
    ASSERT_TRUE(
        (*file)->writeInPlace(misplaced.data() + 1, misplaced.size() - 1).ok());
    ASSERT_TRUE((*file)->commit().ok());
  }
  std::vector<uint8_t> expected = header;
  expected.insert(expected.end(), body.begin(), body.end());
  expected.insert(expected.end(), misplaced.begin() + 1, misplaced.end());
  EXPECT_EQ(readBytes(path), expected);
}
