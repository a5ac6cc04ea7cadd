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

#include "absl/status/status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zero::rt {

/// Whether a checkpoint trained with the updates `saved` may resume under
/// the program's `current` ones, each as ProgramInfo::optimizer lists them.
/// Refused, naming each kernel or hyper-parameter that differs in the
/// user's numbers ("train.adamw's lr is 0.01 in the checkpoint and 0.02
/// here"), unless the two differ only in their schedule's length and
/// `scheduleTotal` is the program's (the user's word that the run
/// continues under it, LoadOptions::scheduleTotal). `dir` names the
/// checkpoint in errors.
absl::Status checkOptimizerChange(const std::string &dir,
                                  const std::vector<std::string> &saved,
                                  const std::vector<std::string> &current,
                                  std::optional<int64_t> scheduleTotal);

} // namespace zero::rt

#endif // ZERO_RUNTIME_CORE_OPTIMIZERCHANGE_H
