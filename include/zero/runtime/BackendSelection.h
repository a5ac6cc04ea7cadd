//===- BackendSelection.h - An execution backend from flags ----*- C++ -*-===//
//
// The programs that train (zero-run, gpt2_train) take the same backend flags:
// --backend cpu|cuda|cuda-host-staged, --cuda-graph, --device,
// --deterministic. This is the one place that checks a combination (with the
// messages users see) and creates the backend, so that the programs cannot
// drift apart. It lives in its own library, ZeroRuntimeBackends, because the
// runtime core must not depend on the optional CUDA parts: where they are not
// built, every CUDA backend is refused with a message that says so.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_BACKENDSELECTION_H
#define ZERO_RUNTIME_BACKENDSELECTION_H

#include "zero/runtime/ExecutionBackend.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <memory>
#include <string>

namespace zero::rt {

/// The backend flags of a training program.
struct BackendChoice {
  /// "cpu", "cuda" or "cuda-host-staged".
  std::string name = "cpu";
  /// Capture the step as a CUDA graph once and replay it (cuda only).
  bool cudaGraph = false;
  /// --profile or --profile-table: every instruction timed as it is issued,
  /// which a CUDA graph's one launch does not allow.
  bool profile = false;
  /// The CUDA device of every rank; -1 picks the rank's index on its node
  /// modulo the GPUs. `deviceSet` says whether the user gave one, so that a
  /// device for the CPU backend is refused.
  int device = -1;
  bool deviceSet = false;
  /// Rank-order reductions, which NCCL does not make.
  bool deterministic = false;
  /// Seconds a collective may wait before the job is ended.
  double timeoutSeconds = 120;
  /// The program, for "this zero-run was built without CUDA".
  std::string program = "zero-run";
};

/// Whether this build has the CUDA backends.
bool cudaBackendsBuilt();

/// The machine model a step for `backend` is compiled for when the user
/// names none (zero-pipeline's `machine`): NCCL runs collectives on their own
/// stream, so on `cuda` ranks the gathers and updates are placed for overlap
/// on the model closest to any NVIDIA GPU node, `h100-nvlink-8`; elsewhere
/// none ("").
const char *getDefaultMachine(const std::string &backend);

/// Checks `choice` before any rank starts, so that a bad combination is said
/// once. The messages carry no program prefix ("--cuda-graph needs --backend
/// cuda ..."). With `probeDevices` (the default), a CUDA backend also needs a
/// visible GPU and a build with the CUDA parts.
absl::Status checkBackendChoice(const BackendChoice &choice,
                                bool probeDevices = true);

/// OK where `choice` is a CUDA backend on which cuDNN's fused attention
/// serves train.attention (the module loads and opens libcudnn.so.9), else
/// why not, in words that follow "not fused: " ("the CPU backend", "cuDNN:
/// libcudnn.so.9: cannot open ..."). Probes no device.
absl::Status cudnnAttentionStatus(const BackendChoice &choice);

/// The backend `choice` names; collective over `comm` for NCCL (every rank
/// calls it, in the same order as its other communicator creations). `comm`
/// must outlive the backend. CUDA failures are prefixed "--backend NAME: ".
absl::StatusOr<std::unique_ptr<ExecutionBackend>>
createBackend(Communicator &comm, const BackendChoice &choice);

} // namespace zero::rt

#endif // ZERO_RUNTIME_BACKENDSELECTION_H
