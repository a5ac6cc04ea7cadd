//===- Sbp.cpp - Split / broadcast / partial descriptors ------------------===//

#include "zero/support/Sbp.h"

#include "llvm/ADT/StringExtras.h"

// The enumeration definitions live here, in the dependency-free support
// library, so that the dialects and the unit tests share one copy.
#include "zero/dialects/dist/DistEnums.cpp.inc"

namespace zero::dist {

llvm::hash_code hash_value(const SbpDim &sbp) {
  return llvm::hash_combine(static_cast<int>(sbp.kind), sbp.dim,
                            static_cast<int>(sbp.reduce));
}

static std::optional<SbpDim> fail(std::string *error,
                                  const llvm::Twine &message) {
  if (error)
    *error = message.str();
  return std::nullopt;
}

std::optional<SbpDim> parseSbpDim(llvm::StringRef text, std::string *error) {
  text = text.trim();
  if (text == "B")
    return SbpDim::broadcast();
  char head = text.empty() ? '\0' : text.front();
  if (head != 'S' && head != 'P')
    return fail(error,
                "expected S(dim), B or P(sum|mean|max), got '" + text + "'");
  llvm::StringRef rest = text.drop_front().ltrim();
  if (!rest.consume_front("(") || !rest.consume_back(")"))
    return fail(error, "expected '" + llvm::Twine(head) +
                           "(...)' with parentheses, got '" + text + "'");
  rest = rest.trim();
  if (head == 'S') {
    int64_t dim;
    if (rest.getAsInteger(10, dim) || dim < 0)
      return fail(error, "S(dim) needs a non-negative tensor dimension, got '" +
                             rest + "'");
    return SbpDim::split(dim);
  }
  std::optional<ReduceKind> reduce = symbolizeReduceKind(rest);
  if (!reduce)
    return fail(error,
                "P(op) needs op to be sum, mean or max, got '" + rest + "'");
  return SbpDim::partial(*reduce);
}

std::optional<llvm::SmallVector<SbpDim>> parseSbpList(llvm::StringRef text,
                                                      std::string *error) {
  text = text.trim();
  if (!text.consume_front("[") || !text.consume_back("]")) {
    if (error)
      *error = "expected a bracketed SBP list such as [S(0), B]";
    return std::nullopt;
  }
  llvm::SmallVector<SbpDim> list;
  if (text.trim().empty())
    return list;
  // Entries never contain commas, so a plain split is exact.
  llvm::SmallVector<llvm::StringRef> pieces;
  text.split(pieces, ',');
  for (llvm::StringRef piece : pieces) {
    std::optional<SbpDim> entry = parseSbpDim(piece, error);
    if (!entry)
      return std::nullopt;
    list.push_back(*entry);
  }
  return list;
}

std::string formatSbpDim(const SbpDim &sbp) {
  switch (sbp.kind) {
  case SbpKind::split:
    return "S(" + std::to_string(sbp.dim) + ")";
  case SbpKind::broadcast:
    return "B";
  case SbpKind::partial:
    return "P(" + stringifyReduceKind(sbp.reduce).str() + ")";
  }
  return "?";
}

std::string formatSbpList(llvm::ArrayRef<SbpDim> list) {
  std::string text = "[";
  llvm::interleave(
      list, [&](const SbpDim &sbp) { text += formatSbpDim(sbp); },
      [&] { text += ", "; });
  return text + "]";
}

llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const SbpDim &sbp) {
  return os << formatSbpDim(sbp);
}

} // namespace zero::dist
