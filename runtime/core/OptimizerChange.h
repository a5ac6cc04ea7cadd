//===- OptimizerChange.h - How two optimizers differ, in words ------------===//
//
// Internal to the runtime core. A checkpoint records each update kernel of
// its program with its hyper-parameters as text ("train.adamw {beta1 =
// 9.000000e-01 : f64, ...}"); resuming under another optimizer is refused,
// and the refusal says which kernel or hyper-parameter differs, in numbers
// a user recognizes, rather than two attribute dumps.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CORE_OPTIMIZERCHANGE_H
#define ZERO_RUNTIME_CORE_OPTIMIZERCHANGE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zero::rt {

/// What differs between the checkpoint's updates (`saved`) and the
/// program's (`current`), each as ProgramInfo::optimizer lists them:
/// "train.adamw's beta2 is 0.95 in the checkpoint and 0.99 here; ...".
std::string describeOptimizerChange(const std::vector<std::string> &saved,
                                    const std::vector<std::string> &current);

/// Where the updates differ in their learning-rate schedule's length alone
/// (every kernel's `total`, the same two numbers): the schedule's kind and
/// both lengths. A resume may then continue under the new length, when
/// the user says so (LoadOptions::scheduleTotal).
struct ScheduleLengthChange {
  std::string schedule;
  int64_t saved = 0, current = 0;
};
/// The length (`total`) of the updates' schedule, where every update has
/// one and they agree.
std::optional<int64_t>
findScheduleTotal(const std::vector<std::string> &updates);

std::optional<ScheduleLengthChange>
findScheduleLengthChange(const std::vector<std::string> &saved,
                         const std::vector<std::string> &current);

} // namespace zero::rt

#endif // ZERO_RUNTIME_CORE_OPTIMIZERCHANGE_H
