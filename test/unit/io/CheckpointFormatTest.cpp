//===- CheckpointFormatTest.cpp - Checkpoint manifests and files ----------===//
//
// The file side of checkpoints without a running program: manifests that
// lie (gaps, overlaps, foreign paths, other versions, bad JSON) are refused
// with the file named, the newest complete checkpoint is found past
// incomplete ones, and the streaming safetensors writer holds what it was
// given.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/CheckpointFormat.h"
#include "zero/runtime/TensorFile.h"

#include "gtest/gtest.h"
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using nlohmann::json;
using namespace zero::rt;

namespace {

class CheckpointFormat : public ::testing::Test {
protected:
  void SetUp() override {
    root =
        fs::path(::testing::TempDir()) /
        ("zero-ckpt-" +
         std::string(
             ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root);
    fs::create_directories(root);
  }
  void TearDown() override { fs::remove_all(root); }

  /// A manifest of one f32 tensor of 10 elements in two chunks of one file.
  static json manifest() {
    return {{"format", "zero-checkpoint"},
            {"format_version", kCheckpointFormatVersion},
            {"step", 7},
            {"program", "step"},
            {"plan", {{"ranks", 2}, {"stage", 3}, {"accumulate_steps", 1}}},
            {"data", {{"seed", 1}, {"global_batch", 8}, {"next_step", 8}}},
            {"optimizer", json::array({"train.sgd {lr = 0.1}"})},
            {"tensors",
             json::array({{{"name", "w"},
                           {"role", "param"},
                           {"dtype", "f32"},
                           {"shape", {10}},
                           {"layout", "flat"},
                           {"padding", 0},
                           {"chunks", json::array({{{"file", "a.safetensors"},
                                                    {"begin", 0},
                                                    {"end", 5},
                                                    {"offset", 64}},
                                                   {{"file", "a.safetensors"},
                                                    {"begin", 5},
                                                    {"end", 10},
                                                    {"offset", 84}}})}}})},
            {"files", json::array({{{"name", "a.safetensors"},
                                    {"rank", 0},
                                    {"bytes", 104},
                                    {"crc32", 0}}})}};
  }

  std::string writeManifest(const std::string &dir, const std::string &text) {
    fs::path path = root / dir;
    fs::create_directories(path);
    std::ofstream(path / "manifest.json") << text;
    return path.string();
  }

  /// The manifest's error message, which must name the manifest file.
  std::string refusal(const json &value) {
    std::string dir = writeManifest("bad", value.dump());
    absl::StatusOr<CheckpointManifest> read = readCheckpointManifest(dir);
    EXPECT_FALSE(read.ok());
    if (read.ok())
      return "";
    std::string message(read.status().message());
    EXPECT_NE(message.find("manifest.json"), std::string::npos) << message;
    return message;
  }

  fs::path root;
};

TEST_F(CheckpointFormat, ReadsAGoodManifest) {
  std::string dir = writeManifest("good", manifest().dump());
  absl::StatusOr<CheckpointManifest> read = readCheckpointManifest(dir);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->step, 7);
  EXPECT_EQ(read->ranks, 2);
  ASSERT_NE(read->findTensor("w"), nullptr);
  EXPECT_EQ(read->findTensor("w")->numElements(), 10);
  EXPECT_EQ(read->findTensor("v"), nullptr);
  EXPECT_EQ(read->fileBytes(), 104u);
}

// Manifests written before the learning rate could change between steps
// have no factor: they resume at the compiled rates.
TEST_F(CheckpointFormat, ReadsTheLearningRateFactor) {
  std::string dir = writeManifest("old", manifest().dump());
  absl::StatusOr<CheckpointManifest> old = readCheckpointManifest(dir);
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_EQ(old->learningRateFactor, 1.0);
  json value = manifest();
  value["learning_rate_factor"] = 0.25;
  dir = writeManifest("changed", value.dump());
  absl::StatusOr<CheckpointManifest> changed = readCheckpointManifest(dir);
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  EXPECT_EQ(changed->learningRateFactor, 0.25);
  value["learning_rate_factor"] = -1;
  EXPECT_NE(refusal(value).find("learning_rate_factor must be a finite number "
                                ">= 0"),
            std::string::npos);
  value["learning_rate_factor"] = "fast";
  EXPECT_FALSE(refusal(value).empty());
}

TEST_F(CheckpointFormat, RefusesAGapInATensor) {
  json value = manifest();
  value["tensors"][0]["chunks"][1]["begin"] = 6;
  EXPECT_NE(refusal(value).find("tensor 'w': elements [5, 6) are in no file"),
            std::string::npos);
}

TEST_F(CheckpointFormat, RefusesOverlappingChunks) {
  json value = manifest();
  value["tensors"][0]["chunks"][1]["begin"] = 4;
  EXPECT_NE(refusal(value).find("overlaps"), std::string::npos);
}

TEST_F(CheckpointFormat, RefusesAnIncompleteTensor) {
  json value = manifest();
  value["tensors"][0]["shape"] = {12};
  EXPECT_NE(refusal(value).find("elements [10, 12) are in no file"),
            std::string::npos);
}

TEST_F(CheckpointFormat, RefusesAChunkInAnUnlistedFile) {
  json value = manifest();
  value["tensors"][0]["chunks"][0]["file"] = "b.safetensors";
  EXPECT_NE(refusal(value).find("no file entry lists"), std::string::npos);
}

TEST_F(CheckpointFormat, RefusesFileNamesOutsideTheDirectory) {
  json value = manifest();
  value["files"][0]["name"] = "../../etc/passwd";
  EXPECT_NE(refusal(value).find("bad file name"), std::string::npos);
}

TEST_F(CheckpointFormat, RefusesOtherVersions) {
  json value = manifest();
  value["format_version"] = kCheckpointFormatVersion + 1;
  EXPECT_NE(refusal(value).find("is newer than the version this build reads"),
            std::string::npos);
}

TEST_F(CheckpointFormat, RefusesMalformedJsonWithoutCrashing) {
  std::vector<std::string> texts = {"", "{", "[]",
                                    "{\"format\": \"zero-checkpoint\"}",
                                    manifest().dump().substr(0, 100)};
  for (const std::string &text : texts) {
    std::string dir = writeManifest("malformed", text);
    absl::StatusOr<CheckpointManifest> read = readCheckpointManifest(dir);
    EXPECT_FALSE(read.ok()) << text;
  }
  json value = manifest();
  value["step"] = "seven";
  refusal(value);
  value = manifest();
  value["tensors"][0]["shape"] = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_NE(refusal(value).find("bad shape"), std::string::npos);
}

TEST_F(CheckpointFormat, ResolvesTheNewestCompleteCheckpoint) {
  EXPECT_FALSE(resolveCheckpoint((root / "missing").string()).ok());
  absl::StatusOr<std::string> empty = resolveCheckpoint(root.string());
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("holds no checkpoint"),
            std::string::npos);
  writeManifest(checkpointDirName(3), "{}");
  writeManifest(checkpointDirName(12), "{}");
  // Newer, but without a manifest (a save that died), and a temporary one.
  fs::create_directories(root / checkpointDirName(20));
  fs::create_directories(root / ("." + checkpointDirName(30) + ".tmp"));
  std::ofstream(root / "latest") << checkpointDirName(3) << "\n";
  absl::StatusOr<std::string> found = resolveCheckpoint(root.string());
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(fs::path(*found).filename(), checkpointDirName(12));
  // A checkpoint directory is itself.
  std::string direct = (root / checkpointDirName(3)).string();
  EXPECT_EQ(*resolveCheckpoint(direct), direct);
}

TEST_F(CheckpointFormat, NeverOverwritesACheckpoint) {
  absl::StatusOr<std::string> temporary =
      prepareCheckpointDirectory(root.string(), 5);
  ASSERT_TRUE(temporary.ok()) << temporary.status().message();
  EXPECT_EQ(*temporary, temporaryCheckpointDir(root.string(), 5));
  fs::create_directories(root / checkpointDirName(5));
  absl::StatusOr<std::string> again =
      prepareCheckpointDirectory(root.string(), 5);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("never overwritten"),
            std::string::npos);
}

TEST_F(CheckpointFormat, StreamingWriterHoldsWhatItWasGiven) {
  std::string path = (root / "streamed.safetensors").string();
  std::vector<SafetensorsEntry> entries = {{"a", DType::f32, {2, 3}, 0, 0},
                                           {"b", DType::i32, {4}, 0, 0}};
  auto writer = SafetensorsWriter::create(path, entries, {{"k", "v"}});
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  float a[6] = {1, 2, 3, 4, 5, 6};
  int32_t b[4] = {7, 8, 9, 10};
  // In pieces of any size.
  ASSERT_TRUE((*writer)->write(a, 10).ok());
  ASSERT_TRUE((*writer)->write(reinterpret_cast<char *>(a) + 10, 14).ok());
  EXPECT_FALSE(fs::exists(path)) << "visible before commit";
  ASSERT_TRUE((*writer)->write(b, sizeof(b)).ok());
  EXPECT_FALSE((*writer)->write(b, 1).ok()) << "more than declared";
  ASSERT_TRUE((*writer)->commit().ok());

  std::map<std::string, std::string> metadata;
  absl::StatusOr<TensorMap> read = readSafetensors(path, &metadata);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(metadata["k"], "v");
  EXPECT_EQ(read->at("a").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(read->at("a").data.data(), a, sizeof(a)), 0);
  EXPECT_EQ(std::memcmp(read->at("b").data.data(), b, sizeof(b)), 0);
  absl::StatusOr<SafetensorsIndex> index = readSafetensorsIndex(path);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->fileBytes, fs::file_size(path));

  // Too few bytes: nothing appears.
  std::string partial = (root / "partial.safetensors").string();
  auto short_writer = SafetensorsWriter::create(partial, entries);
  ASSERT_TRUE(short_writer.ok());
  ASSERT_TRUE((*short_writer)->write(a, sizeof(a)).ok());
  EXPECT_FALSE((*short_writer)->commit().ok());
  short_writer->reset();
  EXPECT_FALSE(fs::exists(partial));
}

} // namespace
