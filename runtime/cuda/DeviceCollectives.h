//===- DeviceCollectives.h - The CUDA backend's collectives -----*- C++ -*-===//
//
// How the CUDA backend runs a step's collectives on device buffers: through
// NCCL on the stream, or staged through pinned host buffers and the host
// communicator (CudaBackendOptions::Collectives). Private to runtime/cuda.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CUDA_DEVICECOLLECTIVES_H
#define ZERO_RUNTIME_CUDA_DEVICECOLLECTIVES_H

#include "zero/runtime/Communicator.h"
#include "zero/runtime/ExecutionBackend.h"
#include "zero/runtime/NcclCommunicator.h"
#include "zero/support/Status.h"

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

#include <cuda_runtime.h>

#include <memory>
#include <utility>

namespace zero::rt {

/// OK, or an internal error naming `what` and CUDA's message.
absl::Status cudaCheck(cudaError_t error, absl::string_view what);

/// Collectives on device buffers, ordered on a CUDA stream.
class DeviceCollectives {
public:
  virtual ~DeviceCollectives() = default;
  virtual absl::Status enqueue(const StepInstruction &instruction,
                               cudaStream_t stream) = 0;
  /// Blocks until `stream` is idle, ending with an error rather than
  /// hanging when a rank dies.
  virtual absl::Status synchronize(cudaStream_t stream,
                                   absl::string_view what) = 0;
};

class NcclCollectives : public DeviceCollectives {
public:
  explicit NcclCollectives(std::unique_ptr<NcclCommunicator> nccl)
      : nccl(std::move(nccl)) {}

  absl::Status enqueue(const StepInstruction &instruction,
                       cudaStream_t stream) override {
    using Kind = StepInstruction::Kind;
    const void *in = instruction.ins[0];
    void *out = instruction.outs[0];
    switch (instruction.kind) {
    case Kind::allReduce:
      return nccl->enqueueAllReduce(in, out, instruction.count,
                                    instruction.dtype, instruction.reduce,
                                    stream);
    case Kind::reduceScatter:
      return nccl->enqueueReduceScatter(in, out, instruction.count,
                                        instruction.dtype, instruction.reduce,
                                        stream);
    case Kind::allGather:
      return nccl->enqueueAllGather(in, out, instruction.count,
                                    instruction.dtype, stream);
    case Kind::broadcast:
      return nccl->enqueueBroadcast(in, out, instruction.count,
                                    instruction.dtype, instruction.root,
                                    stream);
    default:
      return nccl->enqueueAllToAll(in, out, instruction.count,
                                   instruction.dtype, stream);
    }
  }
  absl::Status synchronize(cudaStream_t stream,
                           absl::string_view what) override {
    return nccl->synchronize(stream, what);
  }

  std::unique_ptr<NcclCommunicator> nccl;
};

/// Collectives through pinned host buffers and the host communicator.
class HostStagedCollectives : public DeviceCollectives {
public:
  HostStagedCollectives(Communicator &comm, double timeoutSeconds)
      : comm(comm), timeoutSeconds(timeoutSeconds) {}
  ~HostStagedCollectives() override {
    cudaFreeHost(stagingIn);
    cudaFreeHost(stagingOut);
  }

  absl::Status reserve(int64_t inBytes, int64_t outBytes) {
    if (inBytes > 0)
      ZERO_RETURN_IF_ERROR(cudaCheck(cudaMallocHost(&stagingIn, inBytes),
                                     "pinned staging for collectives"));
    if (outBytes > 0)
      return cudaCheck(cudaMallocHost(&stagingOut, outBytes),
                       "pinned staging for collectives");
    return absl::OkStatus();
  }
  absl::Status enqueue(const StepInstruction &instruction,
                       cudaStream_t stream) override;
  absl::Status synchronize(cudaStream_t stream,
                           absl::string_view what) override;

private:
  Communicator &comm;
  double timeoutSeconds;
  void *stagingIn = nullptr;
  void *stagingOut = nullptr;
};

} // namespace zero::rt

#endif // ZERO_RUNTIME_CUDA_DEVICECOLLECTIVES_H
