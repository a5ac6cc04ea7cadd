//===- DeviceCollectives.cpp - The CUDA backend's collectives -------------===//
//
// The host-staged collectives (DeviceCollectives.h): a device-to-host copy, the
// host communicator's collective, a host-to-device copy, each waited for.
//
//===----------------------------------------------------------------------===//

#include "DeviceCollectives.h"

#include "absl/strings/str_cat.h"

#include <chrono>
#include <thread>

using namespace zero::rt;

absl::Status zero::rt::cudaCheck(cudaError_t error, absl::string_view what) {
  if (error == cudaSuccess)
    return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(what, ": ", cudaGetErrorString(error)));
}

absl::Status HostStagedCollectives::synchronize(cudaStream_t stream,
                                                absl::string_view what) {
  // The GPU is local: only a kernel fault or a hang of this process's own
  // work can stop it, and the host collectives have their own timeout.
  auto start = std::chrono::steady_clock::now();
  while (true) {
    cudaError_t state = cudaStreamQuery(stream);
    if (state == cudaSuccess)
      return absl::OkStatus();
    if (state != cudaErrorNotReady)
      return cudaCheck(state, what);
    double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (timeoutSeconds > 0 && waited > timeoutSeconds)
      return absl::DeadlineExceededError(absl::StrCat(
          what, " did not finish within ", timeoutSeconds, " s on the GPU"));
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

absl::Status HostStagedCollectives::enqueue(const StepInstruction &instruction,
                                            cudaStream_t stream) {
  // On a placement of several axes the group is the instruction's axis.
  int ranks = instruction.groupSize(comm);
  int64_t inBytes = instruction.collectiveInputBytes(ranks);
  int64_t outBytes = instruction.collectiveOutputBytes(ranks);
  // The stream's earlier work, and what it waits for, must be done before
  // the input is read on the host.
  ZERO_RETURN_IF_ERROR(
      cudaCheck(cudaMemcpyAsync(stagingIn, instruction.ins[0], inBytes,
                                cudaMemcpyDeviceToHost, stream),
                "staging a collective's input"));
  ZERO_RETURN_IF_ERROR(synchronize(stream, instruction.label));
  ZERO_RETURN_IF_ERROR(runCollective(comm, instruction, stagingIn, stagingOut));
  ZERO_RETURN_IF_ERROR(
      cudaCheck(cudaMemcpyAsync(instruction.outs[0], stagingOut, outBytes,
                                cudaMemcpyHostToDevice, stream),
                "staging a collective's result"));
  // The staging buffers are reused by the next collective.
  return synchronize(stream, instruction.label);
}
