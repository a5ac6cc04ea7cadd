//===- NpyTest.cpp - The .npy reader and writer ---------------------------===//

#include "IoTestUtil.h"

#include "zero/runtime/TensorFile.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace zero::rt;
using namespace zero::rt::testing;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

namespace {

void expectSame(const HostTensor &a, const HostTensor &b) {
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.data, b.data);
}

std::string errorOf(const std::string &path) {
  auto read = readNpy(path);
  EXPECT_FALSE(read.ok()) << path;
  EXPECT_THAT(std::string(read.status().message()), HasSubstr(path));
  return std::string(read.status().message());
}

TEST(Npy, RoundTripsEveryNumpyDType) {
  TempDir dir;
  const HostTensor tensors[] = {
      makeTensor<float>(DType::f32, {2, 3}, {0, 1, 2, 3, 4, -5.5f}),
      makeTensor<uint16_t>(DType::f16, {3},
                           {floatToF16(1), floatToF16(-0.25f), 0x7c00}),
      makeTensor<int32_t>(DType::i32, {1, 1, 2}, {INT32_MIN, 9}),
      makeTensor<int64_t>(DType::i64, {2}, {INT64_MAX, -1}),
      makeTensor<float>(DType::f32, {}, {42}),
      makeTensor<int64_t>(DType::i64, {3, 0}, {}),
  };
  for (const HostTensor &tensor : tensors) {
    std::string path = dir.file("t.npy");
    ASSERT_TRUE(writeNpy(path, tensor).ok());
    auto read = readNpy(path);
    ASSERT_TRUE(read.ok()) << read.status();
    expectSame(tensor, *read);
  }
  EXPECT_THAT(dir.list(), UnorderedElementsAre("t.npy"));
}

TEST(Npy, PythonReadsWhatWeWrite) {
  ZERO_REQUIRE_FIXTURES();
  TempDir dir;
  std::string path = dir.file("t.npy");
  ASSERT_TRUE(
      writeNpy(path, makeTensor<float>(DType::f32, {3}, {1, 2, 3.5f})).ok());
  nlohmann::json decoded = inspect(path);
  ASSERT_FALSE(decoded.is_discarded());
  EXPECT_EQ(decoded[""]["dtype"], "<f4");
  EXPECT_EQ(decoded[""]["shape"], nlohmann::json({3}));
  EXPECT_EQ(decoded[""]["values"], nlohmann::json({1.0, 2.0, 3.5}));

  ASSERT_TRUE(writeNpy(path, makeTensor<int64_t>(DType::i64, {}, {-7})).ok());
  decoded = inspect(path);
  ASSERT_FALSE(decoded.is_discarded());
  EXPECT_EQ(decoded[""]["shape"], nlohmann::json::array());
  EXPECT_EQ(decoded[""]["values"], nlohmann::json({-7}));
}

TEST(Npy, LargeHeadersUseVersion2) {
  TempDir dir;
  std::string path = dir.file("wide.npy");
  // 25000 dimensions of 1 overflow version 1.0's 64 KiB header.
  HostTensor tensor = makeTensor<float>(DType::f32, {}, {1.f});
  tensor.shape.assign(25000, 1);
  ASSERT_TRUE(writeNpy(path, tensor).ok());
  std::vector<uint8_t> bytes = readBytes(path);
  ASSERT_GT(bytes.size(), 8u);
  EXPECT_EQ(bytes[6], 2);
  auto read = readNpy(path);
  ASSERT_TRUE(read.ok()) << read.status();
  expectSame(tensor, *read);
}

TEST(Npy, RefusesBf16) {
  TempDir dir;
  absl::Status status = writeNpy(
      dir.file("b.npy"), makeTensor<uint16_t>(DType::bf16, {1}, {0x3f80}));
  EXPECT_THAT(std::string(status.message()), HasSubstr("bfloat16"));
  EXPECT_TRUE(dir.list().empty());
}

TEST(Npy, ReadsPythonFixtures) {
  ZERO_REQUIRE_FIXTURES();
  auto f32 = readNpy(fixture("f32.npy"));
  ASSERT_TRUE(f32.ok()) << f32.status();
  EXPECT_EQ(f32->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(valuesOf<float>(*f32),
            (std::vector<float>{-1, -0.5f, 0, 0.5f, 1, 1.5f}));

  auto f16 = readNpy(fixture("f16.npy"));
  ASSERT_TRUE(f16.ok()) << f16.status();
  EXPECT_EQ(f16->dtype, DType::f16);
  std::vector<float> halves;
  for (uint16_t bits : valuesOf<uint16_t>(*f16))
    halves.push_back(f16ToFloat(bits));
  EXPECT_EQ(halves, (std::vector<float>{1, -2.5f, 0.5f, 65504}));

  auto i32 = readNpy(fixture("i32.npy"));
  ASSERT_TRUE(i32.ok()) << i32.status();
  EXPECT_EQ(valuesOf<int32_t>(*i32), (std::vector<int32_t>{1, -2, 2147483647}));

  auto i64 = readNpy(fixture("i64.npy"));
  ASSERT_TRUE(i64.ok()) << i64.status();
  EXPECT_EQ(i64->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(
      valuesOf<int64_t>(*i64),
      (std::vector<int64_t>{0, -1, int64_t{1} << 40, -(int64_t{1} << 62)}));

  auto scalar = readNpy(fixture("scalar.npy"));
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_TRUE(scalar->shape.empty());
  EXPECT_EQ(valuesOf<float>(*scalar), (std::vector<float>{3.5f}));

  auto empty = readNpy(fixture("empty.npy"));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(empty->data.empty());

  for (const char *name : {"v2.npy", "v3.npy"}) {
    auto read = readNpy(fixture(name));
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(valuesOf<float>(*read), (std::vector<float>{1, 2})) << name;
  }
  auto native = readNpy(fixture("native.npy"));
  ASSERT_TRUE(native.ok()) << native.status();
  EXPECT_EQ(valuesOf<int32_t>(*native), (std::vector<int32_t>{5}));
  auto longs = readNpy(fixture("py2long.npy"));
  ASSERT_TRUE(longs.ok()) << longs.status();
  EXPECT_EQ(longs->shape, (std::vector<int64_t>{3}));
}

TEST(Npy, RejectsUnsupportedFixtures) {
  ZERO_REQUIRE_FIXTURES();
  EXPECT_THAT(errorOf(fixture("fortran.npy")), HasSubstr("fortran_order"));
  EXPECT_THAT(errorOf(fixture("bigendian.npy")),
              HasSubstr("unsupported dtype '>f4' (big-endian"));
  EXPECT_THAT(errorOf(fixture("f8.npy")), HasSubstr("convert the array to "
                                                    "float32"));
  EXPECT_THAT(errorOf(fixture("u2.npy")), HasSubstr("unsupported dtype '<u2'"));
  EXPECT_THAT(errorOf(fixture("structured.npy")), HasSubstr("structured"));
  EXPECT_THAT(errorOf(fixture("extra_bytes.npy")),
              HasSubstr("shape/byte-count mismatch"));
  EXPECT_THAT(errorOf(fixture("short_data.npy")), HasSubstr("truncated"));
}

/// A version 1.0 .npy with `header` as its dict and `dataBytes` zero bytes.
std::string writeWithHeader(const TempDir &dir, const std::string &header,
                            size_t dataBytes = 0) {
  std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  bytes.push_back(static_cast<uint8_t>(header.size() & 0xff));
  bytes.push_back(static_cast<uint8_t>(header.size() >> 8));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.resize(bytes.size() + dataBytes);
  std::string path = dir.file("h.npy");
  writeBytes(path, bytes);
  return path;
}

TEST(Npy, RejectsMalformedHeaders) {
  TempDir dir;
  struct Case {
    const char *header;
    size_t dataBytes;
    const char *expected;
  };
  const Case cases[] = {
      {"", 0, "not a dict"},
      {"{'descr': '<f4', 'fortran_order': False}", 0, "missing"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8,
       "unexpected key 'x'"},
      {"{'descr': <f4, 'fortran_order': False, 'shape': (2,)}", 8,
       "'descr' is not a string"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", 8,
       "'fortran_order' is not True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", 8,
       "'shape' is not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", 8,
       "'shape' is not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,}", 8,
       "'shape' is not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': "
       "(99999999999999999999,)}",
       8, "'shape' is not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': "
       "(4611686018427387904, 4611686018427387904)}",
       8, "too large"},
      {"{'descr': '<i8', 'fortran_order': False, 'shape': "
       "(2305843009213693952,)}",
       8, "too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", 8,
       "trailing characters"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", 8,
       "expected ',' or '}'"},
      {"{'descr': 'float64', 'fortran_order': False, 'shape': (1,)}", 8,
       "float32"},
      {"{'descr': '>i8', 'fortran_order': False, 'shape': (1,)}", 8,
       "big-endian"},
      {"{'de\\scr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4,
       "quoted key"},
  };
  for (const Case &c : cases)
    EXPECT_THAT(errorOf(writeWithHeader(dir, c.header, c.dataBytes)),
                HasSubstr(c.expected))
        << c.header;
}

TEST(Npy, RejectsBadPreambles) {
  TempDir dir;
  std::string path = dir.file("p.npy");
  EXPECT_EQ(readNpy(dir.file("none.npy")).status().code(),
            absl::StatusCode::kNotFound);
  writeBytes(path, {'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_THAT(errorOf(path), HasSubstr("bad magic"));
  writeBytes(path, {0x93, 'N', 'U', 'M', 'P', 'Y', 4, 0, 0, 0, 0, 0});
  EXPECT_THAT(errorOf(path), HasSubstr("unsupported npy version 4.0"));
  writeBytes(path, {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0xff, 0xff});
  EXPECT_THAT(errorOf(path), HasSubstr("truncated"));
  writeBytes(path,
             {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xff, 0xff, 0xff, 0xff});
  EXPECT_THAT(errorOf(path), HasSubstr("implausibly large"));
}

TEST(Npy, FuzzedFilesNeverCrash) {
  TempDir dir;
  std::string valid = dir.file("valid.npy");
  ASSERT_TRUE(
      writeNpy(valid, makeTensor<int32_t>(DType::i32, {2, 2}, {1, 2, 3, 4}))
          .ok());
  fuzzFile(valid, dir.file("fuzz.npy"),
           [](const std::string &path) { return readNpy(path).status(); });
}

TEST(Npy, FuzzedFixturesNeverCrash) {
  ZERO_REQUIRE_FIXTURES();
  TempDir dir;
  for (const char *name : {"f16.npy", "v3.npy", "scalar.npy"})
    fuzzFile(fixture(name), dir.file("fuzz.npy"),
             [](const std::string &path) { return readNpy(path).status(); });
}

} // namespace
