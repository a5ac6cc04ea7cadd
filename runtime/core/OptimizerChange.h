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

#include <string>
#include <vector>

namespace zero::rt {

/// What differs between the checkpoint's updates (`saved`) and the
/// program's (`current`), each as ProgramInfo::optimizer lists them:
/// "train.adamw's total is 200 in the checkpoint and 400 here; ...".
std::string describeOptimizerChange(const std::vector<std::string> &saved,
                                    const std::vector<std::string> &current);

} // namespace zero::rt

#endif // ZERO_RUNTIME_CORE_OPTIMIZERCHANGE_H
