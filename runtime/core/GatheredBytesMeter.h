//===- GatheredBytesMeter.h - Gathered bytes alive in a loaded body -*- C++
//-*-===//
//
// zero-report predicts how many gathered parameter bytes a stage-3 step
// holds at once (zero-schedule bounds it). The meter measures the same on
// what the runtime loaded: the arena bytes each all-gather writes, and each
// copy out of them, are alive from that instruction to the last one that
// reads them, in the order the body runs them. A later write to the same
// bytes ends them: the arena reused the space.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CORE_GATHEREDBYTESMETER_H
#define ZERO_RUNTIME_CORE_GATHEREDBYTESMETER_H

#include <cstdint>
#include <vector>

namespace zero::rt {

class GatheredBytesMeter {
public:
  /// A byte range [begin, begin + bytes) of the device arena.
  struct Range {
    const char *begin;
    int64_t bytes;
  };

  enum class Kind { other, allGather, copy };

  /// The next instruction and the arena bytes it reads and writes.
  void addInstruction(Kind kind, const std::vector<Range> &reads,
                      const std::vector<Range> &writes);

  /// The most gathered bytes alive at once in the instructions added.
  int64_t getPeak() const;

private:
  struct Gathered {
    Range range;
    int64_t first, last;
    bool reusable = false;
  };
  std::vector<Gathered> gathered;
  int64_t index = 0;
};

} // namespace zero::rt

#endif // ZERO_RUNTIME_CORE_GATHEREDBYTESMETER_H
