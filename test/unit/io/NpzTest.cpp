//===- NpzTest.cpp - The .npz reader and writer ---------------------------===//

#include "IoTestUtil.h"

#include "zero/runtime/TensorFile.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace zero::rt;
using namespace zero::rt::testing;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

namespace {

TensorMap arrays() {
  TensorMap tensors;
  tensors["x"] = makeTensor<float>(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6});
  tensors["y"] = makeTensor<int64_t>(DType::i64, {2}, {7, -3});
  tensors["f16"] = makeTensor<uint16_t>(DType::f16, {1}, {floatToF16(0.125f)});
  tensors["ids"] = makeTensor<int32_t>(DType::i32, {}, {12});
  tensors["none"] = makeTensor<float>(DType::f32, {0}, {});
  return tensors;
}

void expectSame(const TensorMap &a, const TensorMap &b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto &[name, tensor] : a) {
    auto it = b.find(name);
    ASSERT_NE(it, b.end()) << name;
    EXPECT_EQ(tensor.dtype, it->second.dtype) << name;
    EXPECT_EQ(tensor.shape, it->second.shape) << name;
    EXPECT_EQ(tensor.data, it->second.data) << name;
  }
}

std::string npzError(const std::string &path) {
  auto read = readNpz(path);
  EXPECT_FALSE(read.ok()) << path;
  EXPECT_THAT(std::string(read.status().message()), HasSubstr(path));
  return std::string(read.status().message());
}

TEST(Npz, RoundTrips) {
  TempDir dir;
  std::string path = dir.file("d.npz");
  ASSERT_TRUE(writeNpz(path, arrays()).ok());
  auto read = readNpz(path);
  ASSERT_TRUE(read.ok()) << read.status();
  expectSame(arrays(), *read);
  EXPECT_THAT(dir.list(), UnorderedElementsAre("d.npz"));

  auto y = readNpzEntry(path, "y");
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(valuesOf<int64_t>(*y), (std::vector<int64_t>{7, -3}));

  ASSERT_TRUE(writeNpz(path, {}).ok());
  read = readNpz(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(read->empty());
}

TEST(Npz, MissingEntryNamesTheKeys) {
  TempDir dir;
  std::string path = dir.file("d.npz");
  ASSERT_TRUE(writeNpz(path, arrays()).ok());
  auto missing = readNpzEntry(path, "labels");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  std::string message(missing.status().message());
  EXPECT_THAT(message, HasSubstr("zip entry 'labels.npy' missing"));
  EXPECT_THAT(message, HasSubstr("'x'"));
  EXPECT_THAT(message, HasSubstr(path));
}

TEST(Npz, PythonReadsWhatWeWrite) {
  ZERO_REQUIRE_FIXTURES();
  TempDir dir;
  std::string path = dir.file("d.npz");
  ASSERT_TRUE(writeNpz(path, arrays()).ok());
  nlohmann::json decoded = inspect(path);
  ASSERT_FALSE(decoded.is_discarded());
  EXPECT_EQ(decoded["x"]["dtype"], "<f4");
  EXPECT_EQ(decoded["x"]["shape"], nlohmann::json({2, 3}));
  EXPECT_EQ(decoded["x"]["values"], nlohmann::json({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(decoded["y"]["values"], nlohmann::json({7, -3}));
  EXPECT_EQ(decoded["f16"]["values"], nlohmann::json({0.125}));
  EXPECT_EQ(decoded["ids"]["shape"], nlohmann::json::array());
  EXPECT_EQ(decoded["none"]["values"], nlohmann::json::array());
}

TEST(Npz, ManyEntriesUseZip64EndRecords) {
  ZERO_REQUIRE_FIXTURES();
  // More than 65535 entries do not fit the classic end record's count.
  TempDir dir;
  std::string path = dir.file("many.npz");
  TensorMap tensors;
  for (int32_t i = 0; i < 70000; ++i)
    tensors["a" + std::to_string(i)] = makeTensor<int32_t>(DType::i32, {}, {i});
  ASSERT_TRUE(writeNpz(path, tensors).ok());
  auto read = readNpz(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->size(), 70000u);
  EXPECT_EQ(valuesOf<int32_t>(read->at("a69999")),
            (std::vector<int32_t>{69999}));
  nlohmann::json decoded = inspect(path, "a12345");
  ASSERT_FALSE(decoded.is_discarded());
  EXPECT_EQ(decoded["__entries__"], 70000);
  EXPECT_EQ(decoded["a12345"]["values"], nlohmann::json({12345}));
}

TEST(Npz, ReadsPythonArchives) {
  ZERO_REQUIRE_FIXTURES();
  for (const char *name :
       {"stored.npz", "deflated.npz", "zip64.npz", "with_notes.npz"}) {
    auto read = readNpz(fixture(name));
    ASSERT_TRUE(read.ok()) << name << ": " << read.status();
    ASSERT_EQ(read->size(), 2u) << name;
    EXPECT_EQ(valuesOf<float>(read->at("x")),
              (std::vector<float>{-1, -0.5f, 0, 0.5f, 1, 1.5f}))
        << name;
    EXPECT_EQ(read->at("x").shape, (std::vector<int64_t>{2, 3})) << name;
    EXPECT_EQ(valuesOf<int64_t>(read->at("y")), (std::vector<int64_t>{7, -3}))
        << name;
    auto y = readNpzEntry(fixture(name), "y");
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->dtype, DType::i64);
  }
}

TEST(Npz, RejectsBadArchives) {
  ZERO_REQUIRE_FIXTURES();
  EXPECT_THAT(npzError(fixture("bad_inner.npz")),
              HasSubstr("entry 'x': truncated"));
  EXPECT_THAT(npzError(fixture("f8_inner.npz")), HasSubstr("float32"));
  EXPECT_THAT(npzError(fixture("bzip2.npz")),
              HasSubstr("compression method 12 is not supported"));
  // An .npy is not a zip archive.
  EXPECT_THAT(npzError(fixture("f32.npy")), HasSubstr("not a zip archive"));
}

TEST(Npz, DetectsCorruptData) {
  ZERO_REQUIRE_FIXTURES();
  TempDir dir;
  std::string path = dir.file("c.npz");
  // The first entry's array data: header (30) + "x.npy" (5) + npy (128) in
  // the stored fixture, and somewhere inside the deflate stream otherwise.
  std::vector<uint8_t> stored = readBytes(fixture("stored.npz"));
  stored[30 + 5 + 128 + 2] ^= 0x10;
  writeBytes(path, stored);
  EXPECT_THAT(npzError(path), HasSubstr("CRC-32 mismatch"));

  std::vector<uint8_t> deflated = readBytes(fixture("deflated.npz"));
  deflated[30 + 5 + 10] ^= 0xff;
  writeBytes(path, deflated);
  npzError(path);
}

TEST(Npz, RejectsNonArchives) {
  TempDir dir;
  std::string path = dir.file("n.npz");
  EXPECT_EQ(readNpz(dir.file("none.npz")).status().code(),
            absl::StatusCode::kNotFound);
  writeBytes(path, {});
  EXPECT_THAT(npzError(path), HasSubstr("too short"));
  writeBytes(path, std::vector<uint8_t>(100, 'a'));
  EXPECT_THAT(npzError(path), HasSubstr("no end-of-central-directory"));
  // An end record whose directory lies past the file.
  std::vector<uint8_t> end = {0x50, 0x4b, 5, 6, 0, 0, 0, 0, 1, 0, 1,
                              0,    46,   0, 0, 0, 0, 1, 0, 0, 0, 0};
  writeBytes(path, end);
  EXPECT_THAT(npzError(path), HasSubstr("central directory out of range"));
}

TEST(Npz, RejectsBadTensorsOnWrite) {
  TempDir dir;
  TensorMap tensors = arrays();
  tensors["b"] = makeTensor<uint16_t>(DType::bf16, {1}, {0});
  absl::Status status = writeNpz(dir.file("w.npz"), tensors);
  EXPECT_THAT(std::string(status.message()), HasSubstr("entry 'b'"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("bfloat16"));
  EXPECT_TRUE(dir.list().empty());
}

TEST(Npz, FuzzedArchivesNeverCrash) {
  TempDir dir;
  std::string valid = dir.file("valid.npz");
  TensorMap small;
  small["x"] = makeTensor<float>(DType::f32, {2}, {1, 2});
  small["y"] = makeTensor<int32_t>(DType::i32, {1}, {3});
  ASSERT_TRUE(writeNpz(valid, small).ok());
  auto read = [](const std::string &path) { return readNpz(path).status(); };
  fuzzFile(valid, dir.file("fuzz.npz"), read);
  auto readOne = [](const std::string &path) {
    return readNpzEntry(path, "x").status();
  };
  fuzzFile(valid, dir.file("fuzz.npz"), readOne);
}

TEST(Npz, FuzzedPythonArchivesNeverCrash) {
  ZERO_REQUIRE_FIXTURES();
  TempDir dir;
  auto read = [](const std::string &path) { return readNpz(path).status(); };
  for (const char *name : {"deflated.npz", "zip64.npz"})
    fuzzFile(fixture(name), dir.file("fuzz.npz"), read);
}

} // namespace
