//===- Zip.cpp - The zip container under .npz -----------------------------===//
//
// Record layouts follow PKWARE's APPNOTE.TXT (sections 4.3.7 local header,
// 4.3.12 central directory, 4.3.14-16 end records, 4.5.3 zip64 extra).
//
//===----------------------------------------------------------------------===//

#include "Zip.h"

#include "Crc32.h"
#include "zero/support/Status.h"

#include <zlib.h>

#include <algorithm>

namespace zero::rt::io {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint64_t kMax32 = 0xffffffffu;
constexpr uint64_t kMax16 = 0xffffu;
constexpr size_t kLocalHeaderBytes = 30;
constexpr size_t kCentralHeaderBytes = 46;
constexpr size_t kEndBytes = 22;
constexpr size_t kZip64EndBytes = 56;
constexpr size_t kZip64LocatorBytes = 20;
// DOS date of 1980-01-01: fixed so that equal archives are equal bytes.
constexpr uint16_t kDosDate = (1 << 5) | 1;

struct EndRecord {
  uint64_t entries = 0;
  uint64_t directoryBytes = 0;
  uint64_t directoryOffset = 0;
};

absl::StatusOr<EndRecord> readEndRecord(const InputFile &file) {
  const std::string &path = file.path();
  if (file.size() < kEndBytes)
    return formatError(path, "not a zip archive (too short)");
  // The end record sits within the last 22 + 65535 (its comment) bytes.
  uint64_t tailBytes = std::min<uint64_t>(file.size(), kEndBytes + kMax16);
  uint64_t tailStart = file.size() - tailBytes;
  std::vector<uint8_t> tail(tailBytes);
  ZERO_RETURN_IF_ERROR(
      file.readAt(tailStart, tailBytes, tail.data(), "the zip end record"));
  int64_t found = -1;
  for (int64_t i = static_cast<int64_t>(tailBytes - kEndBytes); i >= 0; --i) {
    const uint8_t *p = tail.data() + i;
    if (loadLE32(p) == kEndSig &&
        static_cast<uint64_t>(i) + kEndBytes + loadLE16(p + 20) <= tailBytes) {
      found = i;
      break;
    }
  }
  if (found < 0)
    return formatError(
        path, "not a zip archive (no end-of-central-directory record)");
  const uint8_t *p = tail.data() + found;
  uint64_t endOffset = tailStart + static_cast<uint64_t>(found);
  uint16_t disk = loadLE16(p + 4), directoryDisk = loadLE16(p + 6);
  EndRecord record;
  uint64_t diskEntries = loadLE16(p + 8);
  record.entries = loadLE16(p + 10);
  record.directoryBytes = loadLE32(p + 12);
  record.directoryOffset = loadLE32(p + 16);
  bool zip64 = disk == kMax16 || directoryDisk == kMax16 ||
               diskEntries == kMax16 || record.entries == kMax16 ||
               record.directoryBytes == kMax32 ||
               record.directoryOffset == kMax32;
  if (zip64) {
    if (endOffset < kZip64LocatorBytes)
      return formatError(path, "zip64 end record locator missing");
    uint8_t locator[kZip64LocatorBytes];
    ZERO_RETURN_IF_ERROR(file.readAt(endOffset - kZip64LocatorBytes,
                                     kZip64LocatorBytes, locator,
                                     "the zip64 end record locator"));
    if (loadLE32(locator) != kZip64LocatorSig)
      return formatError(path, "zip64 end record locator missing");
    uint8_t end64[kZip64EndBytes];
    ZERO_RETURN_IF_ERROR(file.readAt(loadLE64(locator + 8), kZip64EndBytes,
                                     end64, "the zip64 end record"));
    if (loadLE32(end64) != kZip64EndSig)
      return formatError(path, "bad zip64 end record signature");
    disk = loadLE32(end64 + 16) == 0 ? 0 : 1;
    directoryDisk = loadLE32(end64 + 20) == 0 ? 0 : 1;
    diskEntries = loadLE64(end64 + 24);
    record.entries = loadLE64(end64 + 32);
    record.directoryBytes = loadLE64(end64 + 40);
    record.directoryOffset = loadLE64(end64 + 48);
  }
  if (disk != 0 || directoryDisk != 0 || diskEntries != record.entries)
    return formatError(path, "multi-disk zip archives are not supported");
  if (record.directoryOffset > endOffset ||
      record.directoryBytes > endOffset - record.directoryOffset)
    return formatError(path, "central directory out of range");
  if (record.entries > record.directoryBytes / kCentralHeaderBytes)
    return formatError(path, "central directory too small for its entries");
  return record;
}

} // namespace

absl::StatusOr<std::vector<ZipEntry>> listZip(const InputFile &file) {
  const std::string &path = file.path();
  ZERO_ASSIGN_OR_RETURN(auto endRecord, readEndRecord(file));
  const EndRecord &record = endRecord;
  std::vector<uint8_t> directory(record.directoryBytes);
  ZERO_RETURN_IF_ERROR(file.readAt(record.directoryOffset,
                                   record.directoryBytes, directory.data(),
                                   "the zip central directory"));

  std::vector<ZipEntry> entries;
  uint64_t pos = 0;
  for (uint64_t index = 0; index < record.entries; ++index) {
    auto bad = [&](absl::string_view what) {
      return formatError(path, absl::StrCat("zip central directory entry ",
                                            index, ": ", what));
    };
    if (directory.size() - pos < kCentralHeaderBytes)
      return bad("truncated");
    const uint8_t *p = directory.data() + pos;
    if (loadLE32(p) != kCentralSig)
      return bad("bad signature");
    ZipEntry entry;
    entry.flags = loadLE16(p + 8);
    entry.method = loadLE16(p + 10);
    entry.crc32 = loadLE32(p + 16);
    entry.compressedSize = loadLE32(p + 20);
    entry.size = loadLE32(p + 24);
    uint64_t nameBytes = loadLE16(p + 28), extraBytes = loadLE16(p + 30),
             commentBytes = loadLE16(p + 32);
    entry.localHeaderOffset = loadLE32(p + 42);
    if (directory.size() - pos - kCentralHeaderBytes <
        nameBytes + extraBytes + commentBytes)
      return bad("truncated");
    entry.name.assign(reinterpret_cast<const char *>(p) + kCentralHeaderBytes,
                      nameBytes);
    // Sizes and offsets that do not fit 32 bits are saturated and moved,
    // in this order, into the zip64 extra field.
    bool needSize = entry.size == kMax32,
         needCompressed = entry.compressedSize == kMax32,
         needOffset = entry.localHeaderOffset == kMax32;
    const uint8_t *extra = p + kCentralHeaderBytes + nameBytes;
    for (uint64_t at = 0; at + 4 <= extraBytes;) {
      uint16_t id = loadLE16(extra + at), length = loadLE16(extra + at + 2);
      if (at + 4 + length > extraBytes)
        return bad("extra field out of range");
      if (id == 0x0001) {
        const uint8_t *field = extra + at + 4;
        uint64_t left = length;
        auto take = [&](bool need, uint64_t *value) {
          if (!need)
            return true;
          if (left < 8)
            return false;
          *value = loadLE64(field);
          field += 8;
          left -= 8;
          return true;
        };
        if (!take(needSize, &entry.size) ||
            !take(needCompressed, &entry.compressedSize) ||
            !take(needOffset, &entry.localHeaderOffset))
          return bad("zip64 extra field too short");
        needSize = needCompressed = needOffset = false;
      }
      at += 4 + length;
    }
    if (needSize || needCompressed || needOffset)
      return bad("zip64 extra field missing");
    pos += kCentralHeaderBytes + nameBytes + extraBytes + commentBytes;
    entries.push_back(std::move(entry));
  }
  return entries;
}

absl::StatusOr<std::vector<uint8_t>> readZipEntry(const InputFile &file,
                                                  const ZipEntry &entry) {
  const std::string &path = file.path();
  auto bad = [&](absl::string_view what) {
    return formatError(path,
                       absl::StrCat("zip entry '", entry.name, "': ", what));
  };
  if (entry.flags & 1)
    return bad("encrypted entries are not supported");
  if (entry.method != 0 && entry.method != 8)
    return bad(absl::StrCat("compression method ", entry.method,
                            " is not supported (only stored and deflated)"));
  uint8_t local[kLocalHeaderBytes];
  ZERO_RETURN_IF_ERROR(
      file.readAt(entry.localHeaderOffset, kLocalHeaderBytes, local,
                  absl::StrCat("the local header of '", entry.name, "'")));
  if (loadLE32(local) != kLocalSig)
    return bad("bad local header signature");
  uint64_t dataOffset = entry.localHeaderOffset + kLocalHeaderBytes +
                        loadLE16(local + 26) + loadLE16(local + 28);
  std::string what = absl::StrCat("the data of '", entry.name, "'");
  // Checked before allocating: a corrupt size must not allocate gigabytes.
  if (dataOffset > file.size() ||
      entry.compressedSize > file.size() - dataOffset)
    return fileError(
        absl::StatusCode::kDataLoss, path,
        absl::StrCat("truncated: ", what, " needs bytes [", dataOffset, ", ",
                     dataOffset + entry.compressedSize, ") but the file has ",
                     file.size(), " bytes"));

  std::vector<uint8_t> data;
  if (entry.method == 0) {
    if (entry.compressedSize != entry.size)
      return bad("stored entry with different compressed and plain sizes");
    data.resize(entry.size);
    ZERO_RETURN_IF_ERROR(
        file.readAt(dataOffset, entry.size, data.data(), what));
  } else {
    // Deflate expands at most ~1032:1; a larger claimed size is corrupt and
    // must not make us allocate it.
    if (entry.size / 1032 > entry.compressedSize + 1)
      return bad(absl::StrCat("implausible size ", entry.size, " for ",
                              entry.compressedSize, " compressed bytes"));
    std::vector<uint8_t> compressed(entry.compressedSize);
    ZERO_RETURN_IF_ERROR(
        file.readAt(dataOffset, entry.compressedSize, compressed.data(), what));
    // One spare byte tells "inflates to more than declared" apart from an
    // exact fit.
    data.resize(entry.size + 1);
    z_stream stream{};
    if (inflateInit2(&stream, -MAX_WBITS) != Z_OK)
      return bad("cannot initialize zlib");
    uint64_t inGiven = 0, outGiven = 0;
    constexpr uint64_t kChunk = uint64_t{1} << 30; // zlib counts in uInt.
    int ret = Z_OK;
    while (true) {
      if (stream.avail_in == 0 && inGiven < compressed.size()) {
        uint64_t chunk = std::min(kChunk, compressed.size() - inGiven);
        stream.next_in = compressed.data() + inGiven;
        stream.avail_in = static_cast<uInt>(chunk);
        inGiven += chunk;
      }
      if (stream.avail_out == 0 && outGiven < data.size()) {
        uint64_t chunk = std::min(kChunk, data.size() - outGiven);
        stream.next_out = data.data() + outGiven;
        stream.avail_out = static_cast<uInt>(chunk);
        outGiven += chunk;
      }
      ret = inflate(&stream, Z_NO_FLUSH);
      if (ret == Z_OK)
        continue;
      bool canRefill = (stream.avail_in == 0 && inGiven < compressed.size()) ||
                       (stream.avail_out == 0 && outGiven < data.size());
      if (ret != Z_BUF_ERROR || !canRefill)
        break;
    }
    uint64_t produced = outGiven - stream.avail_out;
    std::string message = stream.msg ? stream.msg : "";
    inflateEnd(&stream);
    if (produced > entry.size)
      return bad(absl::StrCat("inflates to more than the ", entry.size,
                              " bytes the directory declares"));
    if (ret == Z_DATA_ERROR || ret == Z_NEED_DICT)
      return bad(absl::StrCat("corrupt deflate data: ", message));
    if (ret == Z_MEM_ERROR)
      return bad("out of memory while inflating");
    if (ret != Z_STREAM_END)
      return bad("truncated deflate data");
    if (produced != entry.size)
      return bad(absl::StrCat("inflates to only ", produced,
                              " bytes but the directory declares ",
                              entry.size));
    data.resize(entry.size);
  }
  uint32_t crc = io::crc32(0, data.data(), data.size());
  if (crc != entry.crc32)
    return bad("CRC-32 mismatch (corrupt data)");
  return data;
}

absl::Status ZipWriter::add(const std::string &name, const std::string &head,
                            const uint8_t *data, uint64_t dataBytes) {
  if (name.size() > kMax16)
    return formatError(out_.path(), "zip entry name too long");
  ZipEntry entry;
  entry.name = name;
  entry.size = entry.compressedSize = head.size() + dataBytes;
  entry.localHeaderOffset = out_.bytesWritten();
  entry.crc32 = io::crc32(
      io::crc32(0, reinterpret_cast<const uint8_t *>(head.data()), head.size()),
      data, dataBytes);
  // Bit 11: the name is UTF-8, which is how we got it.
  entry.flags =
      std::any_of(name.begin(), name.end(), [](char c) { return c & 0x80; })
          ? 1u << 11
          : 0;
  bool zip64 = entry.size >= kMax32 || entry.localHeaderOffset >= kMax32;
  std::string header;
  appendLE32(header, kLocalSig);
  appendLE16(header, zip64 ? 45 : 20);
  appendLE16(header, entry.flags);
  appendLE16(header, 0); // stored
  appendLE16(header, 0); // time
  appendLE16(header, kDosDate);
  appendLE32(header, entry.crc32);
  appendLE32(header, zip64 ? kMax32 : entry.size);
  appendLE32(header, zip64 ? kMax32 : entry.size);
  appendLE16(header, static_cast<uint16_t>(name.size()));
  appendLE16(header, zip64 ? 20 : 0);
  header += name;
  if (zip64) {
    appendLE16(header, 0x0001);
    appendLE16(header, 16);
    appendLE64(header, entry.size);
    appendLE64(header, entry.size);
  }
  ZERO_RETURN_IF_ERROR(out_.write(header.data(), header.size()));
  ZERO_RETURN_IF_ERROR(out_.write(head.data(), head.size()));
  ZERO_RETURN_IF_ERROR(out_.write(data, dataBytes));
  entries_.push_back(std::move(entry));
  return absl::OkStatus();
}

absl::Status ZipWriter::finish() {
  uint64_t directoryOffset = out_.bytesWritten();
  std::string directory;
  for (const ZipEntry &entry : entries_) {
    std::string extra;
    auto field32 = [&](uint64_t value) -> uint32_t {
      if (value < kMax32)
        return static_cast<uint32_t>(value);
      appendLE64(extra, value);
      return static_cast<uint32_t>(kMax32);
    };
    uint32_t size32 = field32(entry.size);
    uint32_t compressed32 = field32(entry.compressedSize);
    uint32_t offset32 = field32(entry.localHeaderOffset);
    std::string zip64Extra;
    if (!extra.empty()) {
      appendLE16(zip64Extra, 0x0001);
      appendLE16(zip64Extra, static_cast<uint16_t>(extra.size()));
      zip64Extra += extra;
    }
    uint16_t version = zip64Extra.empty() ? 20 : 45;
    appendLE32(directory, kCentralSig);
    appendLE16(directory, (3 << 8) | version); // made by: Unix
    appendLE16(directory, version);
    appendLE16(directory, entry.flags);
    appendLE16(directory, 0); // stored
    appendLE16(directory, 0); // time
    appendLE16(directory, kDosDate);
    appendLE32(directory, entry.crc32);
    appendLE32(directory, compressed32);
    appendLE32(directory, size32);
    appendLE16(directory, static_cast<uint16_t>(entry.name.size()));
    appendLE16(directory, static_cast<uint16_t>(zip64Extra.size()));
    appendLE16(directory, 0);              // comment
    appendLE16(directory, 0);              // disk
    appendLE16(directory, 0);              // internal attributes
    appendLE32(directory, 0100644u << 16); // regular file, rw-r--r--
    appendLE32(directory, offset32);
    directory += entry.name;
    directory += zip64Extra;
  }
  uint64_t directoryBytes = directory.size();
  uint64_t count = entries_.size();
  bool zip64 =
      count >= kMax16 || directoryOffset >= kMax32 || directoryBytes >= kMax32;
  if (zip64) {
    uint64_t end64Offset = directoryOffset + directoryBytes;
    appendLE32(directory, kZip64EndSig);
    appendLE64(directory, kZip64EndBytes - 12);
    appendLE16(directory, (3 << 8) | 45);
    appendLE16(directory, 45);
    appendLE32(directory, 0);
    appendLE32(directory, 0);
    appendLE64(directory, count);
    appendLE64(directory, count);
    appendLE64(directory, directoryBytes);
    appendLE64(directory, directoryOffset);
    appendLE32(directory, kZip64LocatorSig);
    appendLE32(directory, 0);
    appendLE64(directory, end64Offset);
    appendLE32(directory, 1);
  }
  appendLE32(directory, kEndSig);
  appendLE16(directory, 0);
  appendLE16(directory, 0);
  appendLE16(directory, static_cast<uint16_t>(std::min(count, kMax16)));
  appendLE16(directory, static_cast<uint16_t>(std::min(count, kMax16)));
  appendLE32(directory,
             static_cast<uint32_t>(std::min(directoryBytes, kMax32)));
  appendLE32(directory,
             static_cast<uint32_t>(std::min(directoryOffset, kMax32)));
  appendLE16(directory, 0); // comment
  return out_.write(directory.data(), directory.size());
}

} // namespace zero::rt::io
