//===- CpuBackend.cpp - Runs a loaded step on the host
//---------------------===//
//
// Kernels run synchronously, one after the other, so only the communication
// side of the program's events matters: which collective a record marks,
// and where the compute stream waits for it. Collectives on the compute
// stream complete before the next instruction; the others start
// non-blocking on the host communicator and overlap the kernels that follow.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/ExecutionBackend.h"

#include "absl/strings/str_cat.h"

#include <cstdlib>
#include <cstring>

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
zero::rt::startCollective(Communicator &comm,
                          const StepInstruction &instruction, const void *in,
                          void *out) {
  using Kind = StepInstruction::Kind;
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
  absl::StatusOr<Communicator::Ticket> ticket =
      startCollective(comm, instruction, in, out);
  if (!ticket.ok())
    return ticket.status();
  return comm.wait(*ticket);
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
    absl::string_view name, mlir::DictionaryAttr params,
    absl::Span<const TensorSpec> ins, absl::Span<const TensorSpec> outs, int) {
  return bindCpuKernel(name, params, ins, outs);
}

namespace {

class CpuBackend : public HostExecutionBackend {
public:
  explicit CpuBackend(Communicator &comm) : comm(comm) {}

  std::string name() const override { return "cpu"; }
  std::string deviceDescription() const override { return "host CPU"; }

  absl::Status prepare(const std::vector<StepBody> &steps, int,
                       int events) override {
    bodies = &steps;
    eventTickets.assign(events, -1);
    return absl::OkStatus();
  }

  absl::Status runBody(size_t body, const KernelContext &context) override;

private:
  absl::Status run(const StepInstruction &instruction,
                   const KernelContext &context);
  absl::Status waitAll();

  Communicator &comm;
  const std::vector<StepBody> *bodies = nullptr;
  /// Per event: the communication ticket recorded last (or -1).
  std::vector<Communicator::Ticket> eventTickets;
  /// Collectives started and not yet waited for, oldest first.
  std::vector<Communicator::Ticket> inFlight;
};

} // namespace

absl::Status CpuBackend::waitAll() {
  for (Communicator::Ticket ticket : inFlight)
    if (absl::Status status = comm.wait(ticket); !status.ok())
      return status;
  inFlight.clear();
  return absl::OkStatus();
}

absl::Status CpuBackend::run(const StepInstruction &instruction,
                             const KernelContext &context) {
  using Kind = StepInstruction::Kind;
  switch (instruction.kind) {
  case Kind::launch:
    return instruction.kernel(instruction.ins, instruction.outs, context);
  case Kind::copy:
    std::memmove(instruction.outs[0], instruction.ins[0], instruction.bytes);
    return absl::OkStatus();
  case Kind::record:
    // The compute stream's work is complete once issued.
    if (instruction.stream != 0)
      eventTickets[instruction.event] = inFlight.empty() ? -1 : inFlight.back();
    return absl::OkStatus();
  case Kind::wait: {
    // Communication waiting for compute has nothing to wait for.
    if (instruction.stream != 0)
      return absl::OkStatus();
    Communicator::Ticket ticket = eventTickets[instruction.event];
    while (!inFlight.empty() && inFlight.front() <= ticket) {
      Communicator::Ticket oldest = inFlight.front();
      inFlight.erase(inFlight.begin());
      if (absl::Status status = comm.wait(oldest); !status.ok())
        return status;
    }
    return absl::OkStatus();
  }
  default:
    break;
  }
  // One collective in flight at a time keeps the communication stream in
  // program order: a collective may read what the previous one wrote.
  if (absl::Status status = waitAll(); !status.ok())
    return status;
  absl::StatusOr<Communicator::Ticket> ticket = startCollective(
      comm, instruction, instruction.ins[0], instruction.outs[0]);
  if (!ticket.ok())
    return ticket.status();
  if (instruction.stream == 0)
    return comm.wait(*ticket);
  inFlight.push_back(*ticket);
  return absl::OkStatus();
}

absl::Status CpuBackend::runBody(size_t body, const KernelContext &context) {
  const StepBody &instructions = (*bodies)[body];
  for (size_t index = 0; index < instructions.size(); ++index) {
    const StepInstruction &instruction = instructions[index];
    absl::Status status = run(instruction, context);
    if (!status.ok())
      return absl::Status(status.code(),
                          absl::StrCat("step ", context.step, ", instruction ",
                                       index, " (", instruction.label,
                                       "): ", status.message()));
  }
  return waitAll();
}

std::unique_ptr<ExecutionBackend>
zero::rt::createCpuBackend(Communicator &comm) {
  return std::make_unique<CpuBackend>(comm);
}
