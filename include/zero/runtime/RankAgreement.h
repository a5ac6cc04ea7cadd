//===- RankAgreement.h - Ranks check they run the same job ------*- C++ -*-===//
//
// ZeRO programs are SPMD: ranks that compiled another stage, model or
// configuration issue other collectives and hang in, or silently corrupt,
// each other's. Before the first step every rank states what it runs as a
// few named facts; one all-gather of their fingerprints compares them, and a
// mismatch is refused on every rank, naming the rank and what differs.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_RANKAGREEMENT_H
#define ZERO_RUNTIME_RANKAGREEMENT_H

#include "zero/runtime/Communicator.h"

#include "absl/status/status.h"
#include "absl/types/span.h"

#include <string>

namespace zero::rt {

/// One thing every rank must agree on: what it is in the user's words ("the
/// ZeRO stage", "the program") and its value on this rank. A value of up to
/// RankFact::kShownBytes bytes is quoted in the error; a longer one (a
/// program's text) is compared by a 64-bit fingerprint only.
struct RankFact {
  std::string what;
  std::string value;
  static constexpr size_t kShownBytes = 200;
};

/// Collective: every rank passes the same facts in the same order. OK when
/// every rank's values equal rank 0's; otherwise InvalidArgument on every
/// rank, naming the first fact that differs and the lowest rank that differs
/// from rank 0, e.g. "rank 1 differs from rank 0 in the ZeRO stage: 2, where
/// rank 0 has 1". `advice` ends the message.
absl::Status checkRanksAgree(Communicator &comm,
                             absl::Span<const RankFact> facts,
                             absl::string_view advice);

/// The 64-bit FNV-1a fingerprint of `text`.
uint64_t fingerprint(absl::string_view text);

} // namespace zero::rt

#endif // ZERO_RUNTIME_RANKAGREEMENT_H
