//===- StepSimulation.cpp - A lowered step's predicted timeline -----------===//
//
// The simulation follows the runtime's execution rules rather than an ideal
// scheduler, so that its timeline can be laid over a measured profile:
// a stream starts an instruction when its previous one ends, a wait holds
// its stream until the event's last record, and a record marks the end of
// what its stream was given so far. Without asynchronous collectives (CPU
// ranks) a collective of the communication stream advances only while the
// calling thread waits: when the compute stream waits for it, when the next
// collective is issued (the runtime keeps one in flight), or at the end of
// the body, as the CPU backend does.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/StepSimulation.h"

#include "zero/analysis/TrainingStep.h"
#include "zero/dialects/train/TrainDialect.h"

#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <deque>
#include <limits>

using namespace mlir;

namespace zero {
namespace {

double bytesOf(Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  return static_cast<double>(type.getNumElements() *
                             getElementBytes(type.getElementType()));
}

/// The memref an instruction touches, seen through views: an arena view,
/// a persistent buffer's reference, or null for anything else.
Operation *rootOf(Value memref) {
  while (auto view = memref.getDefiningOp<zrt::ViewOp>())
    memref = view.getSource();
  return memref.getDefiningOp();
}

/// The sum of the lengths of `intervals` (merged first).
double measure(std::vector<std::pair<double, double>> intervals) {
  llvm::sort(intervals);
  double total = 0, end = -1;
  bool open = false;
  double start = 0;
  for (auto [from, to] : intervals) {
    if (!open || from > end) {
      if (open)
        total += end - start;
      start = from;
      end = to;
      open = true;
    } else {
      end = std::max(end, to);
    }
  }
  if (open)
    total += end - start;
  return total;
}

/// Merged intervals, sorted.
std::vector<std::pair<double, double>>
merged(std::vector<std::pair<double, double>> intervals) {
  llvm::sort(intervals);
  std::vector<std::pair<double, double>> out;
  for (auto interval : intervals) {
    if (!out.empty() && interval.first <= out.back().second)
      out.back().second = std::max(out.back().second, interval.second);
    else
      out.push_back(interval);
  }
  return out;
}

/// Length of `a` not covered by `b`.
double uncovered(std::vector<std::pair<double, double>> a,
                 std::vector<std::pair<double, double>> b) {
  a = merged(std::move(a));
  b = merged(std::move(b));
  double covered = 0;
  size_t j = 0;
  for (auto [from, to] : a) {
    while (j < b.size() && b[j].second <= from)
      ++j;
    for (size_t k = j; k < b.size() && b[k].first < to; ++k)
      covered += std::min(to, b[k].second) - std::max(from, b[k].first);
  }
  return measure(a) - covered;
}

/// The part of a launch's `flops` that MFU counts: each op of the model
/// once, its backward as the gradients need it. A clone train-autodiff
/// recomputes adds none. A fused attention's backward runs five score-sized
/// matmuls, of which one recomputes the forward's scores: the model's are
/// the other four, so that attention counts 2 + 4, as MosaicML's and
/// torchtitan's formulas do.
double modelFlopsOf(zrt::LaunchOp launch, double flops) {
  if (launch.getParams() &&
      launch.getParams()->get(train::TrainDialect::getRecomputedAttrName()))
    return 0;
  if (launch.getKernel() == "train.attention_grad")
    return flops * 4.0 / 5.0;
  return flops;
}

class BodySimulator {
public:
  BodySimulator(const MachineModel &machine, dist::PlacementAttr placement,
                const llvm::DenseMap<StringAttr, unsigned> &streams,
                const std::vector<bool> &hostStreams)
      : machine(machine), placement(placement), streams(streams),
        hostStreams(hostStreams), streamTime(hostStreams.size(), 0.0),
        lastOnStream(hostStreams.size(), -1) {}

  LogicalResult run(zrt::StepOp step, SimulatedBody &body);

private:
  unsigned streamOf(FlatSymbolRefAttr symbol) {
    return streams.lookup(symbol.getAttr());
  }
  double kernelSeconds(zrt::LaunchOp launch, bool onHost, double &bytes,
                       double &flops) const;
  double copySeconds(zrt::CopyOp copy, bool onHost, bool &transfer) const;
  /// Appends an instruction that starts when its stream is free.
  void issue(SimulatedInstruction instruction, double seconds, Operation *op);
  /// Runs the pending collectives up to and including `upTo` on the
  /// calling thread, which stays blocked while they run.
  void progress(int64_t upTo);
  /// Advances stream `stream` to `time`, recording the gap as blocked.
  void blockUntil(unsigned stream, double time);

  const MachineModel &machine;
  dist::PlacementAttr placement;
  const llvm::DenseMap<StringAttr, unsigned> &streams;
  const std::vector<bool> &hostStreams;
  std::vector<double> streamTime;
  /// Per stream, the last instruction issued on it (-1: none).
  std::vector<int64_t> lastOnStream;
  /// What an event's last record waits for: a time, or a collective not
  /// yet run (index into `instructions`).
  struct EventState {
    double time = 0;
    int64_t pending = -1;
  };
  llvm::DenseMap<StringAttr, EventState> events;
  /// Collectives issued but not run (without asynchronous collectives):
  /// index and the time they could start.
  std::deque<std::pair<int64_t, double>> pending;
  std::vector<double> pendingSeconds;
  std::vector<SimulatedInstruction> instructions;
  std::vector<Operation *> ops;
};

double BodySimulator::kernelSeconds(zrt::LaunchOp launch, bool onHost,
                                    double &bytes, double &flops) const {
  bytes = 0;
  for (Value memref : launch->getOperands())
    bytes += bytesOf(memref);
  flops = 0;
  // A fused matmul (train.matmul_bias, ...) is its matmul's FLOPs; its
  // epilogue adds bytes only.
  StringRef kernel = launch.getKernel();
  bool fused = kernel.starts_with("train.matmul_");
  if ((kernel == "train.matmul" || fused) && launch.getIns().size() >= 2 &&
      !launch.getOuts().empty()) {
    auto lhs = cast<MemRefType>(launch.getIns()[0].getType());
    auto out = cast<MemRefType>(launch.getOuts()[0].getType());
    bool transposeA =
        launch.getParams() && launch.getParams()->get("transpose_a");
    flops = getMatmulFlops(lhs, out, transposeA);
    return machine.matmulSeconds(lhs,
                                 cast<MemRefType>(launch.getIns()[1].getType()),
                                 out, transposeA, bytes, onHost);
  }
  bool forward = launch.getKernel() == "train.attention";
  if ((forward || launch.getKernel() == "train.attention_grad") &&
      launch.getIns().size() >= 3) {
    // The query is operand 0 of the forward, 1 of the backward.
    auto query = cast<MemRefType>(launch.getIns()[forward ? 0 : 1].getType());
    DictionaryAttr params =
        launch.getParams() ? *launch.getParams() : DictionaryAttr();
    flops = getAttentionFlops(query, params && params.get("causal"), !forward,
                              params && params.get("seq_major"));
    return machine.kernelSeconds(bytes, flops, query.getElementType(), onHost,
                                 machine.attentionEfficiency);
  }
  return machine.kernelSeconds(bytes, 0.0, Type(), onHost);
}

double BodySimulator::copySeconds(zrt::CopyOp copy, bool onHost,
                                  bool &transfer) const {
  auto spaceOf = [](Value memref) {
    Operation *root = rootOf(memref);
    if (auto view = dyn_cast_or_null<zrt::ArenaViewOp>(root))
      return view.getSpace();
    if (auto ref = dyn_cast_or_null<zrt::BufferRefOp>(root))
      if (auto buffer = SymbolTable::lookupNearestSymbolFrom<zrt::BufferOp>(
              ref, ref.getBufferAttr()))
        return buffer.getSpace();
    return zrt::MemorySpace::device;
  };
  double bytes = bytesOf(copy.getSource());
  transfer = spaceOf(copy.getSource()) != spaceOf(copy.getTarget());
  if (transfer)
    return bytes / machine.hostLinkBandwidth + machine.launchOverhead;
  return machine.copySeconds(bytes, onHost);
}

void BodySimulator::issue(SimulatedInstruction instruction, double seconds,
                          Operation *op) {
  unsigned stream = instruction.stream;
  instruction.start = streamTime[stream];
  instruction.end = instruction.start + seconds;
  streamTime[stream] = instruction.end;
  lastOnStream[stream] = instructions.size();
  instructions.push_back(std::move(instruction));
  pendingSeconds.push_back(0);
  ops.push_back(op);
}

void BodySimulator::blockUntil(unsigned stream, double time) {
  if (time <= streamTime[stream])
    return;
  SimulatedInstruction wait;
  wait.name = "wait";
  wait.kind = SimulatedKind::wait;
  wait.stream = stream;
  wait.start = streamTime[stream];
  wait.end = time;
  streamTime[stream] = time;
  instructions.push_back(std::move(wait));
  pendingSeconds.push_back(0);
  ops.push_back(nullptr);
}

void BodySimulator::progress(int64_t upTo) {
  while (!pending.empty() && pending.front().first <= upTo) {
    auto [index, ready] = pending.front();
    pending.pop_front();
    SimulatedInstruction &collective = instructions[index];
    unsigned stream = collective.stream;
    double start = std::max({ready, streamTime[0], streamTime[stream]});
    blockUntil(0, start);
    // `instructions` may have grown: take the reference again.
    SimulatedInstruction &run = instructions[index];
    run.start = start;
    run.end = start + pendingSeconds[index];
    streamTime[stream] = run.end;
    blockUntil(0, run.end);
  }
}

LogicalResult BodySimulator::run(zrt::StepOp step, SimulatedBody &body) {
  int64_t index = 0;
  for (Operation &op : step.getBody().front()) {
    if (isa<zrt::ViewOp, zrt::ArenaViewOp, zrt::BufferRefOp, zrt::YieldOp>(op))
      continue;
    int64_t position = index++;
    SimulatedInstruction instruction;
    instruction.index = position;
    if (auto launch = dyn_cast<zrt::LaunchOp>(op)) {
      unsigned stream = streamOf(launch.getStreamAttr());
      bool onHost = hostStreams[stream];
      double seconds =
          kernelSeconds(launch, onHost, instruction.bytes, instruction.flops);
      instruction.name = launch.getKernel().str();
      instruction.modelFlops = modelFlopsOf(launch, instruction.flops);
      instruction.kind = onHost                  ? SimulatedKind::hostKernel
                         : instruction.flops > 0 ? SimulatedKind::matmul
                                                 : SimulatedKind::kernel;
      instruction.stream = stream;
      issue(std::move(instruction), seconds, &op);
      continue;
    }
    if (auto copy = dyn_cast<zrt::CopyOp>(op)) {
      unsigned stream = streamOf(copy.getStreamAttr());
      bool transfer = false;
      double seconds = copySeconds(copy, hostStreams[stream], transfer);
      instruction.name = "zrt.copy";
      instruction.kind =
          transfer ? SimulatedKind::transfer : SimulatedKind::copy;
      instruction.stream = stream;
      instruction.bytes = bytesOf(copy.getSource());
      issue(std::move(instruction), seconds, &op);
      continue;
    }
    if (auto record = dyn_cast<zrt::RecordOp>(op)) {
      unsigned stream = streamOf(record.getStreamAttr());
      EventState state;
      state.time = streamTime[stream];
      int64_t last = lastOnStream[stream];
      if (!pending.empty() && last >= 0 &&
          instructions[last].kind == SimulatedKind::collective &&
          llvm::any_of(pending,
                       [&](auto &entry) { return entry.first == last; }))
        state.pending = last;
      events[record.getEventAttr().getAttr()] = state;
      continue;
    }
    if (auto wait = dyn_cast<zrt::WaitOp>(op)) {
      unsigned stream = streamOf(wait.getStreamAttr());
      auto it = events.find(wait.getEventAttr().getAttr());
      if (it == events.end())
        continue;
      if (it->second.pending >= 0) {
        // Only the calling thread runs MPI: whoever waits, the collective
        // runs when it is waited for.
        int64_t collective = it->second.pending;
        progress(collective);
        it->second.pending = -1;
        it->second.time = instructions[collective].end;
      }
      blockUntil(stream, it->second.time);
      continue;
    }
    // A collective.
    StringRef kind = op.getName().stripDialect();
    Value input = op.getOperand(0), output = op.getOperand(1);
    int64_t axis = op.getAttrOfType<IntegerAttr>("axis").getInt();
    if (axis >= static_cast<int64_t>(machine.links.size()))
      return op.emitError() << "machine '" << machine.name << "' has links for "
                            << machine.links.size()
                            << " placement axis(es); this collective runs "
                               "over axis "
                            << axis;
    int64_t ranks = placement.getGroupSize(axis);
    unsigned stream = streamOf(op.getAttrOfType<FlatSymbolRefAttr>("stream"));
    instruction.name = kind.str();
    instruction.kind = SimulatedKind::collective;
    instruction.stream = stream;
    instruction.bytes = std::max(bytesOf(input), bytesOf(output));
    double seconds =
        machine.collectiveSeconds(kind, axis, ranks, instruction.bytes);
    if (machine.asyncCollectives) {
      issue(std::move(instruction), seconds, &op);
      continue;
    }
    // The runtime first completes the collective in flight, then starts
    // this one: on the compute stream it runs to completion, elsewhere it
    // runs when the calling thread next waits.
    progress(std::numeric_limits<int64_t>::max());
    if (stream == 0) {
      issue(std::move(instruction), seconds, &op);
      continue;
    }
    double ready = std::max(streamTime[stream], streamTime[0]);
    instruction.start = instruction.end = ready;
    lastOnStream[stream] = instructions.size();
    pending.emplace_back(instructions.size(), ready);
    instructions.push_back(std::move(instruction));
    pendingSeconds.push_back(seconds);
    ops.push_back(&op);
  }
  // The body ends with every stream drained.
  progress(std::numeric_limits<int64_t>::max());
  body.seconds = *llvm::max_element(streamTime);

  body.streamBusy.assign(streamTime.size(), 0.0);
  std::vector<std::pair<double, double>> computeWork, collectives;
  for (const SimulatedInstruction &instruction : instructions) {
    if (instruction.kind == SimulatedKind::wait)
      continue;
    body.streamBusy[instruction.stream] += instruction.seconds();
    if (instruction.kind == SimulatedKind::collective)
      collectives.emplace_back(instruction.start, instruction.end);
    else if (instruction.stream == 0)
      computeWork.emplace_back(instruction.start, instruction.end);
  }
  body.computeBusy = measure(computeWork);
  body.communication = measure(collectives);
  body.exposedCommunication = uncovered(collectives, computeWork);

  // Live device arena bytes: each view from the first instruction touching
  // it to the end of the last.
  llvm::DenseMap<Operation *, std::pair<double, double>> lifetimes;
  for (auto [instruction, op] : llvm::zip(instructions, ops)) {
    if (!op)
      continue;
    for (Value operand : op->getOperands()) {
      auto view = dyn_cast_or_null<zrt::ArenaViewOp>(rootOf(operand));
      if (!view || view.getSpace() != zrt::MemorySpace::device)
        continue;
      auto [it, inserted] = lifetimes.try_emplace(
          view, std::make_pair(instruction.start, instruction.end));
      if (!inserted) {
        it->second.first = std::min(it->second.first, instruction.start);
        it->second.second = std::max(it->second.second, instruction.end);
      }
    }
  }
  // Sorted by time; at one time, releases before allocations, as the
  // planner lets a buffer reuse bytes whose last use just ended.
  std::vector<std::pair<double, int64_t>> changes;
  for (auto &[op, lifetime] : lifetimes) {
    int64_t bytes = cast<zrt::ArenaViewOp>(op).getSizeInBytes();
    changes.emplace_back(lifetime.first, bytes);
    changes.emplace_back(lifetime.second, -bytes);
  }
  llvm::sort(changes);
  int64_t live = 0;
  body.liveArena.emplace_back(0.0, 0);
  for (auto [time, delta] : changes) {
    live += delta;
    body.peakLiveArena = std::max(body.peakLiveArena, live);
    if (body.liveArena.back().first == time)
      body.liveArena.back().second = live;
    else
      body.liveArena.emplace_back(time, live);
  }
  body.instructions = std::move(instructions);
  return success();
}

} // namespace

FailureOr<StepPrediction> simulateProgram(zrt::ProgramOp program,
                                          const MachineModel &machine) {
  StepPrediction prediction;
  prediction.machine = machine;
  prediction.program = program.getSymName().str();
  prediction.ranks = program.getPlacement().getNumRanks();
  llvm::DenseMap<StringAttr, unsigned> streams;
  std::vector<bool> hostStreams;
  for (auto stream : program.getOps<zrt::StreamOp>()) {
    streams[stream.getSymNameAttr()] = hostStreams.size();
    hostStreams.push_back(stream.getSpace() == zrt::MemorySpace::host);
    prediction.streams.push_back(stream.getSymName().str());
  }
  for (auto buffer : program.getOps<zrt::BufferOp>())
    if (buffer.getSpace() == zrt::MemorySpace::device)
      prediction.devicePersistentBytes +=
          buffer.getMemRefType().getNumElements() *
          getElementBytes(buffer.getMemRefType().getElementType());
  prediction.deviceArenaBytes = program.getArenaBytes(zrt::MemorySpace::device);
  // The tokens: of the integer inputs, those that index an embedding or
  // are a loss's labels (not, say, an integer mask) where there are any;
  // the largest of them, the first of equals.
  std::pair<bool, int64_t> best = {false, 0};
  for (auto buffer : program.getOps<zrt::BufferOp>()) {
    MemRefType type = buffer.getMemRefType();
    if (buffer.getRole() != zrt::BufferRole::input ||
        !isa<IntegerType>(type.getElementType()))
      continue;
    std::pair<bool, int64_t> rank = {
        buffer->hasAttr(zrt::ZrtDialect::getIndexOfAttrName()),
        type.getNumElements()};
    if (rank > best) {
      best = rank;
      prediction.tokens = type.getNumElements() * program.getMicroSteps();
      prediction.tokensInput = buffer.getSymName().str();
    }
  }
  prediction.streamBusy.assign(hostStreams.size(), 0.0);
  for (auto step : program.getOps<zrt::StepOp>()) {
    SimulatedBody body;
    body.kind = zrt::stringifyStepKind(step.getKind()).str();
    body.repeat =
        step.getKind() == zrt::StepKind::micro ? program.getMicroSteps() : 1;
    BodySimulator simulator(machine, program.getPlacement(), streams,
                            hostStreams);
    if (failed(simulator.run(step, body)))
      return failure();
    double repeat = static_cast<double>(body.repeat);
    prediction.stepSeconds += repeat * body.seconds;
    prediction.computeBusy += repeat * body.computeBusy;
    prediction.communication += repeat * body.communication;
    prediction.exposedCommunication += repeat * body.exposedCommunication;
    for (auto [total, busy] : llvm::zip(prediction.streamBusy, body.streamBusy))
      total += repeat * busy;
    for (const SimulatedInstruction &instruction : body.instructions) {
      prediction.modelFlops += repeat * instruction.modelFlops;
      prediction.recomputeFlops +=
          repeat * (instruction.flops - instruction.modelFlops);
    }
    prediction.bodies.push_back(std::move(body));
  }
  return prediction;
}

StringRef stringifySimulatedKind(SimulatedKind kind) {
  switch (kind) {
  case SimulatedKind::matmul:
    return "matmul";
  case SimulatedKind::kernel:
    return "kernel";
  case SimulatedKind::copy:
    return "copy";
  case SimulatedKind::transfer:
    return "transfer";
  case SimulatedKind::hostKernel:
    return "host kernel";
  case SimulatedKind::collective:
    return "collective";
  case SimulatedKind::wait:
    return "wait";
  }
  return "kernel";
}

double getTokensPerSecond(const StepPrediction &prediction) {
  if (prediction.tokens == 0 || prediction.stepSeconds <= 0)
    return 0;
  return static_cast<double>(prediction.tokens) / prediction.stepSeconds;
}

double getModelFlopsUtilization(const StepPrediction &prediction) {
  if (prediction.machine.peakFlops <= 0 || prediction.stepSeconds <= 0)
    return 0;
  return prediction.modelFlops / prediction.stepSeconds /
         prediction.machine.peakFlops;
}

} // namespace zero
