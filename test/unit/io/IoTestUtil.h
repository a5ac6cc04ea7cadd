//===- IoTestUtil.h - Shared helpers of the io tests ------------*- C++ -*-===//

#ifndef ZERO_TEST_UNIT_IO_IOTESTUTIL_H
#define ZERO_TEST_UNIT_IO_IOTESTUTIL_H

#include "zero/runtime/TensorFile.h"

#include "gtest/gtest.h"
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

namespace zero::rt::testing {

/// A fresh directory per test, removed with its files afterwards.
class TempDir {
public:
  TempDir() {
    std::string pattern = ::testing::TempDir() + "zero-io-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    const char *made = ::mkdtemp(buffer.data());
    EXPECT_NE(made, nullptr) << std::strerror(errno);
    path_ = made ? made : "/nonexistent";
  }
  ~TempDir() {
    for (const std::string &name : list())
      ::unlink((path_ + "/" + name).c_str());
    ::rmdir(path_.c_str());
  }
  std::string file(const std::string &name) const { return path_ + "/" + name; }
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    if (DIR *dir = ::opendir(path_.c_str())) {
      while (dirent *entry = ::readdir(dir))
        if (std::strcmp(entry->d_name, ".") && std::strcmp(entry->d_name, ".."))
          names.push_back(entry->d_name);
      ::closedir(dir);
    }
    return names;
  }

private:
  std::string path_;
};

/// `count` bytes of a fixed seed's pseudo-random stream.
inline std::vector<uint8_t> randomBytes(size_t count, unsigned seed) {
  std::mt19937 engine(seed);
  std::vector<uint8_t> bytes(count);
  for (uint8_t &byte : bytes)
    byte = static_cast<uint8_t>(engine());
  return bytes;
}

inline std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline void writeBytes(const std::string &path,
                       const std::vector<uint8_t> &bytes, size_t length) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(length));
}
inline void writeBytes(const std::string &path,
                       const std::vector<uint8_t> &bytes) {
  writeBytes(path, bytes, bytes.size());
}

template <typename T>
HostTensor makeTensor(DType dtype, std::vector<int64_t> shape,
                      const std::vector<T> &values) {
  HostTensor tensor;
  tensor.dtype = dtype;
  tensor.shape = std::move(shape);
  tensor.data.resize(values.size() * sizeof(T));
  if (!values.empty())
    std::memcpy(tensor.data.data(), values.data(), tensor.data.size());
  return tensor;
}

template <typename T> std::vector<T> valuesOf(const HostTensor &tensor) {
  std::vector<T> values(tensor.data.size() / sizeof(T));
  if (!values.empty())
    std::memcpy(values.data(), tensor.data.data(), values.size() * sizeof(T));
  return values;
}

/// The fixture directory written by make_fixtures.py; empty without Python.
inline std::string fixture(const std::string &name) {
#ifdef ZERO_IO_FIXTURES
  return std::string(ZERO_IO_FIXTURES) + "/" + name;
#else
  (void)name;
  return "";
#endif
}

#ifdef ZERO_IO_FIXTURES
#define ZERO_REQUIRE_FIXTURES()
#else
#define ZERO_REQUIRE_FIXTURES() GTEST_SKIP() << "built without Python 3"
#endif

/// What inspect_file.py (Python's standard library alone) makes of a file
/// we wrote, decoding only array `only` of an .npz when given; a discarded
/// value when it rejects the file.
inline nlohmann::json inspect(const std::string &path,
                              const std::string &only = "") {
#ifdef ZERO_IO_INSPECT
  std::string command = std::string("'") + ZERO_IO_PYTHON + "' '" +
                        ZERO_IO_INSPECT + "' '" + path + "'";
  if (!only.empty())
    command += " '" + only + "'";
  FILE *pipe = ::popen(command.c_str(), "r");
  if (!pipe)
    return nlohmann::json(nlohmann::json::value_t::discarded);
  std::string output;
  char buffer[4096];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    output.append(buffer, got);
  if (::pclose(pipe) != 0)
    return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(output, nullptr, /*allow_exceptions=*/false);
#else
  (void)path;
  (void)only;
  return nlohmann::json(nlohmann::json::value_t::discarded);
#endif
}

/// Every prefix of a valid file must be rejected, every corrupted copy must
/// be read or rejected without crashing, and every error names the file.
/// The error of a rejected read must name the file.
inline void expectNamesFile(const absl::Status &status,
                            const std::string &path) {
  if (!status.ok()) {
    EXPECT_NE(status.message().find(path), absl::string_view::npos) << status;
  }
}

/// Every prefix of a valid file must be rejected, every corrupted copy must
/// be read or rejected without crashing, and every error names the file.
template <typename Read>
void fuzzFile(const std::string &valid, const std::string &scratch, Read read) {
  std::vector<uint8_t> bytes = readBytes(valid);
  ASSERT_FALSE(bytes.empty()) << valid;
  for (size_t length = 0; length < bytes.size(); ++length) {
    writeBytes(scratch, bytes, length);
    absl::Status status = read(scratch);
    EXPECT_FALSE(status.ok()) << "prefix of " << length << " bytes";
    expectNamesFile(status, scratch);
  }
  for (size_t at = 0; at < bytes.size(); ++at) {
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      std::vector<uint8_t> copy = bytes;
      copy[at] ^= mask;
      writeBytes(scratch, copy);
      expectNamesFile(read(scratch), scratch);
    }
  }
  std::mt19937 random(1234);
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<uint8_t> copy = bytes;
    int flips = 1 + static_cast<int>(random() % 8);
    for (int i = 0; i < flips; ++i)
      copy[random() % copy.size()] = static_cast<uint8_t>(random());
    writeBytes(scratch, copy);
    expectNamesFile(read(scratch), scratch);
  }
}

} // namespace zero::rt::testing

#endif // ZERO_TEST_UNIT_IO_IOTESTUTIL_H
