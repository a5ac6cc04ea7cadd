//===- CheckpointFormat.cpp - Checkpoint directories and manifests --------===//
//
// The files of a checkpoint and the protocol that publishes them: each
// rank's file is written and synced under a temporary directory, the
// manifest last, then one rename makes the checkpoint visible and `latest`
// follows. A reader trusts nothing it did not check: versions, coverage of
// every tensor, sizes, checksums and the files' own headers.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/CheckpointFormat.h"

#include "Crc32.h"
#include "FileIO.h"

#include "zero/runtime/TensorFile.h"
#include "zero/support/Status.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>

namespace fs = std::filesystem;
using nlohmann::json;

namespace zero::rt {

int64_t CheckpointTensor::numElements() const {
  int64_t count = 1;
  for (int64_t extent : shape)
    count *= extent;
  return count;
}

const CheckpointTensor *
CheckpointManifest::findTensor(const std::string &name) const {
  auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                             [](const CheckpointTensor &t,
                                const std::string &n) { return t.name < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

uint64_t CheckpointManifest::fileBytes() const {
  uint64_t bytes = 0;
  for (const CheckpointFile &file : files)
    bytes += file.bytes;
  return bytes;
}

std::string describeCheckpointIO(const CheckpointManifest &manifest,
                                 double seconds) {
  double mib = static_cast<double>(manifest.fileBytes()) / (1 << 20);
  return absl::StrFormat("%d file%s, %.2f MiB in %.3f s (%.1f MiB/s)",
                         manifest.files.size(),
                         manifest.files.size() == 1 ? "" : "s", mib, seconds,
                         seconds > 0 ? mib / seconds : 0.0);
}

std::string checkpointDirName(int64_t step) {
  return absl::StrFormat("step-%08d", step);
}

std::string checkpointFileName(int rank, int ranks) {
  return absl::StrFormat("rank-%05d-of-%05d.safetensors", rank, ranks);
}

static constexpr const char *kManifest = "manifest.json";
static constexpr const char *kLatest = "latest";
static constexpr const char *kFormatName = "zero-checkpoint";

static std::string join(const std::string &dir, const std::string &name) {
  return (fs::path(dir) / name).string();
}

/// The step of a `step-<digits>` directory name, or -1.
static int64_t stepOfDirName(const std::string &name) {
  if (name.size() <= 5 || name.compare(0, 5, "step-") != 0)
    return -1;
  int64_t step = 0;
  for (char c : name.substr(5)) {
    if (c < '0' || c > '9' || step > (int64_t{1} << 50))
      return -1;
    step = step * 10 + (c - '0');
  }
  return step;
}

/// Complete checkpoints under `root` (step, path), oldest first.
static std::vector<std::pair<int64_t, std::string>>
listCheckpoints(const std::string &root) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code error;
  for (const fs::directory_entry &entry : fs::directory_iterator(root, error)) {
    int64_t step = stepOfDirName(entry.path().filename().string());
    if (step >= 0 && fs::exists(entry.path() / kManifest, error))
      found.push_back({step, entry.path().string()});
  }
  std::sort(found.begin(), found.end());
  return found;
}

absl::StatusOr<std::string> resolveCheckpoint(const std::string &path) {
  std::error_code error;
  if (!fs::is_directory(path, error))
    return absl::NotFoundError(
        absl::StrCat(path, ": no such checkpoint directory"));
  if (fs::exists(join(path, kManifest), error))
    return path;
  // The newest complete checkpoint, whatever `latest` says: a crash between
  // publishing a checkpoint and updating `latest` leaves `latest` one
  // behind, and the published checkpoint is complete.
  std::vector<std::pair<int64_t, std::string>> found = listCheckpoints(path);
  if (found.empty())
    return absl::NotFoundError(absl::StrCat(
        path, " holds no checkpoint (no manifest.json, and no complete step-* "
              "directory)"));
  return found.back().second;
}

//===----------------------------------------------------------------------===//
// The manifest
//===----------------------------------------------------------------------===//

static json toJson(const CheckpointManifest &manifest) {
  json tensors = json::array();
  for (const CheckpointTensor &tensor : manifest.tensors) {
    json chunks = json::array();
    for (const CheckpointChunk &chunk : tensor.chunks)
      chunks.push_back({{"file", chunk.file},
                        {"begin", chunk.begin},
                        {"end", chunk.end},
                        {"offset", chunk.offset}});
    tensors.push_back({{"name", tensor.name},
                       {"role", tensor.role},
                       {"dtype", std::string(dtypeName(tensor.dtype))},
                       {"shape", tensor.shape},
                       {"layout", tensor.layout},
                       {"padding", tensor.padding},
                       {"chunks", std::move(chunks)}});
  }
  json files = json::array();
  for (const CheckpointFile &file : manifest.files)
    files.push_back({{"name", file.name},
                     {"rank", file.rank},
                     {"bytes", file.bytes},
                     {"crc32", file.crc32}});
  return {{"format", kFormatName},
          {"format_version", manifest.formatVersion},
          {"step", manifest.step},
          {"program", manifest.program},
          {"plan",
           {{"ranks", manifest.ranks},
            {"stage", manifest.stage},
            {"accumulate_steps", manifest.accumulateSteps}}},
          {"data",
           {{"seed", manifest.seed},
            {"global_batch", manifest.globalBatch},
            {"next_step", manifest.step + 1}}},
          {"optimizer", manifest.optimizer},
          {"learning_rate_factor", manifest.learningRateFactor},
          {"tensors", std::move(tensors)},
          {"files", std::move(files)}};
}

/// The coverage rule: a tensor's chunks, in order, are [0, e1), [e1, e2),
/// ... up to its element count, each in a listed file.
static absl::Status checkChunks(const std::string &path,
                                const CheckpointManifest &manifest,
                                const CheckpointTensor &tensor) {
  std::vector<CheckpointChunk> chunks = tensor.chunks;
  std::sort(chunks.begin(), chunks.end(),
            [](const CheckpointChunk &a, const CheckpointChunk &b) {
              return a.begin < b.begin;
            });
  int64_t next = 0;
  for (const CheckpointChunk &chunk : chunks) {
    if (chunk.begin != next || chunk.end <= chunk.begin)
      return io::formatError(
          path, absl::StrCat("tensor '", tensor.name, "': ",
                             chunk.begin > next
                                 ? absl::StrCat("elements [", next, ", ",
                                                chunk.begin, ") are in no file")
                                 : absl::StrCat("chunk [", chunk.begin, ", ",
                                                chunk.end,
                                                ") overlaps another or is "
                                                "empty")));
    bool listed = std::any_of(
        manifest.files.begin(), manifest.files.end(),
        [&](const CheckpointFile &file) { return file.name == chunk.file; });
    if (!listed)
      return io::formatError(
          path, absl::StrCat("tensor '", tensor.name, "': chunk in '",
                             chunk.file, "', which no file entry lists"));
    next = chunk.end;
  }
  if (next != tensor.numElements())
    return io::formatError(
        path, absl::StrCat("tensor '", tensor.name, "': elements [", next, ", ",
                           tensor.numElements(), ") are in no file"));
  return absl::OkStatus();
}

static absl::StatusOr<CheckpointManifest> fromJson(const std::string &path,
                                                   const json &root) {
  if (!root.is_object() || root.value("format", "") != kFormatName)
    return io::formatError(path, "not a zero checkpoint manifest (its "
                                 "\"format\" is not \"zero-checkpoint\")");
  CheckpointManifest manifest;
  manifest.formatVersion = root.at("format_version").get<int>();
  if (manifest.formatVersion != kCheckpointFormatVersion)
    return io::formatError(
        path, absl::StrCat("format version ", manifest.formatVersion,
                           manifest.formatVersion > kCheckpointFormatVersion
                               ? " is newer than"
                               : " is not",
                           " the version this build reads (",
                           kCheckpointFormatVersion, ")"));
  manifest.step = root.at("step").get<int64_t>();
  manifest.program = root.at("program").get<std::string>();
  const json &plan = root.at("plan");
  manifest.ranks = plan.at("ranks").get<int>();
  manifest.stage = plan.at("stage").get<int>();
  manifest.accumulateSteps = plan.at("accumulate_steps").get<int64_t>();
  const json &data = root.at("data");
  manifest.seed = data.at("seed").get<uint64_t>();
  manifest.globalBatch = data.at("global_batch").get<int64_t>();
  manifest.optimizer = root.at("optimizer").get<std::vector<std::string>>();
  // Written since the learning rate can change between steps; 1 before.
  manifest.learningRateFactor = root.value("learning_rate_factor", 1.0);
  if (!std::isfinite(manifest.learningRateFactor) ||
      manifest.learningRateFactor < 0)
    return io::formatError(path, "learning_rate_factor must be a finite "
                                 "number >= 0");
  if (manifest.step < 0 || manifest.ranks < 1)
    return io::formatError(path, "step or ranks out of range");
  for (const json &entry : root.at("files")) {
    CheckpointFile file;
    file.name = entry.at("name").get<std::string>();
    file.rank = entry.at("rank").get<int>();
    file.bytes = entry.at("bytes").get<uint64_t>();
    file.crc32 = entry.at("crc32").get<uint32_t>();
    // Names are looked up inside the checkpoint directory only.
    if (file.name.empty() || file.name.find('/') != std::string::npos ||
        file.name[0] == '.')
      return io::formatError(path,
                             absl::StrCat("bad file name '", file.name, "'"));
    manifest.files.push_back(std::move(file));
  }
  for (const json &entry : root.at("tensors")) {
    CheckpointTensor tensor;
    tensor.name = entry.at("name").get<std::string>();
    tensor.role = entry.at("role").get<std::string>();
    absl::StatusOr<DType> dtype =
        parseDType(entry.at("dtype").get<std::string>());
    if (!dtype.ok())
      return io::formatError(path, absl::StrCat("tensor '", tensor.name, "': ",
                                                dtype.status().message()));
    tensor.dtype = *dtype;
    tensor.shape = entry.at("shape").get<std::vector<int64_t>>();
    // Counted in bytes, so that no later byte count can overflow.
    int64_t bytes = dtypeBytes(tensor.dtype);
    for (int64_t extent : tensor.shape)
      if (extent < 0 || !io::multiplyChecked(extent, &bytes))
        return io::formatError(
            path, absl::StrCat("tensor '", tensor.name, "': bad shape"));
    tensor.layout = entry.at("layout").get<std::string>();
    tensor.padding = entry.at("padding").get<int64_t>();
    for (const json &item : entry.at("chunks"))
      tensor.chunks.push_back(
          {item.at("file").get<std::string>(), item.at("begin").get<int64_t>(),
           item.at("end").get<int64_t>(), item.at("offset").get<uint64_t>()});
    manifest.tensors.push_back(std::move(tensor));
  }
  std::sort(manifest.tensors.begin(), manifest.tensors.end(),
            [](const CheckpointTensor &a, const CheckpointTensor &b) {
              return a.name < b.name;
            });
  for (size_t i = 1; i < manifest.tensors.size(); ++i)
    if (manifest.tensors[i].name == manifest.tensors[i - 1].name)
      return io::formatError(path,
                             absl::StrCat("tensor '", manifest.tensors[i].name,
                                          "' is listed twice"));
  for (const CheckpointTensor &tensor : manifest.tensors)
    ZERO_RETURN_IF_ERROR(checkChunks(path, manifest, tensor));
  return manifest;
}

absl::StatusOr<CheckpointManifest>
readCheckpointManifest(const std::string &dir) {
  std::string path = join(dir, kManifest);
  std::ifstream in(path);
  if (!in)
    return absl::NotFoundError(absl::StrCat(
        path, ": no manifest (not a checkpoint, or an incomplete one)"));
  try {
    json root = json::parse(in);
    return fromJson(path, root);
  } catch (const json::exception &e) {
    return io::formatError(path,
                           absl::StrCat("malformed manifest: ", e.what()));
  }
}

//===----------------------------------------------------------------------===//
// Checking and reading
//===----------------------------------------------------------------------===//

/// What a file whose CRC-32 is not the manifest's is refused with.
static absl::Status checksumMismatch(const std::string &path, uint32_t crc,
                                     uint32_t expected) {
  return absl::DataLossError(absl::StrFormat(
      "%s: CRC-32 %08x, the manifest says %08x (the file is corrupt)", path,
      crc, expected));
}

absl::StatusOr<std::pair<uint32_t, uint64_t>>
fileChecksum(const std::string &path) {
  uint64_t size = 0;
  {
    ZERO_ASSIGN_OR_RETURN(auto file, io::InputFile::open(path));
    size = (file)->size();
  }
  uint32_t crc = 0;
  absl::Status read = io::readSequentially(
      path, 0, size, [&](uint64_t, const uint8_t *data, uint64_t length) {
        crc = io::crc32(crc, data, length);
        return absl::OkStatus();
      });
  if (!read.ok())
    return read;
  return std::make_pair(crc, size);
}

absl::Status verifyCheckpointFiles(const std::string &dir,
                                   const CheckpointManifest &manifest,
                                   bool checksums,
                                   const std::vector<size_t> &only) {
  for (size_t index = 0; index < manifest.files.size(); ++index) {
    const CheckpointFile &file = manifest.files[index];
    std::string path = join(dir, file.name);
    std::error_code error;
    if (!fs::exists(path, error))
      return absl::DataLossError(absl::StrCat(
          path, ": missing (the manifest lists it, for rank ", file.rank, ")"));
    uint64_t size = fs::file_size(path, error);
    if (error || size != file.bytes)
      return absl::DataLossError(
          absl::StrCat(path, ": ", size, " bytes, the manifest says ",
                       file.bytes, " (truncated or overwritten)"));
    bool mine = only.empty() ||
                std::find(only.begin(), only.end(), index) != only.end();
    if (checksums && mine) {
      absl::StatusOr<std::pair<uint32_t, uint64_t>> crc = fileChecksum(path);
      if (!crc.ok())
        return crc.status();
      if (crc->first != file.crc32)
        return checksumMismatch(path, crc->first, file.crc32);
    }
    ZERO_ASSIGN_OR_RETURN(SafetensorsIndex header, readSafetensorsIndex(path));
    std::map<std::string, const SafetensorsEntry *> entries;
    for (const SafetensorsEntry &entry : header.entries)
      entries[entry.name] = &entry;
    for (const CheckpointTensor &tensor : manifest.tensors)
      for (const CheckpointChunk &chunk : tensor.chunks) {
        if (chunk.file != file.name)
          continue;
        auto it = entries.find(tensor.name);
        uint64_t bytes = static_cast<uint64_t>(chunk.end - chunk.begin) *
                         dtypeBytes(tensor.dtype);
        if (it == entries.end() || it->second->offset != chunk.offset ||
            it->second->bytes != bytes || it->second->dtype != tensor.dtype)
          return absl::DataLossError(absl::StrCat(
              path, ": tensor '", tensor.name,
              "' is not where the manifest places it (elements [", chunk.begin,
              ", ", chunk.end, ") at byte ", chunk.offset, ")"));
      }
  }
  return absl::OkStatus();
}

absl::Status readCheckpointRange(const std::string &dir,
                                 const CheckpointTensor &tensor, int64_t begin,
                                 int64_t end, void *out) {
  int64_t elementBytes = dtypeBytes(tensor.dtype);
  int64_t covered = 0;
  for (const CheckpointChunk &chunk : tensor.chunks) {
    int64_t from = std::max(begin, chunk.begin);
    int64_t to = std::min(end, chunk.end);
    if (from >= to)
      continue;
    ZERO_ASSIGN_OR_RETURN(auto file,
                          io::InputFile::open(join(dir, chunk.file)));
    ZERO_RETURN_IF_ERROR((file)->readAt(
        chunk.offset + static_cast<uint64_t>(from - chunk.begin) * elementBytes,
        static_cast<uint64_t>(to - from) * elementBytes,
        static_cast<char *>(out) + (from - begin) * elementBytes,
        absl::StrCat("tensor '", tensor.name, "'")));
    covered += to - from;
  }
  if (covered != end - begin)
    return absl::DataLossError(
        absl::StrCat(dir, ": tensor '", tensor.name, "': elements [", begin,
                     ", ", end, ") are not all in the checkpoint's files"));
  return absl::OkStatus();
}

absl::Status readCheckpoint(const std::string &dir,
                            const CheckpointManifest &manifest,
                            const std::vector<CheckpointRead> &reads,
                            const std::vector<size_t> &checked) {
  // Each wanted range becomes pieces of files: bytes at a file offset that
  // go to an address.
  struct Piece {
    uint64_t offset;
    uint64_t bytes;
    uint8_t *out;
  };
  std::map<std::string, size_t> fileIndex;
  for (size_t index = 0; index < manifest.files.size(); ++index)
    fileIndex[manifest.files[index].name] = index;
  std::vector<std::vector<Piece>> pieces(manifest.files.size());
  for (const CheckpointRead &read : reads) {
    const CheckpointTensor &tensor = *read.tensor;
    uint64_t elementBytes = dtypeBytes(tensor.dtype);
    int64_t covered = 0;
    for (const CheckpointChunk &chunk : tensor.chunks) {
      int64_t from = std::max(read.begin, chunk.begin);
      int64_t to = std::min(read.end, chunk.end);
      if (from >= to)
        continue;
      auto it = fileIndex.find(chunk.file);
      if (it == fileIndex.end())
        return absl::DataLossError(
            absl::StrCat(dir, ": tensor '", tensor.name, "' has a chunk in '",
                         chunk.file, "', which the manifest does not list"));
      pieces[it->second].push_back(
          {chunk.offset +
               static_cast<uint64_t>(from - chunk.begin) * elementBytes,
           static_cast<uint64_t>(to - from) * elementBytes,
           static_cast<uint8_t *>(read.out) +
               static_cast<uint64_t>(from - read.begin) * elementBytes});
      covered += to - from;
    }
    if (covered != read.end - read.begin)
      return absl::DataLossError(absl::StrCat(
          dir, ": tensor '", tensor.name, "': elements [", read.begin, ", ",
          read.end, ") are not all in the checkpoint's files"));
  }

  for (size_t index = 0; index < manifest.files.size(); ++index) {
    const CheckpointFile &file = manifest.files[index];
    std::vector<Piece> &wanted = pieces[index];
    bool check =
        std::find(checked.begin(), checked.end(), index) != checked.end();
    if (wanted.empty() && !check)
      continue;
    std::sort(wanted.begin(), wanted.end(), [](const Piece &a, const Piece &b) {
      return a.offset < b.offset;
    });
    uint64_t begin = check ? 0 : wanted.front().offset;
    uint64_t end = check ? file.bytes : 0;
    for (const Piece &piece : wanted)
      end = std::max(end, piece.offset + piece.bytes);
    std::string path = join(dir, file.name);
    uint32_t crc = 0;
    size_t next = 0; // the first piece not yet wholly copied
    absl::Status read = io::readSequentially(
        path, begin, end,
        [&](uint64_t offset, const uint8_t *data, uint64_t length) {
          if (check)
            crc = io::crc32(crc, data, length);
          uint64_t stop = offset + length;
          while (next < wanted.size() &&
                 wanted[next].offset + wanted[next].bytes <= offset)
            ++next;
          for (size_t k = next; k < wanted.size() && wanted[k].offset < stop;
               ++k) {
            const Piece &piece = wanted[k];
            uint64_t from = std::max(piece.offset, offset);
            uint64_t to = std::min(piece.offset + piece.bytes, stop);
            if (from < to)
              std::memcpy(piece.out + (from - piece.offset),
                          data + (from - offset), to - from);
          }
          return absl::OkStatus();
        });
    if (!read.ok())
      return read;
    if (check && crc != file.crc32)
      return checksumMismatch(path, crc, file.crc32);
  }
  return absl::OkStatus();
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

/// fsync of a directory, so that the entries created or renamed in it are
/// durable, not only the files' data.
static absl::Status syncDirectory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return io::fileError(absl::StatusCode::kInternal, dir,
                         absl::StrCat("cannot open: ", std::strerror(errno)));
  int result = ::fsync(fd);
  int error = errno;
  ::close(fd);
  if (result != 0)
    return io::fileError(absl::StatusCode::kInternal, dir,
                         absl::StrCat("cannot sync: ", std::strerror(error)));
  return absl::OkStatus();
}

static absl::Status filesystemError(const std::string &path,
                                    const std::error_code &error,
                                    absl::string_view what) {
  return io::fileError(absl::StatusCode::kInternal, path,
                       absl::StrCat(what, ": ", error.message()));
}

std::string temporaryCheckpointDir(const std::string &root, int64_t step) {
  return join(root, "." + checkpointDirName(step) + ".tmp");
}

absl::StatusOr<std::string> prepareCheckpointDirectory(const std::string &root,
                                                       int64_t step) {
  std::error_code error;
  fs::create_directories(root, error);
  if (error)
    return filesystemError(root, error, "cannot create the directory");
  std::string name = checkpointDirName(step);
  if (fs::exists(join(root, name), error))
    return absl::AlreadyExistsError(absl::StrCat(
        join(root, name), " already exists; a checkpoint is never overwritten "
                          "(resume from it, or save into another directory)"));
  // What a crashed save left behind is never a checkpoint: no reader looks
  // at dot-directories.
  for (const fs::directory_entry &entry : fs::directory_iterator(root, error)) {
    std::string leftover = entry.path().filename().string();
    if (leftover.rfind(".step-", 0) == 0 && leftover.size() > 4 &&
        leftover.compare(leftover.size() - 4, 4, ".tmp") == 0)
      fs::remove_all(entry.path(), error);
  }
  std::string temporary = temporaryCheckpointDir(root, step);
  fs::create_directory(temporary, error);
  if (error)
    return filesystemError(temporary, error, "cannot create the directory");
  ZERO_RETURN_IF_ERROR(syncDirectory(root));
  return temporary;
}

static absl::Status writeTextAtomically(const std::string &path,
                                        const std::string &text) {
  ZERO_ASSIGN_OR_RETURN(auto out, io::AtomicOutputFile::create(path));
  ZERO_RETURN_IF_ERROR((out)->write(text.data(), text.size()));
  return (out)->commit();
}

absl::Status commitCheckpoint(const std::string &root,
                              const std::string &temporary,
                              const CheckpointManifest &manifest, int keep) {
  ZERO_RETURN_IF_ERROR(writeTextAtomically(join(temporary, kManifest),
                                           toJson(manifest).dump(1) + "\n"));
  ZERO_RETURN_IF_ERROR(syncDirectory(temporary));
  checkpointCrashPoint("before-publish", 0);
  std::string name = checkpointDirName(manifest.step);
  std::string final = join(root, name);
  std::error_code error;
  fs::rename(temporary, final, error);
  if (error)
    return filesystemError(final, error, "cannot publish the checkpoint");
  ZERO_RETURN_IF_ERROR(syncDirectory(root));
  checkpointCrashPoint("before-latest", 0);
  ZERO_RETURN_IF_ERROR(writeTextAtomically(join(root, kLatest), name + "\n"));
  ZERO_RETURN_IF_ERROR(syncDirectory(root));
  checkpointCrashPoint("before-retention", 0);
  if (keep > 0) {
    std::vector<std::pair<int64_t, std::string>> found = listCheckpoints(root);
    for (size_t index = 0; index + keep < found.size(); ++index) {
      if (found[index].second == final)
        continue;
      // The manifest first: a checkpoint without one is no longer complete,
      // whatever a crash leaves of the rest.
      fs::remove(fs::path(found[index].second) / kManifest, error);
      fs::remove_all(found[index].second, error);
      if (error)
        return filesystemError(found[index].second, error,
                               "cannot remove an old checkpoint");
    }
  }
  return absl::OkStatus();
}

void checkpointCrashPoint(const char *point, int rank) {
  const char *setting = std::getenv("ZERO_CHECKPOINT_CRASH");
  if (!setting)
    return;
  std::vector<std::string> parts = absl::StrSplit(setting, ':');
  if (parts.empty() || parts[0] != point)
    return;
  if (parts.size() > 1 && parts[1] != std::to_string(rank))
    return;
  std::fprintf(stderr, "ZERO_CHECKPOINT_CRASH: killing rank %d at %s\n", rank,
               point);
  std::fflush(stderr);
  std::raise(SIGKILL);
}

} // namespace zero::rt
