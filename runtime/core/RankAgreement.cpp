//===- RankAgreement.cpp - Ranks check they run the same job --------------===//

#include "zero/runtime/RankAgreement.h"

#include "absl/strings/str_cat.h"

#include <cstring>
#include <vector>

namespace zero::rt {

uint64_t fingerprint(absl::string_view text) {
  uint64_t hash = 1469598103934665603ull;
  for (char c : text)
    hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return hash;
}

namespace {
/// What each rank contributes per fact: the fingerprint of the value, and
/// the value itself when it is short enough to be quoted.
struct FactRecord {
  uint64_t hash;
  uint64_t length;
  char shown[RankFact::kShownBytes];
};
static_assert(sizeof(FactRecord) % sizeof(int64_t) == 0);

std::string describe(const FactRecord &record) {
  if (record.length <= RankFact::kShownBytes)
    return std::string(record.shown, record.length);
  return absl::StrCat("fingerprint ", absl::Hex(record.hash, absl::kZeroPad16));
}
} // namespace

absl::Status checkRanksAgree(Communicator &comm,
                             absl::Span<const RankFact> facts,
                             absl::string_view advice) {
  if (comm.size() == 1 || facts.empty())
    return absl::OkStatus();
  std::vector<FactRecord> mine(facts.size());
  for (size_t index = 0; index < facts.size(); ++index) {
    FactRecord &record = mine[index];
    std::memset(&record, 0, sizeof(record));
    record.hash = fingerprint(facts[index].value);
    record.length = facts[index].value.size();
    if (record.length <= RankFact::kShownBytes)
      std::memcpy(record.shown, facts[index].value.data(), record.length);
  }
  int64_t words =
      static_cast<int64_t>(mine.size() * sizeof(FactRecord) / sizeof(int64_t));
  std::vector<FactRecord> all(mine.size() * comm.size());
  if (absl::Status status =
          comm.allGather(mine.data(), all.data(), words, DType::i64);
      !status.ok())
    return absl::Status(
        status.code(),
        absl::StrCat("checking that the ranks run the same job: ",
                     status.message()));
  for (size_t index = 0; index < facts.size(); ++index)
    for (int rank = 1; rank < comm.size(); ++rank) {
      const FactRecord &first = all[index];
      const FactRecord &theirs = all[rank * facts.size() + index];
      if (theirs.hash == first.hash && theirs.length == first.length)
        continue;
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", rank, " differs from rank 0 in ",
                       facts[index].what, ": ", describe(theirs),
                       ", where rank 0 has ", describe(first), "; ", advice));
    }
  return absl::OkStatus();
}

} // namespace zero::rt
