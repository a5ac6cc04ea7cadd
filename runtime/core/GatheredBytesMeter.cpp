//===- GatheredBytesMeter.cpp - Gathered bytes alive in a loaded body -----===//

#include "GatheredBytesMeter.h"

#include <algorithm>
#include <map>

namespace zero::rt {

static bool overlaps(const GatheredBytesMeter::Range &a,
                     const GatheredBytesMeter::Range &b) {
  return a.begin < b.begin + b.bytes && b.begin < a.begin + a.bytes;
}

void GatheredBytesMeter::addInstruction(Kind kind,
                                        const std::vector<Range> &reads,
                                        const std::vector<Range> &writes) {
  bool readsGathered = false;
  for (Gathered &alive : gathered) {
    if (alive.reusable)
      continue;
    for (const Range &read : reads)
      if (overlaps(alive.range, read)) {
        alive.last = index;
        readsGathered = true;
      }
  }
  // The arena hands out the bytes again: what was gathered there is gone.
  for (Gathered &alive : gathered)
    for (const Range &write : writes)
      if (!alive.reusable && overlaps(alive.range, write) &&
          alive.first != index)
        alive.reusable = true;
  // An all-gather's output, and a copy out of a gathered bucket (one of its
  // members, unpacked), hold gathered parameters; what a kernel computes
  // from them does not.
  if (kind == Kind::allGather || (kind == Kind::copy && readsGathered))
    for (const Range &write : writes)
      gathered.push_back({write, index, index});
  ++index;
}

int64_t GatheredBytesMeter::getPeak() const {
  std::map<int64_t, int64_t> change;
  for (const Gathered &alive : gathered) {
    change[alive.first] += alive.range.bytes;
    change[alive.last + 1] -= alive.range.bytes;
  }
  int64_t live = 0, peak = 0;
  for (const auto &[at, delta] : change) {
    live += delta;
    peak = std::max(peak, live);
  }
  return peak;
}

} // namespace zero::rt
