//===- ByteSize.h - Byte counts as people write them ------------*- C++ -*-===//
//
// Memory budgets on the command line and in the builder: "80GiB", "1.5 GB",
// "512MiB", "1000000".
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_SUPPORT_BYTESIZE_H
#define ZERO_SUPPORT_BYTESIZE_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace zero {

/// Parses a non-negative number of bytes with an optional unit: B, kB, MB,
/// GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), any
/// case, with or without a space. Fractions are allowed with a unit and
/// rounded down to whole bytes. Nullopt for anything else, including values
/// past 2^63.
std::optional<int64_t> parseByteSize(llvm::StringRef text);

} // namespace zero

#endif // ZERO_SUPPORT_BYTESIZE_H
