//===- CudaBackend.cpp - Runs a loaded step on a GPU
//-----------------------===//
//
// The step is issued in program order; each instruction goes to the CUDA
// stream of its zrt stream, and the program's records and waits become
// cudaEventRecord and cudaStreamWaitEvent, so the GPU sees the same
// dependencies the compiler scheduled. Every step forks the other streams
// from the compute stream and joins them back, which is also what lets the
// step be captured from the compute stream as one CUDA graph.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/CudaBackend.h"

#include "DeviceCollectives.h"

#include "zero/runtime/CpuKernels.h"
#include "zero/runtime/CudaKernels.h"
#include "zero/runtime/Launch.h"
#include "zero/runtime/NcclCommunicator.h"
#include "zero/support/Status.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <cuda_runtime.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

using namespace zero::rt;

namespace {

/// The rank's index among the ranks of its node, and how many share it,
/// from the launcher (zero/runtime/Launch.h); the communicator's rank and
/// size where no launcher says.
int localRank(const Communicator &comm) {
  absl::StatusOr<Launch> launch = resolveLaunch();
  return launch.ok() && launch->launcher != "none" ? launch->localRank
                                                   : comm.rank();
}

int localSize(const Communicator &comm) { return ranksOnThisNode(comm.size()); }

/// The first error of the host kernels of one backend.
struct HostKernelErrors {
  std::mutex mutex;
  absl::Status first;
  void note(absl::Status status) {
    std::lock_guard<std::mutex> lock(mutex);
    if (first.ok())
      first = std::move(status);
  }
  absl::Status take() {
    std::lock_guard<std::mutex> lock(mutex);
    return std::exchange(first, absl::OkStatus());
  }
};

/// A CPU kernel enqueued on a CUDA stream (cudaLaunchHostFunc): it runs
/// once the stream's earlier work, and the events it waits for, are done.
/// Its operands are fixed once bound; the optimizer step is read from the
/// pinned step number at run time, so a captured CUDA graph replays with
/// each step's.
struct HostKernelCall {
  KernelFn kernel;
  std::vector<const void *> ins;
  std::vector<void *> outs;
  KernelContext context;
  const int64_t *step = nullptr;
  std::shared_ptr<HostKernelErrors> errors;
  std::string name;

  static void CUDART_CB run(void *data) {
    auto *call = static_cast<HostKernelCall *>(data);
    KernelContext context = call->context;
    context.step = call->step[0];
    context.microStep = call->step[1];
    context.deviceStep = nullptr;
    absl::Status status = call->kernel(call->ins, call->outs, context);
    if (!status.ok())
      call->errors->note(absl::Status(
          status.code(),
          absl::StrCat(call->name, " (host kernel): ", status.message())));
  }
};

class CudaBackend : public ExecutionBackend {
public:
  CudaBackend(Communicator &hostComm, CudaBackendOptions options)
      : hostComm(hostComm), options(std::move(options)) {}
  ~CudaBackend() override;

  absl::Status initialize();

  std::string name() const override {
    return options.collectives == CudaBackendOptions::Collectives::nccl
               ? "cuda"
               : "cuda-host-staged";
  }
  std::string deviceDescription() const override { return description; }
  bool runsCollectivesPerAxis() const override {
    return options.collectives != CudaBackendOptions::Collectives::nccl;
  }

  absl::StatusOr<void *> allocate(int64_t bytes) override;
  void release(void *memory) override;
  std::optional<DeviceMemory> deviceMemory() const override;
  /// Pinned, so that the transfer stream's copies are asynchronous DMA.
  absl::StatusOr<void *> allocateHost(int64_t bytes) override;
  void releaseHost(void *memory) override { cudaFreeHost(memory); }
  absl::StatusOr<KernelFn> bindHostKernel(absl::string_view name,
                                          const KernelParams &params,
                                          absl::Span<const TensorSpec> ins,
                                          absl::Span<const TensorSpec> outs,
                                          int stream) override;
  absl::Status copyToHost(void *host, const void *source,
                          int64_t bytes) override;
  absl::Status copyFromHost(void *target, const void *host,
                            int64_t bytes) override;
  absl::StatusOr<KernelFn> bindKernel(absl::string_view name,
                                      const KernelParams &params,
                                      absl::Span<const TensorSpec> ins,
                                      absl::Span<const TensorSpec> outs,
                                      int stream) override;
  absl::Status prepare(const std::vector<StepBody> &steps, int streams,
                       int events) override;
  absl::Status runBody(size_t body, const KernelContext &context) override;
  int64_t overheadBytes() const override { return overhead; }
  absl::Status setProfile(StepProfile *profile) override;

private:
  absl::StatusOr<cudaStream_t> getStream(int index);
  absl::Status issueStep(size_t body, const KernelContext &context);
  absl::Status issue(const StepInstruction &instruction,
                     const KernelContext &context, cudaEvent_t begin);
  absl::Status enqueueCollective(const StepInstruction &instruction,
                                 cudaStream_t stream, cudaEvent_t begin);
  /// With a profile: the timing events of body `body`'s instructions,
  /// created on its first profiled run.
  absl::Status prepareProfile(size_t body);
  /// With a profile, after body `body` ran: an event per timed instruction.
  absl::Status collectProfile(size_t body, const KernelContext &context);
  /// Captures body `body` as a CUDA graph (one per body).
  absl::Status captureStep(size_t body, const KernelContext &context);
  /// The traffic of the collectives issued since the last call, moved to
  /// the host communicator, where the runtime reads it.
  void moveTraffic();

  Communicator &hostComm;
  CudaBackendOptions options;
  int device = 0;
  std::string description;
  /// What allocate() holds (by pointer, for release) and its high water:
  /// the device memory of the metrics (deviceMemory).
  mutable std::mutex allocationsMutex;
  absl::flat_hash_map<void *, int64_t> allocations;
  int64_t allocatedBytes = 0, peakAllocatedBytes = 0;
  std::unique_ptr<DeviceCollectives> collectives;
  NcclCommunicator *nccl = nullptr;
  const std::vector<StepBody> *bodies = nullptr;
  std::vector<cudaStream_t> streams;
  std::vector<cudaEvent_t> events;
  /// Fork and join points of the streams other than compute.
  cudaEvent_t forkEvent = nullptr;
  std::vector<cudaEvent_t> joinEvents;
  /// Recorded after each collective; the stream of the last one, or -1.
  cudaEvent_t collectiveOrder = nullptr;
  int lastCollectiveStream = -1;
  /// The step and the micro-step, pinned on the host and copied to the
  /// device before each body (KernelContext::deviceStep).
  int64_t *deviceStep = nullptr;
  int64_t *hostStep = nullptr;
  /// Per body, with --cuda-graph: the captured graph, its executable, the
  /// traffic one replay moves, and the learning-rate factor its update
  /// kernels' parameters hold (a change recaptures the body).
  struct CapturedBody {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    std::map<std::string, TrafficCount> traffic;
    double learningRateFactor = 1.0;
    void release() {
      if (exec)
        cudaGraphExecDestroy(exec);
      if (graph)
        cudaGraphDestroy(graph);
      exec = nullptr;
      graph = nullptr;
    }
  };
  std::vector<CapturedBody> captured;
  int64_t overhead = 0;
  /// --profile: where the events go, and per body a begin and an end event
  /// for each launch, copy and collective (null for records and waits),
  /// timed against `profileOrigin`, recorded on the compute stream when
  /// the host clock read `profileOriginNs`.
  StepProfile *profile = nullptr;
  std::vector<std::vector<std::pair<cudaEvent_t, cudaEvent_t>>> timing;
  cudaEvent_t profileOrigin = nullptr;
  int64_t profileOriginNs = 0;
  /// The first failure of a host kernel, which runs as a host function on
  /// its stream where no status can be returned; runBody reports it.
  std::shared_ptr<HostKernelErrors> hostErrors =
      std::make_shared<HostKernelErrors>();
};

} // namespace

CudaBackend::~CudaBackend() {
  // The collectives may still reference the streams; finish them first.
  if (!streams.empty())
    cudaStreamSynchronize(streams[0]);
  collectives.reset();
  for (CapturedBody &body : captured)
    body.release();
  for (cudaEvent_t event : events)
    cudaEventDestroy(event);
  for (cudaEvent_t event : joinEvents)
    cudaEventDestroy(event);
  for (auto &body : timing)
    for (auto [begin, end] : body)
      if (begin) {
        cudaEventDestroy(begin);
        cudaEventDestroy(end);
      }
  if (profileOrigin)
    cudaEventDestroy(profileOrigin);
  if (forkEvent)
    cudaEventDestroy(forkEvent);
  if (collectiveOrder)
    cudaEventDestroy(collectiveOrder);
  for (cudaStream_t stream : streams)
    cudaStreamDestroy(stream);
  cudaFree(deviceStep);
  cudaFreeHost(hostStep);
}

absl::Status CudaBackend::initialize() {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver ||
      (error == cudaSuccess && count == 0))
    return absl::FailedPreconditionError(
        "no CUDA device is visible to this process (use --backend cpu)");
  ZERO_RETURN_IF_ERROR(cudaCheck(error, "cudaGetDeviceCount"));
  bool useNccl = options.collectives == CudaBackendOptions::Collectives::nccl;
  if (useNccl && localSize(hostComm) > count)
    return absl::FailedPreconditionError(absl::StrCat(
        localSize(hostComm), " ranks on this node share ", count,
        count == 1 ? " GPU" : " GPUs",
        ", but NCCL needs a GPU per rank (use --backend cuda-host-staged to "
        "share GPUs)"));
  if (options.cudaGraph && !useNccl)
    return absl::InvalidArgumentError(
        "--cuda-graph needs --backend cuda: host-staged collectives run on "
        "the host, which a CUDA graph cannot capture");
  device = options.device >= 0 ? options.device : localRank(hostComm) % count;
  if (device >= count)
    return absl::InvalidArgumentError(absl::StrCat(
        "device ", device, " does not exist (", count, " visible)"));
  ZERO_RETURN_IF_ERROR(cudaCheck(cudaSetDevice(device), "cudaSetDevice"));
  cudaDeviceProp properties;
  ZERO_RETURN_IF_ERROR(cudaCheck(cudaGetDeviceProperties(&properties, device),
                                 "device properties"));
  description = absl::StrFormat(
      "GPU %d: %s (sm_%d%d, %.1f GiB)%s", device, properties.name,
      properties.major, properties.minor,
      static_cast<double>(properties.totalGlobalMem) / (1 << 30),
      options.cudaGraph ? ", CUDA graph" : "");

  if (absl::StatusOr<cudaStream_t> compute = getStream(0); !compute.ok())
    return compute.status();
  for (cudaEvent_t *event : {&forkEvent, &collectiveOrder})
    ZERO_RETURN_IF_ERROR(
        cudaCheck(cudaEventCreateWithFlags(event, cudaEventDisableTiming),
                  "cudaEventCreate"));
  ZERO_RETURN_IF_ERROR(
      cudaCheck(cudaMalloc(&deviceStep, 2 * sizeof(int64_t)), "cudaMalloc"));
  ZERO_RETURN_IF_ERROR(cudaCheck(cudaMallocHost(&hostStep, 2 * sizeof(int64_t)),
                                 "cudaMallocHost"));
  overhead += sizeof(int64_t);

  if (!useNccl) {
    collectives = std::make_unique<HostStagedCollectives>(
        hostComm, options.comm.timeoutSeconds);
    return absl::OkStatus();
  }
  ZERO_ASSIGN_OR_RETURN(std::unique_ptr<NcclCommunicator> created,
                        NcclCommunicator::create(hostComm, options.comm));
  nccl = created.get();
  collectives = std::make_unique<NcclCollectives>(std::move(created));
  return absl::OkStatus();
}

absl::StatusOr<cudaStream_t> CudaBackend::getStream(int index) {
  while (static_cast<int>(streams.size()) <= index) {
    cudaStream_t stream;
    // Non-blocking: the legacy default stream must not serialize them.
    ZERO_RETURN_IF_ERROR(
        cudaCheck(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                  "cudaStreamCreate"));
    streams.push_back(stream);
  }
  return streams[index];
}

absl::StatusOr<void *> CudaBackend::allocate(int64_t bytes) {
  void *memory = nullptr;
  // cudaMalloc aligns to 256 bytes; zeroed so padding reads as zero.
  size_t size = static_cast<size_t>(std::max<int64_t>(bytes, 256));
  cudaError_t error = cudaMalloc(&memory, size);
  if (error != cudaSuccess) {
    size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    return absl::ResourceExhaustedError(absl::StrFormat(
        "cannot allocate %d bytes on GPU %d (%s; %d of %d bytes free)", bytes,
        device, cudaGetErrorString(error), free, total));
  }
  // On the compute stream, not the legacy default stream, which does not
  // order with non-blocking streams: a later upload must not race it.
  absl::Status status = cudaCheck(cudaMemsetAsync(memory, 0, size, streams[0]),
                                  "zeroing device memory");
  if (status.ok())
    status =
        cudaCheck(cudaStreamSynchronize(streams[0]), "zeroing device memory");
  if (!status.ok()) {
    cudaFree(memory);
    return status;
  }
  std::lock_guard<std::mutex> lock(allocationsMutex);
  allocations[memory] = static_cast<int64_t>(size);
  allocatedBytes += static_cast<int64_t>(size);
  peakAllocatedBytes = std::max(peakAllocatedBytes, allocatedBytes);
  return memory;
}

void CudaBackend::release(void *memory) {
  {
    std::lock_guard<std::mutex> lock(allocationsMutex);
    if (auto it = allocations.find(memory); it != allocations.end()) {
      allocatedBytes -= it->second;
      allocations.erase(it);
    }
  }
  cudaFree(memory);
}

std::optional<ExecutionBackend::DeviceMemory>
CudaBackend::deviceMemory() const {
  DeviceMemory memory;
  {
    std::lock_guard<std::mutex> lock(allocationsMutex);
    memory.allocatedBytes = allocatedBytes;
    memory.peakAllocatedBytes = peakAllocatedBytes;
  }
  size_t free = 0, total = 0;
  // The current device is this backend's (initialize() set it); a failed
  // query leaves the driver's figures at 0 rather than failing a metric.
  if (cudaMemGetInfo(&free, &total) == cudaSuccess) {
    memory.usedBytes = static_cast<int64_t>(total - free);
    memory.totalBytes = static_cast<int64_t>(total);
  }
  return memory;
}

absl::StatusOr<void *> CudaBackend::allocateHost(int64_t bytes) {
  void *memory = nullptr;
  size_t size = static_cast<size_t>(std::max<int64_t>(bytes, 64));
  cudaError_t error = cudaHostAlloc(&memory, size, cudaHostAllocDefault);
  if (error != cudaSuccess)
    return absl::ResourceExhaustedError(
        absl::StrFormat("cannot allocate %d bytes of pinned host memory (%s)",
                        bytes, cudaGetErrorString(error)));
  std::memset(memory, 0, size);
  return memory;
}

absl::StatusOr<KernelFn>
CudaBackend::bindHostKernel(absl::string_view name, const KernelParams &params,
                            absl::Span<const TensorSpec> ins,
                            absl::Span<const TensorSpec> outs, int stream) {
  ZERO_ASSIGN_OR_RETURN(cudaStream_t cudaStream, getStream(stream));
  ZERO_ASSIGN_OR_RETURN(KernelFn kernel,
                        bindCpuKernel(name, params, ins, outs));
  auto call = std::make_shared<HostKernelCall>();
  call->kernel = std::move(kernel);
  call->step = hostStep;
  call->errors = hostErrors;
  call->name = std::string(name);
  cudaStream_t target = cudaStream;
  return KernelFn([call, target](absl::Span<const void *const> in,
                                 absl::Span<void *const> out,
                                 const KernelContext &context) {
    call->ins.assign(in.begin(), in.end());
    call->outs.assign(out.begin(), out.end());
    call->context = context;
    return cudaCheck(
        cudaLaunchHostFunc(target, &HostKernelCall::run, call.get()),
        "cudaLaunchHostFunc");
  });
}

absl::Status CudaBackend::copyToHost(void *host, const void *source,
                                     int64_t bytes) {
  ZERO_RETURN_IF_ERROR(cudaCheck(
      cudaMemcpyAsync(host, source, bytes, cudaMemcpyDeviceToHost, streams[0]),
      "copying device memory to the host"));
  return cudaCheck(cudaStreamSynchronize(streams[0]),
                   "copying device memory to the host");
}

absl::Status CudaBackend::copyFromHost(void *target, const void *host,
                                       int64_t bytes) {
  ZERO_RETURN_IF_ERROR(cudaCheck(
      cudaMemcpyAsync(target, host, bytes, cudaMemcpyHostToDevice, streams[0]),
      "copying host memory to the device"));
  // The host buffer may be reused as soon as this returns.
  return cudaCheck(cudaStreamSynchronize(streams[0]),
                   "copying host memory to the device");
}

absl::StatusOr<KernelFn>
CudaBackend::bindKernel(absl::string_view name, const KernelParams &params,
                        absl::Span<const TensorSpec> ins,
                        absl::Span<const TensorSpec> outs, int stream) {
  ZERO_ASSIGN_OR_RETURN(cudaStream_t cudaStream, getStream(stream));
  return bindCudaKernel(name, params, ins, outs, cudaStream);
}

absl::Status CudaBackend::prepare(const std::vector<StepBody> &steps,
                                  int streamCount, int eventCount) {
  bodies = &steps;
  captured.resize(steps.size());
  if (absl::StatusOr<cudaStream_t> last = getStream(streamCount - 1);
      !last.ok())
    return last.status();
  auto createEvent = [](cudaEvent_t &event) {
    return cudaCheck(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                     "cudaEventCreate");
  };
  events.resize(eventCount);
  for (cudaEvent_t &event : events)
    ZERO_RETURN_IF_ERROR(createEvent(event));
  joinEvents.resize(streams.size());
  for (size_t index = 1; index < streams.size(); ++index)
    ZERO_RETURN_IF_ERROR(createEvent(joinEvents[index]));
  if (auto *staged = dynamic_cast<HostStagedCollectives *>(collectives.get())) {
    int64_t inBytes = 0, outBytes = 0;
    for (const StepBody &body : steps)
      for (const StepInstruction &instruction : body) {
        if (!instruction.isCollective())
          continue;
        int ranks = instruction.groupSize(hostComm);
        inBytes = std::max(inBytes, instruction.collectiveInputBytes(ranks));
        outBytes = std::max(outBytes, instruction.collectiveOutputBytes(ranks));
      }
    ZERO_RETURN_IF_ERROR(staged->reserve(inBytes, outBytes));
  }
  return absl::OkStatus();
}

absl::Status CudaBackend::issue(const StepInstruction &instruction,
                                const KernelContext &context,
                                cudaEvent_t begin) {
  using Kind = StepInstruction::Kind;
  cudaStream_t stream = streams[instruction.stream];
  // A collective's time starts once it is ordered after the previous one.
  if (begin && !instruction.isCollective())
    ZERO_RETURN_IF_ERROR(
        cudaCheck(cudaEventRecord(begin, stream), "cudaEventRecord"));
  switch (instruction.kind) {
  case Kind::launch:
    return instruction.kernel(instruction.ins, instruction.outs, context);
  case Kind::copy:
    // Default: a transfer between device and pinned host memory is a copy
    // too; unified addressing tells the directions apart.
    return cudaCheck(cudaMemcpyAsync(instruction.outs[0], instruction.ins[0],
                                     instruction.bytes, cudaMemcpyDefault,
                                     stream),
                     "cudaMemcpyAsync");
  case Kind::record:
    return cudaCheck(cudaEventRecord(events[instruction.event], stream),
                     "cudaEventRecord");
  case Kind::wait:
    return cudaCheck(cudaStreamWaitEvent(stream, events[instruction.event], 0),
                     "cudaStreamWaitEvent");
  default:
    return enqueueCollective(instruction, stream, begin);
  }
}

absl::Status CudaBackend::enqueueCollective(const StepInstruction &instruction,
                                            cudaStream_t stream,
                                            cudaEvent_t begin) {
  // Every rank issues the collectives in program order, but two streams may
  // run them in either order, and two ranks running them in different orders
  // deadlock NCCL. A collective therefore waits for the previous one when
  // that ran on another stream.
  if (lastCollectiveStream >= 0 && lastCollectiveStream != instruction.stream)
    ZERO_RETURN_IF_ERROR(
        cudaCheck(cudaStreamWaitEvent(stream, collectiveOrder, 0),
                  "cudaStreamWaitEvent"));
  if (begin)
    ZERO_RETURN_IF_ERROR(
        cudaCheck(cudaEventRecord(begin, stream), "cudaEventRecord"));
  ZERO_RETURN_IF_ERROR(collectives->enqueue(instruction, stream));
  lastCollectiveStream = instruction.stream;
  return cudaCheck(cudaEventRecord(collectiveOrder, stream), "cudaEventRecord");
}

absl::Status CudaBackend::issueStep(size_t body, const KernelContext &context) {
  const StepBody &instructions = (*bodies)[body];
  cudaStream_t compute = streams[0];
  lastCollectiveStream = -1;
  ZERO_RETURN_IF_ERROR(
      cudaCheck(cudaEventRecord(forkEvent, compute), "cudaEventRecord"));
  for (size_t index = 1; index < streams.size(); ++index)
    ZERO_RETURN_IF_ERROR(
        cudaCheck(cudaStreamWaitEvent(streams[index], forkEvent, 0),
                  "cudaStreamWaitEvent"));
  const std::vector<std::pair<cudaEvent_t, cudaEvent_t>> *timed =
      profile && body < timing.size() && !timing[body].empty() ? &timing[body]
                                                               : nullptr;
  for (size_t index = 0; index < instructions.size(); ++index) {
    const StepInstruction &instruction = instructions[index];
    auto [begin, end] =
        timed ? (*timed)[index] : std::pair<cudaEvent_t, cudaEvent_t>{};
    absl::Status status = issue(instruction, context, begin);
    if (status.ok() && end)
      status = cudaCheck(cudaEventRecord(end, streams[instruction.stream]),
                         "cudaEventRecord");
    if (!status.ok())
      return absl::Status(status.code(),
                          absl::StrCat("step ", context.step, ", instruction ",
                                       index, " (", instruction.label,
                                       "): ", status.message()));
  }
  for (size_t index = 1; index < streams.size(); ++index) {
    ZERO_RETURN_IF_ERROR(cudaCheck(
        cudaEventRecord(joinEvents[index], streams[index]), "cudaEventRecord"));
    ZERO_RETURN_IF_ERROR(
        cudaCheck(cudaStreamWaitEvent(compute, joinEvents[index], 0),
                  "cudaStreamWaitEvent"));
  }
  return absl::OkStatus();
}

void CudaBackend::moveTraffic() {
  if (!nccl)
    return;
  hostComm.addTraffic(nccl->traffic());
  nccl->resetTraffic();
}

absl::Status CudaBackend::captureStep(size_t body,
                                      const KernelContext &context) {
  CapturedBody &capture = captured[body];
  capture.release();
  capture.learningRateFactor = context.learningRateFactor;
  cudaStream_t compute = streams[0];
  ZERO_RETURN_IF_ERROR(cudaCheck(
      cudaStreamBeginCapture(compute, cudaStreamCaptureModeThreadLocal),
      "cudaStreamBeginCapture"));
  absl::Status issued = issueStep(body, context);
  // End the capture whatever happened, so that the stream is usable again.
  cudaError_t ended = cudaStreamEndCapture(compute, &capture.graph);
  if (!issued.ok())
    return issued;
  ZERO_RETURN_IF_ERROR(cudaCheck(ended, "capturing the step"));
  ZERO_RETURN_IF_ERROR(
      cudaCheck(cudaGraphInstantiate(&capture.exec, capture.graph, 0),
                "instantiating the step's CUDA graph"));
  capture.traffic =
      nccl ? nccl->traffic() : std::map<std::string, TrafficCount>();
  if (nccl)
    nccl->resetTraffic();
  return absl::OkStatus();
}

absl::Status CudaBackend::runBody(size_t body, const KernelContext &context) {
  cudaStream_t compute = streams[0];
  hostStep[0] = context.step;
  hostStep[1] = context.microStep;
  ZERO_RETURN_IF_ERROR(
      cudaCheck(cudaMemcpyAsync(deviceStep, hostStep, 2 * sizeof(int64_t),
                                cudaMemcpyHostToDevice, compute),
                "uploading the step number"));
  KernelContext deviceContext = context;
  deviceContext.deviceStep = deviceStep;
  if (options.cudaGraph) {
    // The update kernels' rate parameters are captured by value.
    if (!captured[body].exec ||
        captured[body].learningRateFactor != deviceContext.learningRateFactor)
      ZERO_RETURN_IF_ERROR(captureStep(body, deviceContext));
    ZERO_RETURN_IF_ERROR(
        cudaCheck(cudaGraphLaunch(captured[body].exec, compute),
                  "launching the step's CUDA graph"));
    hostComm.addTraffic(captured[body].traffic);
  } else {
    if (profile) {
      ZERO_RETURN_IF_ERROR(prepareProfile(body));
      profileOriginNs = StepProfile::nowNs();
      ZERO_RETURN_IF_ERROR(cudaCheck(cudaEventRecord(profileOrigin, compute),
                                     "cudaEventRecord"));
    }
    ZERO_RETURN_IF_ERROR(issueStep(body, deviceContext));
    moveTraffic();
  }
  // Also keeps the pinned step number alive until its copy has run.
  ZERO_RETURN_IF_ERROR(
      collectives->synchronize(compute, absl::StrCat("step ", context.step)));
  if (absl::Status status = hostErrors->take(); !status.ok())
    return absl::Status(status.code(), absl::StrCat("step ", context.step, ": ",
                                                    status.message()));
  if (profile && !options.cudaGraph)
    return collectProfile(body, context);
  return absl::OkStatus();
}

absl::Status CudaBackend::setProfile(StepProfile *newProfile) {
  if (newProfile && options.cudaGraph)
    return absl::InvalidArgumentError(
        "--profile times each instruction as it is issued, which a CUDA "
        "graph replays as one launch: profile without --cuda-graph");
  profile = newProfile;
  return absl::OkStatus();
}

absl::Status CudaBackend::prepareProfile(size_t body) {
  if (!profileOrigin)
    ZERO_RETURN_IF_ERROR(
        cudaCheck(cudaEventCreateWithFlags(&profileOrigin, cudaEventDefault),
                  "cudaEventCreate"));
  timing.resize(bodies->size());
  if (!timing[body].empty())
    return absl::OkStatus();
  using Kind = StepInstruction::Kind;
  for (const StepInstruction &instruction : (*bodies)[body]) {
    std::pair<cudaEvent_t, cudaEvent_t> &pair = timing[body].emplace_back();
    if (instruction.kind == Kind::record || instruction.kind == Kind::wait)
      continue;
    for (cudaEvent_t *event : {&pair.first, &pair.second})
      ZERO_RETURN_IF_ERROR(
          cudaCheck(cudaEventCreateWithFlags(event, cudaEventDefault),
                    "cudaEventCreate"));
  }
  return absl::OkStatus();
}

absl::Status CudaBackend::collectProfile(size_t body,
                                         const KernelContext &context) {
  // runBody synchronized the compute stream, which joined every other
  // stream: every event has completed.
  const StepBody &instructions = (*bodies)[body];
  for (size_t index = 0; index < instructions.size(); ++index) {
    auto [begin, end] = timing[body][index];
    if (!begin)
      continue;
    float beginMs = 0, endMs = 0;
    ZERO_RETURN_IF_ERROR(
        cudaCheck(cudaEventElapsedTime(&beginMs, profileOrigin, begin),
                  "timing an instruction"));
    ZERO_RETURN_IF_ERROR(
        cudaCheck(cudaEventElapsedTime(&endMs, profileOrigin, end),
                  "timing an instruction"));
    ProfileEvent event;
    event.body = static_cast<int64_t>(body);
    event.instruction = static_cast<int64_t>(index);
    event.stream = instructions[index].stream;
    event.step = context.step;
    event.beginNs = profileOriginNs + static_cast<int64_t>(beginMs * 1e6);
    event.endNs = profileOriginNs + static_cast<int64_t>(endMs * 1e6);
    profile->add(event);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ExecutionBackend>>
zero::rt::createCudaBackend(Communicator &hostComm,
                            const CudaBackendOptions &options) {
  auto backend = std::make_unique<CudaBackend>(hostComm, options);
  ZERO_RETURN_IF_ERROR(backend->initialize());
  return backend;
}
