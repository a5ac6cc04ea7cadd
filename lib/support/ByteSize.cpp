//===- ByteSize.cpp - Byte counts as people write them --------------------===//

#include "zero/support/ByteSize.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <cstdlib>
#include <string>

std::optional<int64_t> zero::parseByteSize(llvm::StringRef text) {
  text = text.trim();
  size_t numberEnd = text.find_first_not_of("0123456789.");
  llvm::StringRef number = text.take_front(numberEnd);
  llvm::StringRef unit = text.drop_front(number.size()).trim();
  if (number.empty() || number.count('.') > 1 || number == ".")
    return std::nullopt;
  double scale = llvm::StringSwitch<double>(unit.lower())
                     .Cases("", "b", 1.0)
                     .Case("kb", 1e3)
                     .Case("mb", 1e6)
                     .Case("gb", 1e9)
                     .Case("tb", 1e12)
                     .Case("kib", 1024.0)
                     .Case("mib", 1024.0 * 1024)
                     .Case("gib", 1024.0 * 1024 * 1024)
                     .Case("tib", 1024.0 * 1024 * 1024 * 1024)
                     .Default(0.0);
  if (scale == 0.0 || (unit.empty() && number.contains('.')))
    return std::nullopt;
  double bytes = std::floor(std::strtod(number.str().c_str(), nullptr) * scale);
  if (!std::isfinite(bytes) || bytes < 0 || bytes >= 9.2e18)
    return std::nullopt;
  return static_cast<int64_t>(bytes);
}
