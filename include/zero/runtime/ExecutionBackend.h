//===- ExecutionBackend.h - Where a loaded step runs ------------*- C++ -*-===//
//
// The executor (Executor.h) turns a zrt program into buffers and a flat list
// of step instructions once; a backend owns the memory those buffers live
// in, binds the kernels, and replays the list. The CPU backend runs kernels
// synchronously and collectives on the job's host communicator; the CUDA
// backends (CudaBackend.h) put buffers in device memory, map the program's
// zrt streams and events onto CUDA streams and events, and can replay a
// whole step as one CUDA graph.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_EXECUTIONBACKEND_H
#define ZERO_RUNTIME_EXECUTIONBACKEND_H

#include "zero/runtime/Communicator.h"
#include "zero/runtime/CpuKernels.h"
#include "zero/runtime/StepProfile.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zero::rt {

/// One instruction of a loaded step, with every operand resolved to an
/// address in the backend's memory.
struct StepInstruction {
  enum class Kind {
    launch,
    copy,
    allReduce,
    reduceScatter,
    allGather,
    broadcast,
    allToAll,
    /// Marks `event` complete once the work issued so far on `stream` is.
    record,
    /// Work issued later on `stream` waits for `event`.
    wait
  };
  Kind kind = Kind::launch;
  /// What the instruction is, for error messages ("train.matmul").
  std::string label;
  KernelFn kernel;
  std::vector<const void *> ins;
  std::vector<void *> outs;
  /// Copies: bytes moved.
  int64_t bytes = 0;
  /// Collectives: elements per rank (reduce-scatter output, all-gather
  /// input, all-to-all block) or in total (all-reduce, broadcast).
  int64_t count = 0;
  DType dtype = DType::f32;
  ReduceKind reduce = ReduceKind::sum;
  int root = 0;
  /// The zrt stream the instruction is issued on; 0 is the compute stream
  /// (the one kernels run on).
  int stream = 0;
  int event = -1;
  /// Collectives: the placement axis whose group they run over, and that
  /// group's communicator (Executor::axisCommunicator); null where the group
  /// is the whole job (one-axis placements).
  int axis = 0;
  Communicator *communicator = nullptr;

  bool isCollective() const {
    return kind != Kind::launch && kind != Kind::copy && kind != Kind::record &&
           kind != Kind::wait;
  }
  /// Bytes of the collective's input and output buffers.
  int64_t collectiveInputBytes(int ranks) const;
  int64_t collectiveOutputBytes(int ranks) const;
  /// The ranks of the collective's group, in a job over `job`.
  int groupSize(const Communicator &job) const {
    return communicator ? communicator->size() : job.size();
  }
};

/// The instructions of one `zrt.step` body, in issue order.
using StepBody = std::vector<StepInstruction>;

/// Starts collective `instruction` on `comm` (or on its axis's
/// communicator, split from `comm`, whose tickets `comm` waits for),
/// reading `in` and writing `out`: the instruction's own buffers, or host
/// copies of them.
absl::StatusOr<Communicator::Ticket>
startCollective(Communicator &comm, const StepInstruction &instruction,
                const void *in, void *out);
/// The same, blocking.
absl::Status runCollective(Communicator &comm,
                           const StepInstruction &instruction, const void *in,
                           void *out);

/// What a step is on each backend, and what the executor needs from it.
class ExecutionBackend {
public:
  virtual ~ExecutionBackend() = default;

  /// "cpu", "cuda" or "cuda-host-staged".
  virtual std::string name() const = 0;
  /// A one-line description of the device, for logs and the metrics JSON.
  virtual std::string deviceDescription() const = 0;

  /// Persistent memory (a buffer or the arena), zero-filled and aligned for
  /// vector loads.
  virtual absl::StatusOr<void *> allocate(int64_t bytes) = 0;
  virtual void release(void *memory) = 0;
  /// Host memory for a program's offloaded state and its host arena (pinned
  /// on GPUs), zeroed. The default refuses: a backend without a host pool
  /// cannot run programs zero-offload placed.
  virtual absl::StatusOr<void *> allocateHost(int64_t bytes);
  virtual void releaseHost(void *memory);
  /// Host <-> backend memory; blocking.
  virtual absl::Status copyToHost(void *host, const void *source,
                                  int64_t bytes) = 0;
  virtual absl::Status copyFromHost(void *target, const void *host,
                                    int64_t bytes) = 0;

  /// Binds kernel `name` to run on zrt stream `stream`.
  virtual absl::StatusOr<KernelFn> bindKernel(absl::string_view name,
                                              const KernelParams &params,
                                              absl::Span<const TensorSpec> ins,
                                              absl::Span<const TensorSpec> outs,
                                              int stream) = 0;

  /// Binds kernel `name` to run on zrt stream `stream`, a host stream: the
  /// CPU kernel, over host memory, ordered with the other streams by the
  /// program's events. The default runs it when called, which suits
  /// backends whose host streams run instructions in order themselves.
  virtual absl::StatusOr<KernelFn>
  bindHostKernel(absl::string_view name, const KernelParams &params,
                 absl::Span<const TensorSpec> ins,
                 absl::Span<const TensorSpec> outs, int stream);
  /// Called once, after every kernel is bound, with the program's step
  /// bodies (the plain step; or the micro-step and the apply step); the
  /// lists stay alive and unchanged for the backend's lifetime.
  virtual absl::Status prepare(const std::vector<StepBody> &bodies, int streams,
                               int events) = 0;
  /// Runs body `body` and returns once it is complete (its results readable
  /// by copyToHost). `context.step` is the 1-based optimizer step.
  virtual absl::Status runBody(size_t body, const KernelContext &context) = 0;

  /// Memory the backend holds besides the buffers and the arena (kernel
  /// workspaces, staging buffers).
  virtual int64_t overheadBytes() const { return 0; }
  /// A device's memory as measured now, where the backend has a device:
  /// what this backend's allocate() holds (and its high water), and the
  /// device's used bytes as the driver reports them (cudaMemGetInfo: the
  /// CUDA context, the libraries' workspaces and other processes on the
  /// device included, as nvidia-smi shows them).
  struct DeviceMemory {
    int64_t allocatedBytes = 0;
    int64_t peakAllocatedBytes = 0;
    int64_t usedBytes = 0;
    int64_t totalBytes = 0;
  };
  virtual std::optional<DeviceMemory> deviceMemory() const {
    return std::nullopt;
  }
  /// Whether the host may read and write what allocate() returns in place
  /// (checkpoints, the arena write check); otherwise only through
  /// copyToHost and copyFromHost (device memory).
  virtual bool hostAddressable() const { return false; }
  /// Whether the backend's collectives can run on the communicators of a
  /// placement's axes (a 2-D mesh): the host communicator's collectives
  /// can; one NCCL communicator per axis is not built.
  virtual bool runsCollectivesPerAxis() const { return false; }
  /// From now on, adds an event to `profile` for every instruction run
  /// (null stops). Backends that cannot time instructions say so.
  virtual absl::Status setProfile(StepProfile *profile);
};

/// The memory and kernels of the CPU backend: aligned, zeroed host memory
/// and the kernels of CpuKernels.h. Backends that run a step on the host in
/// some other way (a test's simulated streams) derive from it.
class HostExecutionBackend : public ExecutionBackend {
public:
  bool hostAddressable() const override { return true; }
  bool runsCollectivesPerAxis() const override { return true; }
  absl::StatusOr<void *> allocate(int64_t bytes) override;
  void release(void *memory) override;
  /// Host and "device" memory are the same here; the executor accounts for
  /// them as two pools.
  absl::StatusOr<void *> allocateHost(int64_t bytes) override {
    return allocate(bytes);
  }
  void releaseHost(void *memory) override { release(memory); }
  absl::Status copyToHost(void *host, const void *source,
                          int64_t bytes) override;
  absl::Status copyFromHost(void *target, const void *host,
                            int64_t bytes) override;
  absl::StatusOr<KernelFn> bindKernel(absl::string_view name,
                                      const KernelParams &params,
                                      absl::Span<const TensorSpec> ins,
                                      absl::Span<const TensorSpec> outs,
                                      int stream) override;
};

/// The CPU backend: host memory, kernels from CpuKernels.h run one after
/// the other, collectives started on `comm` and overlapped with compute
/// where the program's events allow. Streams with neither compute kernels
/// nor collectives (the transfer and host streams of offloaded work) run on
/// a worker thread, in program order, ordered against the others by the
/// program's events.
std::unique_ptr<ExecutionBackend> createCpuBackend(Communicator &comm);

} // namespace zero::rt

#endif // ZERO_RUNTIME_EXECUTIONBACKEND_H
