//===- Sbp.h - Split / broadcast / partial descriptors -----------*- C++
//-*-===//
//
// One SBP entry describes how a tensor relates to its logical value along one
// placement axis: S(d) split along tensor dimension d, B broadcast (every rank
// holds all of it), P(sum|mean|max) partial (the logical value is the
// reduction of the ranks' values). A tensor carries one entry per placement
// axis. The textual forms here are the ones `#dist.sbp` prints.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_SUPPORT_SBP_H
#define ZERO_SUPPORT_SBP_H

#include "zero/dialects/dist/DistEnums.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>

namespace zero::dist {

struct SbpDim {
  SbpKind kind = SbpKind::broadcast;
  /// Tensor dimension for S(d); 0 otherwise.
  int64_t dim = 0;
  /// Reduction for P(op); sum otherwise.
  ReduceKind reduce = ReduceKind::sum;

  static SbpDim split(int64_t dim) {
    return {SbpKind::split, dim, ReduceKind::sum};
  }
  static SbpDim broadcast() { return {SbpKind::broadcast, 0, ReduceKind::sum}; }
  static SbpDim partial(ReduceKind reduce) {
    return {SbpKind::partial, 0, reduce};
  }

  bool isSplit() const { return kind == SbpKind::split; }
  bool isBroadcast() const { return kind == SbpKind::broadcast; }
  bool isPartial() const { return kind == SbpKind::partial; }

  bool operator==(const SbpDim &other) const {
    return kind == other.kind && dim == other.dim && reduce == other.reduce;
  }
  bool operator!=(const SbpDim &other) const { return !(*this == other); }
};

llvm::hash_code hash_value(const SbpDim &sbp);

/// Parses one entry: `S(0)`, `B`, `P(sum)`, `P(mean)`, `P(max)`. Whitespace
/// around tokens is allowed. Returns std::nullopt and sets `error` (when given)
/// to a user-facing message on malformed text.
std::optional<SbpDim> parseSbpDim(llvm::StringRef text,
                                  std::string *error = nullptr);

/// Parses a bracketed list, one entry per placement axis: `[S(0), B]`.
std::optional<llvm::SmallVector<SbpDim>>
parseSbpList(llvm::StringRef text, std::string *error = nullptr);

/// The textual form parseSbpDim accepts.
std::string formatSbpDim(const SbpDim &sbp);
std::string formatSbpList(llvm::ArrayRef<SbpDim> list);

llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const SbpDim &sbp);

} // namespace zero::dist

#endif // ZERO_SUPPORT_SBP_H
