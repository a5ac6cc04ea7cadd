//===- SimulatedStreamsBackend.cpp - CUDA stream semantics on the host ----===//
//
// A discrete-event simulation of what CudaBackend asks of the GPU:
//
// - each zrt stream runs its instructions in issue order (a CUDA stream);
// - a record completes its event instance once it reaches the head of its
//   stream, i.e. once everything issued before it on that stream has run
//   (cudaEventRecord);
// - a wait holds its stream until the record instance that was the event's
//   most recent one when the wait was issued has run (cudaStreamWaitEvent
//   binds to the record issued before it, not to later re-records);
// - collectives also run in program order across streams
//   (CudaBackend::enqueueCollective), which is what keeps NCCL from
//   deadlocking;
// - a step starts with every stream forked from compute and ends with all
//   of them joined, which a simulation that drains every queue before
//   returning gives for free.
//
// Nothing else orders two streams, so any interleaving the scheduler picks
// is one the GPU may run. Kernels and collectives run to completion when
// picked; that loses no generality for ordering bugs, because a missing
// dependency already lets the whole instruction move to the wrong side of
// its producer or consumer.
//
//===----------------------------------------------------------------------===//

#include "SimulatedStreamsBackend.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>

using namespace zero::rt;
using namespace zero::rt::testing;

namespace {

class SimulatedStreamsBackend : public HostExecutionBackend {
public:
  SimulatedStreamsBackend(Communicator &comm, const SimulationOptions &options,
                          SimulationStats *stats)
      : comm(comm), options(options), stats(stats), random(options.seed) {}

  std::string name() const override { return "simulated-streams"; }
  bool hostAddressable() const override { return !options.deviceLikeMemory; }
  std::string deviceDescription() const override {
    return "host CPU, simulated concurrent streams";
  }

  // Kernels are the CPU backend's (HostExecutionBackend); so is memory,
  // unless the options ask for adjacent allocations.
  absl::StatusOr<void *> allocate(int64_t bytes) override {
    if (!options.adjacentAllocations)
      return HostExecutionBackend::allocate(bytes);
    int64_t size = std::max<int64_t>(64, (bytes + 63) / 64 * 64);
    if (poolUsed + size > kPoolBytes)
      return absl::ResourceExhaustedError(
          absl::StrCat("the simulation's pool of ", kPoolBytes,
                       " bytes cannot hold another ", size));
    if (!pool)
      pool = std::make_unique<PoolBlock[]>(kPoolBytes / sizeof(PoolBlock));
    char *memory = reinterpret_cast<char *>(pool.get()) + poolUsed;
    poolUsed += size;
    return memory;
  }
  void release(void *memory) override {
    if (!options.adjacentAllocations)
      HostExecutionBackend::release(memory);
  }

  absl::StatusOr<KernelFn> bindKernel(absl::string_view name,
                                      const KernelParams &params,
                                      absl::Span<const TensorSpec> ins,
                                      absl::Span<const TensorSpec> outs,
                                      int stream) override {
    absl::StatusOr<KernelFn> kernel =
        HostExecutionBackend::bindKernel(name, params, ins, outs, stream);
    if (!kernel.ok() || name != options.overrunKernel || outs.empty())
      return kernel;
    int64_t bytes = outs[0].numElements() * dtypeBytes(outs[0].dtype);
    return KernelFn([inner = std::move(*kernel),
                     bytes](absl::Span<const void *const> in,
                            absl::Span<void *const> out,
                            const KernelContext &context) -> absl::Status {
      absl::Status status = inner(in, out, context);
      float past = 1.0f;
      std::memcpy(static_cast<char *>(out[0]) + (bytes + 63) / 64 * 64, &past,
                  sizeof(past));
      return status;
    });
  }

  absl::Status prepare(const std::vector<StepBody> &bodies, int streams,
                       int events) override;
  absl::Status runBody(size_t body, const KernelContext &context) override;

private:
  /// The pool's unit: 64-byte aligned, zeroed by make_unique.
  struct alignas(64) PoolBlock {
    char bytes[64];
  };
  static constexpr int64_t kPoolBytes = int64_t(64) << 20;
  std::unique_ptr<PoolBlock[]> pool;
  int64_t poolUsed = 0;

  /// Whether instruction `index`, at the head of its stream, may run.
  bool ready(size_t index) const;
  absl::Status execute(size_t index, const KernelContext &context);
  /// The stream to advance among `candidates` (not empty).
  int pick(const std::vector<int> &candidates);

  Communicator &comm;
  SimulationOptions options;
  SimulationStats *stats;
  std::mt19937 random;

  const std::vector<StepInstruction> *instructions = nullptr;
  int numStreams = 1;
  /// Per instruction, in issue order.
  std::vector<int> awaitedRecord; // waits: the record they bind to, else -1
  std::vector<bool> dropped;
  /// Collective instructions in program order.
  std::vector<size_t> collectiveOrder;

  /// Per step.
  std::vector<std::deque<size_t>> queues;
  std::vector<bool> executed;
  size_t nextCollective = 0;
  int currentStream = -1;
};

} // namespace

absl::Status
SimulatedStreamsBackend::prepare(const std::vector<StepBody> &bodies,
                                 int streams, int events) {
  using Kind = StepInstruction::Kind;
  // The simulation studies the streams of one step; the micro-step and
  // apply bodies of accumulation are the CPU backend's to run.
  if (bodies.size() != 1)
    return absl::UnimplementedError(
        "the simulated-streams backend runs programs without gradient "
        "accumulation");
  const StepBody &step = bodies.front();
  instructions = &step;
  numStreams = std::max(1, streams);
  awaitedRecord.assign(step.size(), -1);
  dropped.assign(step.size(), false);
  collectiveOrder.clear();
  SimulationStats seen;
  // Issue-time binding: the record instance a wait waits for is the event's
  // latest record in issue order, whatever runs first at execution time.
  std::vector<int> latestRecord(events, -1);
  for (size_t index = 0; index < step.size(); ++index) {
    const StepInstruction &instruction = step[index];
    if (instruction.stream < 0 || instruction.stream >= numStreams)
      return absl::InvalidArgumentError(
          absl::StrCat("instruction ", index, " is on stream ",
                       instruction.stream, " of ", numStreams));
    if (instruction.isCollective())
      collectiveOrder.push_back(index);
    if (instruction.kind == Kind::record) {
      latestRecord[instruction.event] = index;
      continue;
    }
    if (instruction.kind != Kind::wait)
      continue;
    int record = latestRecord[instruction.event];
    if (record < 0)
      return absl::InvalidArgumentError(
          absl::StrCat("wait ", index, " has no earlier record of its event"));
    awaitedRecord[index] = record;
    if (step[record].stream == instruction.stream)
      continue;
    ++seen.crossStreamWaits;
    if (instruction.stream != 0)
      continue;
    ++seen.computeCrossStreamWaits;
    if (options.dropFirstCrossStreamWait && seen.droppedWait < 0) {
      seen.droppedWait = index;
      dropped[index] = true;
    }
  }
  if (stats)
    *stats = seen;
  return absl::OkStatus();
}

bool SimulatedStreamsBackend::ready(size_t index) const {
  using Kind = StepInstruction::Kind;
  const StepInstruction &instruction = (*instructions)[index];
  if (instruction.kind == Kind::wait)
    return executed[awaitedRecord[index]];
  if (instruction.isCollective())
    return nextCollective < collectiveOrder.size() &&
           collectiveOrder[nextCollective] == index;
  // Launches, copies and records only wait for their stream's earlier work,
  // which being at the head of the queue means is done.
  return true;
}

int SimulatedStreamsBackend::pick(const std::vector<int> &candidates) {
  auto head = [&](int stream) { return queues[stream].front(); };
  switch (options.policy) {
  case SchedulePolicy::leader:
    return *std::max_element(candidates.begin(), candidates.end(),
                             [&](int a, int b) { return head(a) < head(b); });
  case SchedulePolicy::laggard:
    return *std::min_element(candidates.begin(), candidates.end(),
                             [&](int a, int b) { return head(a) < head(b); });
  case SchedulePolicy::sticky:
    if (std::find(candidates.begin(), candidates.end(), currentStream) !=
        candidates.end())
      return currentStream;
    break;
  case SchedulePolicy::uniform:
    break;
  }
  std::uniform_int_distribution<size_t> choose(0, candidates.size() - 1);
  return candidates[choose(random)];
}

absl::Status SimulatedStreamsBackend::execute(size_t index,
                                              const KernelContext &context) {
  using Kind = StepInstruction::Kind;
  const StepInstruction &instruction = (*instructions)[index];
  executed[index] = true;
  switch (instruction.kind) {
  case Kind::launch:
    return instruction.kernel(instruction.ins, instruction.outs, context);
  case Kind::copy:
    std::memmove(instruction.outs[0], instruction.ins[0], instruction.bytes);
    return absl::OkStatus();
  case Kind::record:
  case Kind::wait:
    // Their effect is `executed`, which ready() reads.
    return absl::OkStatus();
  default:
    ++nextCollective;
    // Blocking: the collective is one indivisible unit of its stream's work.
    return runCollective(comm, instruction, instruction.ins[0],
                         instruction.outs[0]);
  }
}

absl::Status SimulatedStreamsBackend::runBody(size_t,
                                              const KernelContext &context) {
  const std::vector<StepInstruction> &step = *instructions;
  queues.assign(numStreams, {});
  executed.assign(step.size(), false);
  nextCollective = 0;
  currentStream = -1;
  size_t remaining = 0;
  for (size_t index = 0; index < step.size(); ++index) {
    if (dropped[index])
      continue;
    queues[step[index].stream].push_back(index);
    ++remaining;
  }
  std::vector<int> candidates;
  // The latest issue index run so far, to count what ran out of order.
  size_t latestRun = 0;
  bool anyRun = false;
  while (remaining > 0) {
    candidates.clear();
    for (int stream = 0; stream < numStreams; ++stream)
      if (!queues[stream].empty() && ready(queues[stream].front()))
        candidates.push_back(stream);
    if (candidates.empty())
      return absl::InternalError(
          absl::StrCat("step ", context.step, ": every stream is blocked with ",
                       remaining, " instructions left (a cycle of waits)"));
    currentStream = pick(candidates);
    size_t index = queues[currentStream].front();
    queues[currentStream].pop_front();
    --remaining;
    if (stats && anyRun && index < latestRun)
      ++stats->reorderedInstructions;
    latestRun = anyRun ? std::max(latestRun, index) : index;
    anyRun = true;
    if (absl::Status status = execute(index, context); !status.ok())
      return absl::Status(status.code(),
                          absl::StrCat("step ", context.step, ", instruction ",
                                       index, " (", step[index].label,
                                       "): ", status.message()));
  }
  return absl::OkStatus();
}

std::unique_ptr<ExecutionBackend>
zero::rt::testing::createSimulatedStreamsBackend(
    Communicator &comm, const SimulationOptions &options,
    SimulationStats *stats) {
  return std::make_unique<SimulatedStreamsBackend>(comm, options, stats);
}
