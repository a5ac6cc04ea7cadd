//===- SafetensorsTest.cpp - The safetensors reader and writer ------------===//

#include "IoTestUtil.h"

#include "zero/runtime/TensorFile.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <cmath>

using namespace zero::rt;
using namespace zero::rt::testing;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

namespace {

TensorMap everyDType() {
  TensorMap tensors;
  tensors["f32"] = makeTensor<float>(DType::f32, {2, 3},
                                     {0.f, 1.5f, -2.f, 3.25f, 1e-3f, -0.f});
  tensors["bf16"] = makeTensor<uint16_t>(
      DType::bf16, {3}, {floatToBf16(1.f), floatToBf16(-2.f), 0x7f80});
  tensors["f16"] = makeTensor<uint16_t>(
      DType::f16, {2, 1}, {floatToF16(0.5f), floatToF16(-65504.f)});
  tensors["i32"] = makeTensor<int32_t>(DType::i32, {4}, {1, -1, INT32_MAX, 0});
  tensors["i64"] =
      makeTensor<int64_t>(DType::i64, {1, 2}, {INT64_MIN, int64_t{1} << 40});
  tensors["scalar"] = makeTensor<float>(DType::f32, {}, {7.f});
  tensors["empty"] = makeTensor<float>(DType::f32, {0, 5}, {});
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

/// A safetensors file with `header` as its JSON and `data` after it.
void writeRaw(const std::string &path, const std::string &header,
              const std::vector<uint8_t> &data = {}) {
  std::vector<uint8_t> bytes(8);
  uint64_t length = header.size();
  std::memcpy(bytes.data(), &length, 8);
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  writeBytes(path, bytes);
}

TEST(Safetensors, RoundTripsEveryDTypeWithMetadata) {
  TempDir dir;
  std::string path = dir.file("m.safetensors");
  TensorMap tensors = everyDType();
  std::map<std::string, std::string> metadata = {{"step", "3"},
                                                 {"format", "zero"}};
  ASSERT_TRUE(writeSafetensors(path, tensors, metadata).ok());
  std::map<std::string, std::string> readMetadata;
  auto read = readSafetensors(path, &readMetadata);
  ASSERT_TRUE(read.ok()) << read.status();
  expectSame(tensors, *read);
  EXPECT_EQ(readMetadata, metadata);
  EXPECT_EQ(read->at("i64").numElements(), 2);
  EXPECT_EQ(read->at("scalar").numElements(), 1);
  EXPECT_EQ(read->at("empty").numElements(), 0);
}

TEST(Safetensors, PythonReadsWhatWeWrite) {
  ZERO_REQUIRE_FIXTURES();
  TempDir dir;
  std::string path = dir.file("m.safetensors");
  ASSERT_TRUE(writeSafetensors(path, everyDType(), {{"k", "v"}}).ok());
  nlohmann::json decoded = inspect(path);
  ASSERT_FALSE(decoded.is_discarded());
  EXPECT_EQ(decoded["__metadata__"], nlohmann::json({{"k", "v"}}));
  EXPECT_EQ(decoded["f32"]["dtype"], "F32");
  EXPECT_EQ(decoded["f32"]["shape"], nlohmann::json({2, 3}));
  EXPECT_EQ(decoded["f32"]["values"][3], 3.25);
  EXPECT_EQ(decoded["bf16"]["values"][1], -2.0);
  EXPECT_EQ(decoded["bf16"]["values"][2], "inf");
  EXPECT_EQ(decoded["f16"]["values"][1], -65504.0);
  EXPECT_EQ(decoded["i32"]["values"][2], INT32_MAX);
  EXPECT_EQ(decoded["i64"]["values"][0], INT64_MIN);
  EXPECT_EQ(decoded["scalar"]["shape"], nlohmann::json::array());
  EXPECT_EQ(decoded["empty"]["values"], nlohmann::json::array());
}

TEST(Safetensors, ReadsPythonFixture) {
  ZERO_REQUIRE_FIXTURES();
  std::map<std::string, std::string> metadata;
  auto read = readSafetensors(fixture("model.safetensors"), &metadata);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(metadata, (std::map<std::string, std::string>{{"format", "pt"},
                                                          {"step", "12"}}));
  const TensorMap &t = *read;
  EXPECT_EQ(valuesOf<float>(t.at("a")),
            (std::vector<float>{1.f, -2.f, 0.25f, 8.f}));
  EXPECT_EQ(t.at("a").shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(t.at("b").dtype, DType::bf16);
  EXPECT_EQ(bf16ToFloat(valuesOf<uint16_t>(t.at("b"))[1]), -2.f);
  EXPECT_EQ(t.at("c").dtype, DType::f16);
  EXPECT_EQ(f16ToFloat(valuesOf<uint16_t>(t.at("c"))[0]), 1.5f);
  EXPECT_EQ(valuesOf<int32_t>(t.at("d")), (std::vector<int32_t>{42, -7}));
  EXPECT_EQ(valuesOf<int64_t>(t.at("e")),
            (std::vector<int64_t>{-(int64_t{1} << 40)}));
  EXPECT_TRUE(t.at("s").shape.empty());
  EXPECT_EQ(t.at("z").numElements(), 0);
}

TEST(Safetensors, WritesAtomicallyAndOverwrites) {
  TempDir dir;
  std::string path = dir.file("ckpt.safetensors");
  ASSERT_TRUE(writeSafetensors(path, everyDType()).ok());
  TensorMap small;
  small["w"] = makeTensor<float>(DType::f32, {1}, {1.f});
  ASSERT_TRUE(writeSafetensors(path, small).ok());
  EXPECT_THAT(dir.list(), UnorderedElementsAre("ckpt.safetensors"));
  auto read = readSafetensors(path);
  ASSERT_TRUE(read.ok());
  expectSame(small, *read);

  // A rejected write leaves the previous file and no temporary behind.
  TensorMap bad;
  bad["w"] = makeTensor<float>(DType::f32, {3}, {1.f});
  absl::Status status = writeSafetensors(path, bad);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("needs 12 bytes"));
  EXPECT_THAT(dir.list(), UnorderedElementsAre("ckpt.safetensors"));
  read = readSafetensors(path);
  ASSERT_TRUE(read.ok());
  expectSame(small, *read);
}

TEST(Safetensors, WriteErrors) {
  TempDir dir;
  TensorMap tensors;
  tensors["__metadata__"] = makeTensor<float>(DType::f32, {1}, {1.f});
  EXPECT_FALSE(writeSafetensors(dir.file("a.safetensors"), tensors).ok());
  absl::Status status =
      writeSafetensors(dir.file("missing/dir/a.safetensors"), everyDType());
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(status.message()), HasSubstr("missing/dir"));
  TensorMap negative;
  negative["n"] = makeTensor<float>(DType::f32, {-1}, {});
  EXPECT_FALSE(writeSafetensors(dir.file("n.safetensors"), negative).ok());
  EXPECT_TRUE(dir.list().empty());
}

struct BadHeader {
  const char *header;
  size_t dataBytes;
  const char *expected;
};

TEST(Safetensors, RejectsMalformedHeaders) {
  TempDir dir;
  std::string path = dir.file("bad.safetensors");
  const BadHeader cases[] = {
      {"{", 0, "header JSON error"},
      {"[1, 2]", 0, "not an object"},
      {R"({"w": 3})", 0, "not an object"},
      {R"({"w": {"shape": [1], "data_offsets": [0, 4]}})", 4, "dtype"},
      {R"({"w": {"dtype": "F32", "data_offsets": [0, 4]}})", 4, "shape"},
      {R"({"w": {"dtype": "F32", "shape": [1]}})", 4, "data_offsets"},
      {R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 4,
       "data_offsets"},
      {R"({"w": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}})", 8,
       "convert the tensor to F32"},
      {R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})", 1,
       "unsupported dtype 'U8'"},
      {R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4,
       "bad shape"},
      {R"({"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", 4,
       "bad shape"},
      {R"({"w": {"dtype": "F32", "shape": [4611686018427387904, 4],
           "data_offsets": [0, 4]}})",
       4, "too large"},
      {R"({"w": {"dtype": "I64", "shape": [2305843009213693952],
           "data_offsets": [0, 8]}})",
       8, "too large"},
      {R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", 8,
       "needs 8 bytes"},
      {R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})", 4,
       "end before they begin"},
      {R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 4,
       "out of range"},
      {R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", 4,
       "bad data_offsets"},
      {R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
           "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
       12, "overlap"},
      {R"({"__metadata__": [1]})", 0, "__metadata__ is not an object"},
      {R"({"__metadata__": {"k": 1}})", 0, "not a string"},
  };
  for (const BadHeader &c : cases) {
    writeRaw(path, c.header, std::vector<uint8_t>(c.dataBytes));
    auto read = readSafetensors(path);
    ASSERT_FALSE(read.ok()) << c.header;
    EXPECT_THAT(std::string(read.status().message()), HasSubstr(c.expected))
        << c.header;
    EXPECT_THAT(std::string(read.status().message()), HasSubstr(path));
  }
}

TEST(Safetensors, RejectsBadFiles) {
  TempDir dir;
  auto missing = readSafetensors(dir.file("nope.safetensors"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("nope"));

  std::string path = dir.file("bad.safetensors");
  writeBytes(path, {1, 2, 3});
  auto shortFile = readSafetensors(path);
  EXPECT_THAT(std::string(shortFile.status().message()),
              HasSubstr("truncated"));

  // A length that claims most of the address space must not allocate it.
  writeBytes(path, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, '{', '}'});
  auto huge = readSafetensors(path);
  EXPECT_THAT(std::string(huge.status().message()),
              HasSubstr("implausibly large"));

  writeBytes(path, {100, 0, 0, 0, 0, 0, 0, 0, '{', '}'});
  auto truncated = readSafetensors(path);
  EXPECT_EQ(truncated.status().code(), absl::StatusCode::kDataLoss);

  EXPECT_FALSE(readSafetensors(dir.file("")).ok()); // a directory
}

TEST(Safetensors, ZeroLengthTensorsMayShareOffsets) {
  TempDir dir;
  std::string path = dir.file("z.safetensors");
  writeRaw(path,
           R"({"a": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]},
               "b": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}})",
           std::vector<uint8_t>(8, 1));
  auto read = readSafetensors(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->size(), 2u);
}

TEST(Safetensors, FindTensorListsWhatIsThere) {
  TensorMap tensors = everyDType();
  auto found = findTensor(tensors, "i32", "m.safetensors");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ((*found)->dtype, DType::i32);
  auto missing = findTensor(tensors, "w", "m.safetensors");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("no tensor 'w'"));
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("'bf16'"));
}

TEST(Safetensors, FuzzedFilesNeverCrash) {
  TempDir dir;
  std::string valid = dir.file("valid.safetensors");
  ASSERT_TRUE(writeSafetensors(valid, everyDType(), {{"k", "v"}}).ok());
  fuzzFile(valid, dir.file("fuzz.safetensors"), [](const std::string &path) {
    return readSafetensors(path).status();
  });
}

TEST(Safetensors, FuzzedFixtureNeverCrashes) {
  ZERO_REQUIRE_FIXTURES();
  TempDir dir;
  fuzzFile(
      fixture("model.safetensors"), dir.file("fuzz.safetensors"),
      [](const std::string &path) { return readSafetensors(path).status(); });
}

} // namespace
