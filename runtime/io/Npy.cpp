//===- Npy.cpp - NumPy .npy and .npz --------------------------------------===//
//
// .npy: "\x93NUMPY", major and minor version bytes, the header length (u16
// in version 1.0, u32 in 2.0 and 3.0), then a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
// spaces and a newline, then the raw array. .npz: a zip of "name.npy".
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/TensorFile.h"
#include "zero/support/Status.h"

#include "FileIO.h"
#include "Zip.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <new>
#include <optional>

namespace zero::rt {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;
// NumPy itself refuses headers over 10000 bytes by default; this only has
// to keep a corrupt length from allocating much.
constexpr uint64_t kMaxHeaderBytes = uint64_t{1} << 24;

/// Reads bytes [offset, offset + length) of the .npy, wherever it lives.
using ByteSource = std::function<absl::Status(uint64_t offset, uint64_t length,
                                              void *out, absl::string_view)>;

struct NpyLayout {
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t dataOffset = 0;
  uint64_t dataBytes = 0;
};

const char *npyDescr(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return "<f4";
  case DType::f16:
    return "<f2";
  case DType::i32:
    return "<i4";
  case DType::i64:
    return "<i8";
  case DType::bf16:
  case DType::i8:
    return nullptr;
  }
  return nullptr;
}

absl::StatusOr<DType> parseDescr(const std::string &descr,
                                 absl::string_view where) {
  // '=' is native order, little-endian on every host we build for.
  std::string canonical = descr;
  if (!canonical.empty() && canonical[0] == '=')
    canonical[0] = '<';
  for (DType dtype : {DType::f32, DType::f16, DType::i32, DType::i64})
    if (canonical == npyDescr(dtype))
      return dtype;
  auto unsupported = [&](absl::string_view hint) {
    return io::formatError(
        where, absl::StrCat("unsupported dtype '", descr, "' (", hint, ")"));
  };
  std::string kind = descr;
  if (!kind.empty() &&
      (kind[0] == '<' || kind[0] == '>' || kind[0] == '=' || kind[0] == '|'))
    kind = kind.substr(1);
  if (kind == "f8" || kind == "float64" || kind == "d")
    return unsupported("float64 is not supported: convert the array to "
                       "float32, e.g. arr.astype(np.float32)");
  if (!descr.empty() && descr[0] == '>')
    return unsupported("big-endian data is not supported: save it "
                       "little-endian, e.g. arr.astype(arr.dtype.newbyteorder("
                       "'<'))");
  return unsupported("expected '<f4', '<f2', '<i4' or '<i8'");
}

/// The header dict, a Python literal: strings, True/False and tuples of
/// non-negative integers are all NumPy writes for a plain array.
class HeaderParser {
public:
  HeaderParser(absl::string_view text, std::string where)
      : text_(text), where_(std::move(where)) {}

  absl::StatusOr<NpyLayout> parse() {
    std::optional<std::string> descr;
    std::optional<bool> fortranOrder;
    std::optional<std::vector<int64_t>> shape;
    skipSpace();
    if (!consume('{'))
      return error("header is not a dict");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (!parseString(&key))
        return error("expected a quoted key");
      skipSpace();
      if (!consume(':'))
        return error(absl::StrCat("expected ':' after '", key, "'"));
      skipSpace();
      if (key == "descr") {
        if (peek() == '[')
          return error("structured dtypes (a list descr) are not supported");
        std::string value;
        if (!parseString(&value))
          return error("'descr' is not a string");
        descr = value;
      } else if (key == "fortran_order") {
        bool value;
        if (!parseBool(&value))
          return error("'fortran_order' is not True or False");
        fortranOrder = value;
      } else if (key == "shape") {
        std::vector<int64_t> value;
        if (!parseShape(&value))
          return error("'shape' is not a tuple of non-negative integers");
        shape = value;
      } else {
        return error(absl::StrCat("unexpected key '", key, "'"));
      }
      skipSpace();
      if (consume('}'))
        break;
      if (!consume(','))
        return error("expected ',' or '}'");
    }
    skipSpace();
    if (pos_ != text_.size())
      return error("trailing characters after the dict");
    if (!descr || !fortranOrder || !shape)
      return error("missing 'descr', 'fortran_order' or 'shape'");
    if (*fortranOrder)
      return io::formatError(
          where_, "fortran_order is True: only C-ordered arrays are supported "
                  "(save np.ascontiguousarray(arr))");
    ZERO_ASSIGN_OR_RETURN(auto dtype, parseDescr(*descr, where_));
    NpyLayout layout;
    layout.dtype = dtype;
    layout.shape = *shape;
    // Counting bytes, not elements, so that the byte count cannot overflow.
    int64_t bytes = dtypeBytes(dtype);
    for (int64_t dim : layout.shape)
      if (!io::multiplyChecked(dim, &bytes))
        return error("shape is too large");
    layout.dataBytes = static_cast<uint64_t>(bytes);
    return layout;
  }

private:
  absl::Status error(absl::string_view what) {
    return io::formatError(where_, absl::StrCat("bad npy header: ", what));
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    if (peek() != c)
      return false;
    ++pos_;
    return true;
  }
  bool consumeWord(absl::string_view word) {
    if (!absl::StartsWith(text_.substr(pos_), word))
      return false;
    pos_ += word.size();
    return true;
  }
  void skipSpace() {
    while (pos_ < text_.size() && absl::ascii_isspace(text_[pos_]))
      ++pos_;
  }
  bool parseString(std::string *out) {
    char quote = peek();
    if (quote != '\'' && quote != '"')
      return false;
    size_t end = text_.find(quote, pos_ + 1);
    if (end == absl::string_view::npos)
      return false;
    absl::string_view body = text_.substr(pos_ + 1, end - pos_ - 1);
    // NumPy never escapes inside these strings; a backslash means a header
    // we do not understand.
    if (body.find('\\') != absl::string_view::npos)
      return false;
    *out = std::string(body);
    pos_ = end + 1;
    return true;
  }
  bool parseBool(bool *out) {
    if (consumeWord("True"))
      *out = true;
    else if (consumeWord("False"))
      *out = false;
    else
      return false;
    return true;
  }
  bool parseShape(std::vector<int64_t> *out) {
    if (!consume('('))
      return false;
    while (true) {
      skipSpace();
      if (consume(')'))
        return true;
      if (!absl::ascii_isdigit(peek()))
        return false;
      int64_t value = 0;
      while (absl::ascii_isdigit(peek())) {
        if (value > (int64_t{1} << 62) / 10)
          return false;
        value = value * 10 + (text_[pos_++] - '0');
      }
      consume('L'); // Python 2 longs, in files NumPy wrote long ago.
      out->push_back(value);
      skipSpace();
      if (consume(')'))
        return true;
      if (!consume(','))
        return false;
    }
  }

  absl::string_view text_;
  std::string where_;
  size_t pos_ = 0;
};

absl::StatusOr<NpyLayout> readNpyLayout(const ByteSource &read,
                                        uint64_t totalBytes,
                                        const std::string &where) {
  uint8_t prefix[12];
  uint64_t prefixBytes = std::min<uint64_t>(totalBytes, sizeof(prefix));
  ZERO_RETURN_IF_ERROR(read(0, prefixBytes, prefix, "the npy preamble"));
  if (prefixBytes < kMagicBytes ||
      std::memcmp(prefix, kMagic, kMagicBytes) != 0)
    return io::formatError(where, "not an npy file (bad magic)");
  if (prefixBytes < 10)
    return io::fileError(absl::StatusCode::kDataLoss, where,
                         "truncated npy preamble");
  uint8_t major = prefix[6], minor = prefix[7];
  uint64_t headerBytes, headerStart;
  if (major == 1) {
    headerBytes = io::loadLE16(prefix + 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (prefixBytes < 12)
      return io::fileError(absl::StatusCode::kDataLoss, where,
                           "truncated npy preamble");
    headerBytes = io::loadLE32(prefix + 8);
    headerStart = 12;
  } else {
    return io::formatError(where,
                           absl::StrCat("unsupported npy version ", major, ".",
                                        minor, " (expected 1.0, 2.0 or 3.0)"));
  }
  if (headerBytes > kMaxHeaderBytes)
    return io::formatError(where,
                           absl::StrCat("npy header length ", headerBytes,
                                        " is implausibly large"));
  std::string header(headerBytes, '\0');
  ZERO_RETURN_IF_ERROR(
      read(headerStart, headerBytes, header.data(), "the npy header"));
  ZERO_ASSIGN_OR_RETURN(auto layout, HeaderParser(header, where).parse());
  layout.dataOffset = headerStart + headerBytes;
  uint64_t available = totalBytes - layout.dataOffset;
  if (available != layout.dataBytes) {
    std::string message =
        absl::StrCat("shape (", absl::StrJoin(layout.shape, ", "), ") of ",
                     dtypeName(layout.dtype), " needs ", layout.dataBytes,
                     " data bytes but ", available, " follow the header");
    if (available < layout.dataBytes)
      return io::fileError(absl::StatusCode::kDataLoss, where,
                           absl::StrCat("truncated: ", message));
    return io::formatError(
        where, absl::StrCat("shape/byte-count mismatch: ", message));
  }
  return layout;
}

/// An .npy held in memory (an .npz entry); consumes `bytes`.
absl::StatusOr<HostTensor> parseNpyBytes(std::vector<uint8_t> bytes,
                                         const std::string &where) {
  ByteSource read = [&](uint64_t offset, uint64_t length, void *out,
                        absl::string_view what) -> absl::Status {
    if (offset > bytes.size() || length > bytes.size() - offset)
      return io::fileError(absl::StatusCode::kDataLoss, where,
                           absl::StrCat("truncated ", what));
    if (length > 0)
      std::memcpy(out, bytes.data() + offset, length);
    return absl::OkStatus();
  };
  ZERO_ASSIGN_OR_RETURN(auto layout, readNpyLayout(read, bytes.size(), where));
  HostTensor tensor;
  tensor.dtype = layout.dtype;
  tensor.shape = layout.shape;
  // Drop the header in place rather than copying the array out.
  bytes.erase(bytes.begin(), bytes.begin() + layout.dataOffset);
  tensor.data = std::move(bytes);
  return tensor;
}

absl::StatusOr<std::string> npyHeader(const HostTensor &tensor,
                                      absl::string_view where) {
  ZERO_RETURN_IF_ERROR(checkTensor(tensor, where));
  const char *descr = npyDescr(tensor.dtype);
  if (!descr)
    return io::formatError(where, "npy has no bfloat16: convert the tensor "
                                  "to f32 or write safetensors");
  std::string shape = "(" + absl::StrJoin(tensor.shape, ", ") +
                      (tensor.shape.size() == 1 ? ",)" : ")");
  std::string dict =
      absl::StrCat("{'descr': '", descr,
                   "', 'fortran_order': False, 'shape': ", shape, ", }");
  // Pad with spaces and a final newline so the array starts 64-byte
  // aligned, as NumPy does; version 2.0 only when 1.0's u16 cannot hold it.
  auto roundUp = [](size_t n) { return (n + 63) / 64 * 64; };
  size_t preamble = 10;
  size_t padded = roundUp(preamble + dict.size() + 1);
  bool v1 = padded - preamble <= 0xffff;
  if (!v1) {
    preamble = 12;
    padded = roundUp(preamble + dict.size() + 1);
  }
  dict.append(padded - preamble - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string out(kMagic, kMagicBytes);
  out.push_back(static_cast<char>(v1 ? 1 : 2));
  out.push_back(0);
  if (v1)
    io::appendLE16(out, static_cast<uint16_t>(dict.size()));
  else
    io::appendLE32(out, static_cast<uint32_t>(dict.size()));
  return out + dict;
}

std::string entryKey(const std::string &name) {
  return name.substr(0, name.size() - 4);
}

bool isArrayEntry(const io::ZipEntry &entry) {
  return absl::EndsWith(entry.name, ".npy");
}

template <typename Fn> auto guarded(const std::string &path, Fn fn) {
  // Allocation may fail on a huge but consistent file; nothing may escape.
  try {
    return fn();
  } catch (const std::bad_alloc &) {
    return decltype(fn())(io::fileError(absl::StatusCode::kResourceExhausted,
                                        path, "out of memory"));
  } catch (const std::exception &e) {
    return decltype(fn())(
        io::fileError(absl::StatusCode::kInternal, path, e.what()));
  }
}

} // namespace

absl::StatusOr<HostTensor> readNpy(const std::string &path) {
  return guarded(path, [&]() -> absl::StatusOr<HostTensor> {
    ZERO_ASSIGN_OR_RETURN(auto opened, io::InputFile::open(path));
    const io::InputFile &file = *opened;
    ByteSource read = [&](uint64_t offset, uint64_t length, void *out,
                          absl::string_view what) {
      return file.readAt(offset, length, out, what);
    };
    ZERO_ASSIGN_OR_RETURN(auto layout, readNpyLayout(read, file.size(), path));
    HostTensor tensor;
    tensor.dtype = layout.dtype;
    tensor.shape = layout.shape;
    tensor.data.resize(layout.dataBytes);
    ZERO_RETURN_IF_ERROR(file.readAt(layout.dataOffset, layout.dataBytes,
                                     tensor.data.data(), "the array data"));
    return tensor;
  });
}

absl::Status writeNpy(const std::string &path, const HostTensor &tensor) {
  return guarded(path, [&]() -> absl::Status {
    ZERO_ASSIGN_OR_RETURN(auto header, npyHeader(tensor, path));
    ZERO_ASSIGN_OR_RETURN(auto created, io::AtomicOutputFile::create(path));
    io::AtomicOutputFile &out = *created;
    ZERO_RETURN_IF_ERROR(out.write(header.data(), header.size()));
    ZERO_RETURN_IF_ERROR(out.write(tensor.data.data(), tensor.data.size()));
    return out.commit();
  });
}

absl::StatusOr<TensorMap> readNpz(const std::string &path) {
  return guarded(path, [&]() -> absl::StatusOr<TensorMap> {
    ZERO_ASSIGN_OR_RETURN(auto opened, io::InputFile::open(path));
    const io::InputFile &file = *opened;
    ZERO_ASSIGN_OR_RETURN(auto entries, io::listZip(file));
    TensorMap tensors;
    for (const io::ZipEntry &entry : entries) {
      // NumPy loads only the .npy members as arrays; others (directories,
      // notes) are not ours to interpret.
      if (!isArrayEntry(entry))
        continue;
      std::string key = entryKey(entry.name);
      if (tensors.count(key))
        return io::formatError(
            path, absl::StrCat("duplicate zip entry '", entry.name, "'"));
      ZERO_ASSIGN_OR_RETURN(auto bytes, io::readZipEntry(file, entry));
      ZERO_ASSIGN_OR_RETURN(
          auto tensor, parseNpyBytes(std::move(bytes),
                                     absl::StrCat(path, " entry '", key, "'")));
      tensors.emplace(std::move(key), std::move(tensor));
    }
    return tensors;
  });
}

absl::StatusOr<HostTensor> readNpzEntry(const std::string &path,
                                        absl::string_view key) {
  return guarded(path, [&]() -> absl::StatusOr<HostTensor> {
    ZERO_ASSIGN_OR_RETURN(auto opened, io::InputFile::open(path));
    const io::InputFile &file = *opened;
    ZERO_ASSIGN_OR_RETURN(auto entries, io::listZip(file));
    std::vector<std::string> keys;
    for (const io::ZipEntry &entry : entries) {
      if (!isArrayEntry(entry))
        continue;
      if (entryKey(entry.name) != key) {
        keys.push_back(entryKey(entry.name));
        continue;
      }
      ZERO_ASSIGN_OR_RETURN(auto bytes, io::readZipEntry(file, entry));
      return parseNpyBytes(std::move(bytes),
                           absl::StrCat(path, " entry '", key, "'"));
    }
    return io::fileError(absl::StatusCode::kNotFound, path,
                         absl::StrCat("zip entry '", key,
                                      ".npy' missing (the archive has ",
                                      io::listNames(keys), ")"));
  });
}

absl::Status writeNpz(const std::string &path, const TensorMap &tensors) {
  return guarded(path, [&]() -> absl::Status {
    std::vector<std::string> headers;
    for (const auto &[key, tensor] : tensors) {
      ZERO_ASSIGN_OR_RETURN(
          auto header,
          npyHeader(tensor, absl::StrCat(path, " entry '", key, "'")));
      headers.push_back(std::move(header));
    }
    ZERO_ASSIGN_OR_RETURN(auto created, io::AtomicOutputFile::create(path));
    io::ZipWriter zip(*created);
    size_t index = 0;
    for (const auto &[key, tensor] : tensors)
      ZERO_RETURN_IF_ERROR(zip.add(key + ".npy", headers[index++],
                                   tensor.data.data(), tensor.data.size()));
    ZERO_RETURN_IF_ERROR(zip.finish());
    return (created)->commit();
  });
}

} // namespace zero::rt
