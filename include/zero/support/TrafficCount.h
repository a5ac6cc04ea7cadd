//===- TrafficCount.h - One collective kind over one step -------*- C++ -*-===//
//
// The traffic of one collective kind over one training step, as the
// compiler plans it (PlanReport, the program's zrt.report) and as a rank's
// communicator measures it: one type, so that the measured counts are held
// against the planned ones field by field.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_SUPPORT_TRAFFICCOUNT_H
#define ZERO_SUPPORT_TRAFFICCOUNT_H

#include <cstdint>

namespace zero {

struct TrafficCount {
  int64_t count = 0;
  /// Elements in the collectives' full tensors (padding included).
  int64_t elements = 0;
  int64_t bytes = 0;
  /// Ring accounting: what each rank sends, (N-1)/N of the payload, twice
  /// for an all-reduce.
  double sentBytesPerRank = 0.0;
  /// Payload elements as the ZeRO table counts them (twice for all-reduce);
  /// the plan's alone.
  int64_t volumeElements = 0;

  bool operator==(const TrafficCount &other) const {
    return count == other.count && elements == other.elements &&
           bytes == other.bytes && sentBytesPerRank == other.sentBytesPerRank &&
           volumeElements == other.volumeElements;
  }
  bool operator!=(const TrafficCount &other) const { return !(*this == other); }
};

} // namespace zero

#endif // ZERO_SUPPORT_TRAFFICCOUNT_H
