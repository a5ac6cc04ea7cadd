//===- CpuBackend.cpp - Runs a loaded step on the host --------------------===//
//
// Kernels of the compute stream run synchronously on the calling thread, so
// a record on it marks nothing still running. Collectives on the compute
// stream complete before the next instruction; the others start
// non-blocking on the host communicator and overlap the kernels that follow.
// The transfer and host streams of offloaded work (streams with neither
// compute kernels nor collectives) run on one worker thread in program
// order, which keeps every order the program's events ask for between them;
// the events between the worker and the calling thread are honored with a
// sequence number per worker item. MPI is only ever called from the calling
// thread: a worker item that waits for a collective waits until the calling
// thread has seen it complete.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/ExecutionBackend.h"
#include "zero/support/Status.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

using namespace zero::rt;

int64_t StepInstruction::collectiveInputBytes(int ranks) const {
  int64_t elements = count;
  if (kind == Kind::reduceScatter || kind == Kind::allToAll)
    elements = count * ranks;
  return elements * dtypeBytes(dtype);
}

int64_t StepInstruction::collectiveOutputBytes(int ranks) const {
  int64_t elements = count;
  if (kind == Kind::allGather || kind == Kind::allToAll)
    elements = count * ranks;
  return elements * dtypeBytes(dtype);
}

absl::StatusOr<Communicator::Ticket>
zero::rt::startCollective(Communicator &job, const StepInstruction &instruction,
                          const void *in, void *out) {
  using Kind = StepInstruction::Kind;
  Communicator &comm =
      instruction.communicator ? *instruction.communicator : job;
  switch (instruction.kind) {
  case Kind::allReduce:
    return comm.startAllReduce(in, out, instruction.count, instruction.dtype,
                               instruction.reduce);
  case Kind::reduceScatter:
    return comm.startReduceScatter(in, out, instruction.count,
                                   instruction.dtype, instruction.reduce);
  case Kind::allGather:
    return comm.startAllGather(in, out, instruction.count, instruction.dtype);
  case Kind::broadcast:
    return comm.startBroadcast(in, out, instruction.count, instruction.dtype,
                               instruction.root);
  case Kind::allToAll:
    return comm.startAllToAll(in, out, instruction.count, instruction.dtype);
  default:
    return absl::InternalError(
        absl::StrCat(instruction.label, " is not a collective"));
  }
}

absl::Status zero::rt::runCollective(Communicator &comm,
                                     const StepInstruction &instruction,
                                     const void *in, void *out) {
  ZERO_ASSIGN_OR_RETURN(Communicator::Ticket ticket,
                        startCollective(comm, instruction, in, out));
  return comm.wait(ticket);
}

absl::StatusOr<void *> ExecutionBackend::allocateHost(int64_t) {
  return absl::UnimplementedError(absl::StrCat(
      "the ", name(),
      " backend has no host memory pool yet: programs whose state "
      "zero-offload placed in host memory run on the CPU backend"));
}

void ExecutionBackend::releaseHost(void *) {}

absl::Status ExecutionBackend::setProfile(StepProfile *) {
  return absl::UnimplementedError(absl::StrCat(
      "the ", name(),
      " backend does not time its instructions; --profile runs on the CPU "
      "backend (on GPUs, Nsight Systems shows the streams)"));
}

absl::StatusOr<KernelFn> ExecutionBackend::bindHostKernel(
    absl::string_view name, const KernelParams &params,
    absl::Span<const TensorSpec> ins, absl::Span<const TensorSpec> outs, int) {
  return bindCpuKernel(name, params, ins, outs);
}

absl::StatusOr<void *> HostExecutionBackend::allocate(int64_t bytes) {
  // Aligned for vector loads; zeroed so padding reads as zero.
  int64_t size = std::max<int64_t>(64, (bytes + 63) / 64 * 64);
  void *memory = std::aligned_alloc(64, size);
  if (!memory)
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", size, " bytes of host memory"));
  std::memset(memory, 0, size);
  return memory;
}

void HostExecutionBackend::release(void *memory) { std::free(memory); }

absl::Status HostExecutionBackend::copyToHost(void *host, const void *source,
                                              int64_t bytes) {
  std::memcpy(host, source, bytes);
  return absl::OkStatus();
}

absl::Status HostExecutionBackend::copyFromHost(void *target, const void *host,
                                                int64_t bytes) {
  std::memcpy(target, host, bytes);
  return absl::OkStatus();
}

absl::StatusOr<KernelFn> HostExecutionBackend::bindKernel(
    absl::string_view name, const KernelParams &params,
    absl::Span<const TensorSpec> ins, absl::Span<const TensorSpec> outs, int) {
  return bindCpuKernel(name, params, ins, outs);
}

namespace {

/// Runs the instructions of the transfer and host streams on its own
/// thread, in the order they are issued.
class StreamWorker {
public:
  StreamWorker() : thread([this] { loop(); }) {}
  ~StreamWorker() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    thread.join();
  }

  /// Queues `instruction` (a launch or copy; null for a record) to run
  /// after the communicator has completed ticket `gate` (-1: no gate).
  /// Returns the item's sequence number.
  int64_t issue(const StepInstruction *instruction,
                const KernelContext &context, Communicator::Ticket gate,
                ProfileEvent place = {}) {
    std::lock_guard<std::mutex> lock(mutex);
    queue.push_back({instruction, context, gate, ++issued, place});
    maxGate = std::max(maxGate, gate);
    wake.notify_all();
    return issued;
  }
  /// The calling thread has waited for every ticket up to `ticket`.
  void noteCompleted(Communicator::Ticket ticket) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      completedTicket = std::max(completedTicket, ticket);
    }
    wake.notify_all();
  }
  /// The highest ticket a queued item waits for (-1 if none).
  Communicator::Ticket pendingGate() {
    std::lock_guard<std::mutex> lock(mutex);
    return maxGate > completedTicket ? maxGate : -1;
  }
  /// Blocks until item `sequence` has run; returns the first error of any
  /// item, after which the worker runs nothing more.
  absl::Status waitFor(int64_t sequence) {
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return finished >= sequence; });
    return error;
  }
  absl::Status drain() { return waitFor(issued); }
  /// Read by the worker thread before each item; set between steps only.
  std::atomic<StepProfile *> profile{nullptr};

private:
  struct Item {
    const StepInstruction *instruction;
    KernelContext context;
    Communicator::Ticket gate;
    int64_t sequence;
    /// The instruction's body, index and stream, for the profile.
    ProfileEvent place;
  };

  void loop() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      wake.wait(lock, [&] {
        return stopping ||
               (!queue.empty() && queue.front().gate <= completedTicket);
      });
      if (stopping)
        return;
      Item item = queue.front();
      queue.pop_front();
      bool failed = !error.ok();
      lock.unlock();
      StepProfile *timing = profile.load();
      int64_t begin = timing ? StepProfile::nowNs() : 0;
      absl::Status status = failed ? absl::OkStatus() : run(item);
      if (timing && item.instruction) {
        ProfileEvent event = item.place;
        event.beginNs = begin;
        event.endNs = StepProfile::nowNs();
        timing->add(event);
      }
      lock.lock();
      if (!status.ok() && error.ok())
        error = absl::Status(
            status.code(), absl::StrCat(item.instruction->label, " (on the ",
                                        "worker thread): ", status.message()));
      finished = item.sequence;
      done.notify_all();
    }
  }

  static absl::Status run(const Item &item) {
    const StepInstruction *instruction = item.instruction;
    if (!instruction)
      return absl::OkStatus();
    if (instruction->kind == StepInstruction::Kind::copy) {
      std::memmove(instruction->outs[0], instruction->ins[0],
                   instruction->bytes);
      return absl::OkStatus();
    }
    return instruction->kernel(instruction->ins, instruction->outs,
                               item.context);
  }

  std::mutex mutex;
  std::condition_variable wake, done;
  std::deque<Item> queue;
  int64_t issued = 0, finished = 0;
  Communicator::Ticket completedTicket = -1, maxGate = -1;
  bool stopping = false;
  absl::Status error;
  std::thread thread;
};

class CpuBackend : public HostExecutionBackend {
public:
  explicit CpuBackend(Communicator &comm) : comm(comm) {}

  std::string name() const override { return "cpu"; }
  std::string deviceDescription() const override { return "host CPU"; }

  absl::Status prepare(const std::vector<StepBody> &steps, int streams,
                       int events) override;
  absl::Status runBody(size_t body, const KernelContext &context) override;
  absl::Status setProfile(StepProfile *profile) override;

private:
  /// Who last recorded an event.
  enum class Recorder { compute, comm, worker };

  absl::Status run(const StepInstruction &instruction,
                   const KernelContext &context);
  absl::Status runOnWorker(const StepInstruction &instruction,
                           const KernelContext &context);
  absl::Status waitAll();
  absl::Status waitForTicket(Communicator::Ticket ticket);
  /// Blocks until worker item `sequence` has run, first completing the
  /// collectives queued worker items wait for.
  absl::Status waitForWorker(int64_t sequence);

  Communicator &comm;
  const std::vector<StepBody> *bodies = nullptr;
  /// Per stream: whether it runs on the worker thread.
  std::vector<bool> onWorker;
  std::unique_ptr<StreamWorker> worker;
  /// Per event: who recorded it last, the communication ticket it marks
  /// (or -1), and the worker item it marks.
  std::vector<Recorder> eventRecorder;
  std::vector<Communicator::Ticket> eventTickets;
  std::vector<int64_t> eventItems;
  /// Collectives started and not yet waited for, oldest first.
  std::vector<Communicator::Ticket> inFlight;

  StepProfile *profile = nullptr;
  /// Where the instruction being run sits, for its profile event.
  ProfileEvent place;
  /// Profile events of collectives in flight, ended when their ticket is
  /// seen complete.
  std::deque<std::pair<Communicator::Ticket, ProfileEvent>> openCollectives;
};

} // namespace

absl::Status CpuBackend::prepare(const std::vector<StepBody> &steps,
                                 int streams, int events) {
  bodies = &steps;
  eventRecorder.assign(events, Recorder::compute);
  eventTickets.assign(events, -1);
  eventItems.assign(events, 0);
  // Stream 0 computes; a stream with collectives communicates; a stream
  // with neither moves data and runs host kernels for offloaded state.
  std::vector<bool> busy(streams, false), communicates(streams, false);
  for (const StepBody &body : steps)
    for (const StepInstruction &instruction : body) {
      if (instruction.kind == StepInstruction::Kind::launch ||
          instruction.kind == StepInstruction::Kind::copy)
        busy[instruction.stream] = true;
      if (instruction.isCollective())
        communicates[instruction.stream] = true;
    }
  onWorker.assign(streams, false);
  for (int stream = 1; stream < streams; ++stream)
    onWorker[stream] = busy[stream] && !communicates[stream];
  if (std::find(onWorker.begin(), onWorker.end(), true) != onWorker.end())
    worker = std::make_unique<StreamWorker>();
  return absl::OkStatus();
}

absl::Status CpuBackend::waitForTicket(Communicator::Ticket ticket) {
  while (!inFlight.empty() && inFlight.front() <= ticket) {
    Communicator::Ticket oldest = inFlight.front();
    inFlight.erase(inFlight.begin());
    ZERO_RETURN_IF_ERROR(comm.wait(oldest));
    if (worker)
      worker->noteCompleted(oldest);
    // Open MPI progresses a collective only inside MPI calls: the event
    // ends when this rank saw it complete.
    if (!openCollectives.empty() && openCollectives.front().first == oldest) {
      ProfileEvent event = openCollectives.front().second;
      openCollectives.pop_front();
      event.endNs = StepProfile::nowNs();
      profile->add(event);
    }
  }
  return absl::OkStatus();
}

absl::Status CpuBackend::waitAll() {
  if (inFlight.empty())
    return absl::OkStatus();
  return waitForTicket(inFlight.back());
}

absl::Status CpuBackend::waitForWorker(int64_t sequence) {
  if (Communicator::Ticket gate = worker->pendingGate(); gate >= 0)
    ZERO_RETURN_IF_ERROR(waitForTicket(gate));
  return worker->waitFor(sequence);
}

absl::Status CpuBackend::runOnWorker(const StepInstruction &instruction,
                                     const KernelContext &context) {
  using Kind = StepInstruction::Kind;
  switch (instruction.kind) {
  case Kind::record:
    eventRecorder[instruction.event] = Recorder::worker;
    eventItems[instruction.event] = worker->issue(nullptr, context, -1);
    return absl::OkStatus();
  case Kind::wait:
    // The worker runs its items in issue order and the compute stream's
    // work is done once issued; only a collective can still be running.
    if (eventRecorder[instruction.event] == Recorder::comm &&
        eventTickets[instruction.event] >= 0)
      worker->issue(nullptr, context, eventTickets[instruction.event]);
    return absl::OkStatus();
  default:
    worker->issue(&instruction, context, -1, place);
    return absl::OkStatus();
  }
}

absl::Status CpuBackend::run(const StepInstruction &instruction,
                             const KernelContext &context) {
  using Kind = StepInstruction::Kind;
  if (onWorker[instruction.stream])
    return runOnWorker(instruction, context);
  switch (instruction.kind) {
  case Kind::launch:
    return instruction.kernel(instruction.ins, instruction.outs, context);
  case Kind::copy:
    std::memmove(instruction.outs[0], instruction.ins[0], instruction.bytes);
    return absl::OkStatus();
  case Kind::record:
    eventRecorder[instruction.event] =
        instruction.stream == 0 ? Recorder::compute : Recorder::comm;
    // The compute stream's work is complete once issued.
    if (instruction.stream != 0)
      eventTickets[instruction.event] = inFlight.empty() ? -1 : inFlight.back();
    return absl::OkStatus();
  case Kind::wait: {
    Recorder recorder = eventRecorder[instruction.event];
    if (recorder == Recorder::worker)
      return waitForWorker(eventItems[instruction.event]);
    // Communication waiting for compute has nothing to wait for.
    if (instruction.stream != 0 || recorder == Recorder::compute)
      return absl::OkStatus();
    return waitForTicket(eventTickets[instruction.event]);
  }
  default:
    break;
  }
  // One collective in flight at a time keeps the communication stream in
  // program order: a collective may read what the previous one wrote.
  ZERO_RETURN_IF_ERROR(waitAll());
  ZERO_ASSIGN_OR_RETURN(Communicator::Ticket ticket,
                        startCollective(comm, instruction, instruction.ins[0],
                                        instruction.outs[0]));
  if (instruction.stream == 0) {
    absl::Status status = comm.wait(ticket);
    if (worker)
      worker->noteCompleted(ticket);
    return status;
  }
  inFlight.push_back(ticket);
  if (profile) {
    ProfileEvent event = place;
    event.beginNs = StepProfile::nowNs();
    openCollectives.emplace_back(ticket, event);
  }
  return absl::OkStatus();
}

absl::Status CpuBackend::runBody(size_t body, const KernelContext &context) {
  const StepBody &instructions = (*bodies)[body];
  for (size_t index = 0; index < instructions.size(); ++index) {
    const StepInstruction &instruction = instructions[index];
    place = {static_cast<int64_t>(body), static_cast<int64_t>(index),
             instruction.stream, context.step};
    // Timed here: what runs on this thread (kernels, copies, waits that may
    // block, collectives of the compute stream). Collectives of other
    // streams end when seen complete; worker items time themselves.
    bool timed = profile && !onWorker[instruction.stream] &&
                 instruction.kind != StepInstruction::Kind::record &&
                 !(instruction.isCollective() && instruction.stream != 0);
    int64_t begin = timed ? StepProfile::nowNs() : 0;
    absl::Status status = run(instruction, context);
    if (timed && status.ok()) {
      ProfileEvent event = place;
      event.beginNs = begin;
      event.endNs = StepProfile::nowNs();
      profile->add(event);
    }
    if (!status.ok()) {
      // Nothing of this body may still run when the error returns.
      (void)waitAll();
      if (worker)
        (void)worker->drain();
      return absl::Status(status.code(),
                          absl::StrCat("step ", context.step, ", instruction ",
                                       index, " (", instruction.label,
                                       "): ", status.message()));
    }
  }
  ZERO_RETURN_IF_ERROR(waitAll());
  if (worker)
    return worker->drain();
  return absl::OkStatus();
}

absl::Status CpuBackend::setProfile(StepProfile *newProfile) {
  profile = newProfile;
  if (worker)
    worker->profile.store(newProfile);
  return absl::OkStatus();
}

std::unique_ptr<ExecutionBackend>
zero::rt::createCpuBackend(Communicator &comm) {
  return std::make_unique<CpuBackend>(comm);
}
