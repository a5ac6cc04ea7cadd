//===- StepProfile.h - Measured per-instruction timeline --------*- C++ -*-===//
//
// What `zero-run --profile` records on each rank: when each instruction of
// the step ran, on which stream, as numbers only (body, instruction index,
// stream, step, begin and end), so that every rank's events can be gathered
// with one all-gather and named on rank 0 from its own copy of the program.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_STEPPROFILE_H
#define ZERO_RUNTIME_STEPPROFILE_H

#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

namespace zero::rt {

struct ProfileEvent {
  int64_t body = 0;
  int64_t instruction = 0;
  int64_t stream = 0;
  int64_t step = 0;
  /// Nanoseconds of the monotonic clock (one clock per host).
  int64_t beginNs = 0;
  int64_t endNs = 0;
  static constexpr int kFields = 6;
};

/// Events from the threads that run a rank's streams.
class StepProfile {
public:
  static int64_t nowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void add(const ProfileEvent &event) {
    std::lock_guard<std::mutex> lock(mutex);
    events.push_back(event);
  }
  std::vector<ProfileEvent> takeEvents() {
    std::lock_guard<std::mutex> lock(mutex);
    return std::move(events);
  }

private:
  std::mutex mutex;
  std::vector<ProfileEvent> events;
};

} // namespace zero::rt

#endif // ZERO_RUNTIME_STEPPROFILE_H
