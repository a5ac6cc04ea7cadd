//===- Safetensors.cpp - The safetensors format ---------------------------===//
//
// Layout: u64 little-endian N, N bytes of JSON header, then the data buffer.
// The header maps each tensor name to {"dtype", "shape", "data_offsets"}
// (offsets relative to the data buffer) plus an optional "__metadata__"
// object of strings.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/TensorFile.h"
#include "zero/support/Status.h"

#include "Crc32.h"
#include "FileIO.h"

#include "absl/strings/str_join.h"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <new>

namespace zero::rt {
namespace {

using nlohmann::json;

// Far above any real header (the reference implementation caps at 100 MB),
// and it keeps a corrupt length from allocating gigabytes.
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

const char *safetensorsDType(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return "F32";
  case DType::bf16:
    return "BF16";
  case DType::f16:
    return "F16";
  case DType::i32:
    return "I32";
  case DType::i64:
    return "I64";
  case DType::i8:
    return "I8";
  }
  return "?";
}

absl::StatusOr<DType> parseSafetensorsDType(const std::string &name,
                                            const std::string &path,
                                            const std::string &tensor) {
  for (DType dtype :
       {DType::f32, DType::bf16, DType::f16, DType::i32, DType::i64})
    if (name == safetensorsDType(dtype))
      return dtype;
  std::string hint = "expected F32, BF16, F16, I32 or I64";
  if (name == "F64")
    hint = "float64 is not supported: convert the tensor to F32";
  return io::formatError(path, absl::StrCat("tensor '", tensor,
                                            "': unsupported dtype '", name,
                                            "' (", hint, ")"));
}

// Reads a JSON integer that must be >= 0 and small enough to compute with.
bool readCount(const json &value, int64_t *out) {
  if (!value.is_number_integer())
    return false;
  if (value.is_number_unsigned()) {
    uint64_t v = value.get<uint64_t>();
    if (v > (uint64_t{1} << 62))
      return false;
    *out = static_cast<int64_t>(v);
    return true;
  }
  int64_t v = value.get<int64_t>();
  if (v < 0)
    return false;
  *out = v;
  return true;
}

struct Entry {
  std::string name;
  HostTensor tensor;
  uint64_t begin = 0, end = 0;
};

/// The header of `file`, checked: every entry's dtype, shape and offsets
/// (relative to the data buffer, which starts at `*dataStart`).
absl::StatusOr<std::vector<Entry>>
readEntries(const io::InputFile &file, const std::string &path,
            std::map<std::string, std::string> *metadata, uint64_t *dataStart) {

  uint8_t lengthBytes[8];
  ZERO_RETURN_IF_ERROR(file.readAt(0, 8, lengthBytes, "the header length"));
  uint64_t headerBytes = io::loadLE64(lengthBytes);
  if (headerBytes > kMaxHeaderBytes)
    return io::formatError(
        path, absl::StrCat("header length ", headerBytes,
                           " is implausibly large (not a safetensors file?)"));
  std::string headerText(headerBytes, '\0');
  ZERO_RETURN_IF_ERROR(
      file.readAt(8, headerBytes, headerText.data(), "the JSON header"));
  *dataStart = 8 + headerBytes;
  uint64_t dataBytes = file.size() - *dataStart;

  json header;
  try {
    header = json::parse(headerText);
  } catch (const json::exception &e) {
    return io::formatError(path, absl::StrCat("header JSON error: ", e.what()));
  }
  if (!header.is_object())
    return io::formatError(path, "header JSON is not an object");

  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string &name = it.key();
    const json &value = it.value();
    if (name == "__metadata__") {
      if (!value.is_object())
        return io::formatError(path, "__metadata__ is not an object");
      for (auto m = value.begin(); m != value.end(); ++m) {
        if (!m.value().is_string())
          return io::formatError(path,
                                 absl::StrCat("__metadata__ value of '",
                                              m.key(), "' is not a string"));
        if (metadata)
          (*metadata)[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto bad = [&](absl::string_view what) {
      return io::formatError(path, absl::StrCat("tensor '", name, "': ", what));
    };
    if (!value.is_object())
      return bad("header entry is not an object");
    auto dtypeIt = value.find("dtype");
    auto shapeIt = value.find("shape");
    auto offsetsIt = value.find("data_offsets");
    if (dtypeIt == value.end() || !dtypeIt->is_string())
      return bad("missing or non-string \"dtype\"");
    if (shapeIt == value.end() || !shapeIt->is_array())
      return bad("missing or non-array \"shape\"");
    if (offsetsIt == value.end() || !offsetsIt->is_array() ||
        offsetsIt->size() != 2)
      return bad("\"data_offsets\" is not an array of two integers");

    Entry entry;
    entry.name = name;
    ZERO_ASSIGN_OR_RETURN(
        auto dtype,
        parseSafetensorsDType(dtypeIt->get<std::string>(), path, name));
    entry.tensor.dtype = dtype;
    // Counting bytes, not elements, so that the byte count cannot overflow.
    int64_t expected = dtypeBytes(dtype);
    for (const json &dim : *shapeIt) {
      int64_t extent;
      if (!readCount(dim, &extent))
        return bad(absl::StrCat("bad shape ", shapeIt->dump(),
                                " (dimensions must be integers >= 0)"));
      if (!io::multiplyChecked(extent, &expected))
        return bad(absl::StrCat("shape ", shapeIt->dump(), " is too large"));
      entry.tensor.shape.push_back(extent);
    }
    int64_t begin, end;
    if (!readCount((*offsetsIt)[0], &begin) ||
        !readCount((*offsetsIt)[1], &end))
      return bad(absl::StrCat("bad data_offsets ", offsetsIt->dump()));
    if (begin > end)
      return bad(absl::StrCat("data_offsets ", offsetsIt->dump(),
                              " end before they begin"));
    if (static_cast<uint64_t>(end) > dataBytes)
      return io::fileError(absl::StatusCode::kDataLoss, path,
                           absl::StrCat("tensor '", name, "': data_offsets ",
                                        offsetsIt->dump(),
                                        " out of range: the data buffer has ",
                                        dataBytes, " bytes (truncated file?)"));
    if (end - begin != expected)
      return bad(absl::StrCat("shape ", shapeIt->dump(), " of ",
                              dtypeIt->get<std::string>(), " needs ", expected,
                              " bytes but data_offsets ", offsetsIt->dump(),
                              " span ", end - begin));
    entry.begin = static_cast<uint64_t>(begin);
    entry.end = static_cast<uint64_t>(end);
    entries.push_back(std::move(entry));
  }

  // Overlapping tensors would alias each other's data in any zero-copy
  // reader; the format forbids them, and they point at a corrupt header.
  std::vector<const Entry *> byOffset;
  for (const Entry &entry : entries)
    if (entry.end > entry.begin)
      byOffset.push_back(&entry);
  std::sort(byOffset.begin(), byOffset.end(),
            [](const Entry *a, const Entry *b) { return a->begin < b->begin; });
  for (size_t i = 1; i < byOffset.size(); ++i)
    if (byOffset[i]->begin < byOffset[i - 1]->end)
      return io::formatError(path,
                             absl::StrCat("tensors '", byOffset[i - 1]->name,
                                          "' and '", byOffset[i]->name,
                                          "' overlap in the data buffer"));
  return entries;
}

absl::StatusOr<TensorMap>
readImpl(const std::string &path,
         std::map<std::string, std::string> *metadata) {
  ZERO_ASSIGN_OR_RETURN(auto opened, io::InputFile::open(path));
  const io::InputFile &file = *opened;
  uint64_t dataStart = 0;
  ZERO_ASSIGN_OR_RETURN(std::vector<Entry> entries,
                        readEntries(file, path, metadata, &dataStart));
  TensorMap tensors;
  for (Entry &entry : entries) {
    entry.tensor.data.resize(entry.end - entry.begin);
    ZERO_RETURN_IF_ERROR(file.readAt(
        dataStart + entry.begin, entry.end - entry.begin,
        entry.tensor.data.data(), absl::StrCat("tensor '", entry.name, "'")));
    tensors.emplace(entry.name, std::move(entry.tensor));
  }
  return tensors;
}

absl::Status writeImpl(const std::string &path, const TensorMap &tensors,
                       const std::map<std::string, std::string> &metadata) {
  json header = json::object();
  uint64_t offset = 0;
  for (const auto &[name, tensor] : tensors) {
    if (name == "__metadata__")
      return io::formatError(path,
                             "'__metadata__' cannot be used as a tensor name");
    ZERO_RETURN_IF_ERROR(
        checkTensor(tensor, absl::StrCat(path, ": tensor '", name, "'")));
    uint64_t end = offset + tensor.data.size();
    header[name] = {{"dtype", safetensorsDType(tensor.dtype)},
                    {"shape", tensor.shape},
                    {"data_offsets", {offset, end}}};
    offset = end;
  }
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  std::string text = header.dump();
  // Padding to 8 bytes keeps the data buffer aligned for readers that map
  // the file, as the reference implementation does.
  text.append((8 - text.size() % 8) % 8, ' ');

  ZERO_ASSIGN_OR_RETURN(auto created, io::AtomicOutputFile::create(path));
  io::AtomicOutputFile &out = *created;
  std::string prefix;
  io::appendLE64(prefix, text.size());
  ZERO_RETURN_IF_ERROR(out.write(prefix.data(), prefix.size()));
  ZERO_RETURN_IF_ERROR(out.write(text.data(), text.size()));
  for (const auto &entry : tensors)
    ZERO_RETURN_IF_ERROR(
        out.write(entry.second.data.data(), entry.second.data.size()));
  return out.commit();
}

/// The header of a file holding `entries` in order: "data_offsets" run
/// from 0 with no gaps. Returns the padded JSON text and the data's size.
absl::StatusOr<std::pair<std::string, uint64_t>>
buildHeader(const std::string &path,
            const std::vector<SafetensorsEntry> &entries,
            const std::map<std::string, std::string> &metadata) {
  json header = json::object();
  uint64_t offset = 0;
  for (const SafetensorsEntry &entry : entries) {
    if (entry.name == "__metadata__" || header.contains(entry.name))
      return io::formatError(path, absl::StrCat("tensor name '", entry.name,
                                                "' is reserved or used twice"));
    int64_t bytes = dtypeBytes(entry.dtype);
    for (int64_t extent : entry.shape)
      if (extent < 0 || !io::multiplyChecked(extent, &bytes))
        return io::formatError(
            path, absl::StrCat("tensor '", entry.name, "': bad shape"));
    header[entry.name] = {{"dtype", safetensorsDType(entry.dtype)},
                          {"shape", entry.shape},
                          {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return std::make_pair(std::move(text), offset);
}

} // namespace

struct SafetensorsWriter::State {
  std::unique_ptr<io::AtomicOutputFile> out;
  uint64_t dataBytes = 0;
  uint64_t written = 0;
  uint64_t fileBytes = 0;
  uint32_t crc = 0;

  absl::Status put(const void *data, uint64_t bytes, bool inPlace = false) {
    crc = io::crc32(crc, data, bytes);
    fileBytes += bytes;
    return inPlace ? out->writeInPlace(data, bytes) : out->write(data, bytes);
  }

  /// Tensor bytes, after the header: no more than declared.
  absl::Status putData(const void *data, uint64_t bytes, bool inPlace) {
    if (written + bytes > dataBytes)
      return io::fileError(absl::StatusCode::kInternal, out->path(),
                           "more data than the declared tensors hold");
    written += bytes;
    return put(data, bytes, inPlace);
  }
};

SafetensorsWriter::SafetensorsWriter(std::unique_ptr<State> state)
    : state(std::move(state)) {}
SafetensorsWriter::~SafetensorsWriter() = default;

/// buildHeader, with what the JSON library throws as a Status.
static absl::StatusOr<std::pair<std::string, uint64_t>>
checkedHeader(const std::string &path,
              const std::vector<SafetensorsEntry> &tensors,
              const std::map<std::string, std::string> &metadata) {
  try {
    return buildHeader(path, tensors, metadata);
  } catch (const std::exception &e) {
    return io::fileError(absl::StatusCode::kInternal, path,
                         absl::StrCat("cannot write: ", e.what()));
  }
}

absl::StatusOr<std::unique_ptr<SafetensorsWriter>>
SafetensorsWriter::create(const std::string &path,
                          const std::vector<SafetensorsEntry> &tensors,
                          const std::map<std::string, std::string> &metadata) {
  absl::StatusOr<std::pair<std::string, uint64_t>> header =
      checkedHeader(path, tensors, metadata);
  if (!header.ok())
    return header.status();
  ZERO_ASSIGN_OR_RETURN(auto out, io::AtomicOutputFile::create(path));
  std::string prefix;
  io::appendLE64(prefix, header->first.size());
  prefix += header->first;
  auto state = std::make_unique<State>();
  state->out = std::move(out);
  state->dataBytes = header->second;
  ZERO_RETURN_IF_ERROR(state->put(prefix.data(), prefix.size()));
  return std::unique_ptr<SafetensorsWriter>(
      new SafetensorsWriter(std::move(state)));
}

absl::StatusOr<uint64_t> SafetensorsWriter::dataOffset(
    const std::string &path, const std::vector<SafetensorsEntry> &tensors,
    const std::map<std::string, std::string> &metadata) {
  absl::StatusOr<std::pair<std::string, uint64_t>> header =
      checkedHeader(path, tensors, metadata);
  if (!header.ok())
    return header.status();
  return sizeof(uint64_t) + header->first.size();
}

absl::Status SafetensorsWriter::write(const void *data, uint64_t bytes) {
  return state->putData(data, bytes, /*inPlace=*/false);
}

absl::Status SafetensorsWriter::writeInPlace(const void *data, uint64_t bytes) {
  return state->putData(data, bytes, /*inPlace=*/true);
}

uint64_t SafetensorsWriter::fileBytes() const { return state->fileBytes; }
uint32_t SafetensorsWriter::fileCrc32() const {
  return static_cast<uint32_t>(state->crc);
}

absl::Status SafetensorsWriter::commit() {
  if (state->written != state->dataBytes)
    return io::fileError(absl::StatusCode::kInternal, state->out->path(),
                         absl::StrCat("only ", state->written,
                                      " of the declared ", state->dataBytes,
                                      " data bytes were written"));
  return state->out->commit();
}

absl::StatusOr<TensorMap>
readSafetensors(const std::string &path,
                std::map<std::string, std::string> *metadata) {
  // The JSON library throws (also on type mismatches we have not foreseen)
  // and allocation may fail: neither may escape to the caller.
  try {
    return readImpl(path, metadata);
  } catch (const std::bad_alloc &) {
    return io::fileError(absl::StatusCode::kResourceExhausted, path,
                         "out of memory while reading");
  } catch (const std::exception &e) {
    return io::formatError(path, absl::StrCat("malformed file: ", e.what()));
  }
}

absl::StatusOr<TensorMap> readSafetensors(const std::string &path) {
  return readSafetensors(path, nullptr);
}

absl::StatusOr<SafetensorsIndex> readSafetensorsIndex(const std::string &path) {
  try {
    ZERO_ASSIGN_OR_RETURN(auto opened, io::InputFile::open(path));
    SafetensorsIndex index;
    index.fileBytes = (opened)->size();
    uint64_t dataStart = 0;
    ZERO_ASSIGN_OR_RETURN(
        std::vector<Entry> entries,
        readEntries(*opened, path, &index.metadata, &dataStart));
    for (Entry &entry : entries)
      index.entries.push_back(
          {entry.name, entry.tensor.dtype, std::move(entry.tensor.shape),
           dataStart + entry.begin, entry.end - entry.begin});
    return index;
  } catch (const std::bad_alloc &) {
    return io::fileError(absl::StatusCode::kResourceExhausted, path,
                         "out of memory while reading");
  } catch (const std::exception &e) {
    return io::formatError(path, absl::StrCat("malformed file: ", e.what()));
  }
}

absl::Status
writeSafetensors(const std::string &path, const TensorMap &tensors,
                 const std::map<std::string, std::string> &metadata) {
  try {
    return writeImpl(path, tensors, metadata);
  } catch (const std::exception &e) {
    return io::fileError(absl::StatusCode::kInternal, path,
                         absl::StrCat("cannot write: ", e.what()));
  }
}

} // namespace zero::rt
