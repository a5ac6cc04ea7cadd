//===- ProfileTable.cpp - A measured step beside its prediction -----------===//
//
// The rows are the program's instructions in the simulation's numbering,
// which is the runtime's (launches, copies, collectives, records and
// waits of each body in program order). Records and waits take no time of
// their own: a stream's blocked time shows as its idle time instead.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/ProfileTable.h"

#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

using namespace mlir;

namespace zero {
namespace {

/// The instructions of each body in the runtime's numbering.
std::vector<std::vector<Operation *>>
numberInstructions(zrt::ProgramOp program) {
  std::vector<std::vector<Operation *>> bodies;
  for (auto step : program.getOps<zrt::StepOp>()) {
    std::vector<Operation *> &body = bodies.emplace_back();
    for (Operation &op : step.getBody().front())
      if (!isa<zrt::ViewOp, zrt::ArenaViewOp, zrt::BufferRefOp, zrt::YieldOp>(
              op))
        body.push_back(&op);
  }
  return bodies;
}

std::string typeText(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref)
    return "?";
  std::string text;
  llvm::raw_string_ostream os(text);
  for (int64_t extent : memref.getShape())
    os << extent << "x";
  os << memref.getElementType();
  return text;
}

/// `ins -> outs` of a launch; every operand of a copy or collective, the
/// source first.
std::string operandsText(Operation *op) {
  std::string text;
  auto list = [&](ValueRange values) {
    for (auto [index, value] : llvm::enumerate(values))
      text += (index ? ", " : "") + typeText(value.getType());
  };
  if (auto launch = dyn_cast<zrt::LaunchOp>(op)) {
    list(launch.getIns());
    text += " -> ";
    list(launch.getOuts());
  } else if (op->getNumOperands() >= 2) {
    text = typeText(op->getOperand(0).getType()) + " -> " +
           typeText(op->getOperand(1).getType());
  }
  return text;
}

/// The persistent buffer an instruction is about: the first state buffer
/// (a parameter, its master, slot or gradient) it touches, else the first
/// input or output.
std::string bufferOf(Operation *op) {
  std::string io;
  for (Value operand : op->getOperands()) {
    while (auto view = operand.getDefiningOp<zrt::ViewOp>())
      operand = view.getSource();
    auto ref = operand.getDefiningOp<zrt::BufferRefOp>();
    if (!ref)
      continue;
    auto buffer = SymbolTable::lookupNearestSymbolFrom<zrt::BufferOp>(
        ref, ref.getBufferAttr());
    bool state = buffer && buffer.getRole() != zrt::BufferRole::input &&
                 buffer.getRole() != zrt::BufferRole::output;
    if (state)
      return ref.getBuffer().str();
    if (io.empty())
      io = ref.getBuffer().str();
  }
  return io;
}

} // namespace

llvm::Expected<ProfileTable>
buildProfileTable(zrt::ProgramOp program, const StepPrediction &prediction,
                  llvm::ArrayRef<MeasuredSlice> slices, int64_t firstStep) {
  ProfileTable table;
  table.machine = prediction.machine.name;
  table.program = prediction.program;
  table.predictedStep = prediction.stepSeconds;
  std::vector<std::vector<Operation *>> ops = numberInstructions(program);
  if (ops.size() != prediction.bodies.size())
    return llvm::createStringError(
        "the prediction has " + std::to_string(prediction.bodies.size()) +
        " bodies, the program " + std::to_string(ops.size()));

  // Every instruction that takes time gets a row, timed or not.
  std::map<std::pair<int64_t, int64_t>, size_t> rowOf;
  for (auto [bodyIndex, body] : llvm::enumerate(prediction.bodies)) {
    double repeat = static_cast<double>(body.repeat);
    double computeEnd = 0;
    for (const SimulatedInstruction &instruction : body.instructions) {
      if (instruction.stream == 0) {
        computeEnd = std::max(computeEnd, instruction.end);
        (instruction.kind == SimulatedKind::wait
             ? table.predictedComputeBlocked
             : table.predictedComputeWork) += repeat * instruction.seconds();
      }
      if (instruction.kind == SimulatedKind::wait || instruction.index < 0)
        continue;
      if (instruction.index >= static_cast<int64_t>(ops[bodyIndex].size()))
        return llvm::createStringError("the prediction's instruction " +
                                       std::to_string(instruction.index) +
                                       " of body " + std::to_string(bodyIndex) +
                                       " is not in the program");
      Operation *op = ops[bodyIndex][instruction.index];
      ProfileRow row;
      row.body = static_cast<int64_t>(bodyIndex);
      row.bodyKind = body.kind;
      row.index = instruction.index;
      row.name = instruction.name;
      row.category = stringifySimulatedKind(instruction.kind).str();
      row.stream = prediction.streams[instruction.stream];
      row.buffer = bufferOf(op);
      row.operands = operandsText(op);
      row.bytes = instruction.bytes;
      row.flops = instruction.flops;
      row.launchesPerStep = repeat;
      row.predictedSeconds = instruction.seconds();
      rowOf[{row.body, row.index}] = table.rows.size();
      table.rows.push_back(std::move(row));
    }
    table.predictedAfterCompute += repeat * (body.seconds - computeEnd);
  }

  // The steps counted: all after the first where there are several.
  std::set<int64_t> stepsSeen;
  for (const MeasuredSlice &slice : slices)
    stepsSeen.insert(slice.step);
  int64_t first = firstStep;
  if (llvm::none_of(stepsSeen, [&](int64_t step) { return step >= first; }))
    first = std::numeric_limits<int64_t>::min();
  std::map<int64_t, std::pair<double, double>> spans;
  std::vector<double> total(table.rows.size(), 0.0);
  std::vector<int64_t> count(table.rows.size(), 0);
  for (const MeasuredSlice &slice : slices) {
    if (slice.step < first)
      continue;
    if (slice.body < 0 || slice.body >= static_cast<int64_t>(ops.size()) ||
        slice.instruction < 0 ||
        slice.instruction >= static_cast<int64_t>(ops[slice.body].size()))
      return llvm::createStringError("a timed slice names instruction " +
                                     std::to_string(slice.instruction) +
                                     " of body " + std::to_string(slice.body) +
                                     ", which the program does not have");
    // A timed wait (the CPU backend times those that may block) is its
    // stream's idle time: it has no row.
    auto it = rowOf.find({slice.body, slice.instruction});
    if (it != rowOf.end()) {
      total[it->second] += std::max(0.0, slice.end - slice.begin);
      ++count[it->second];
    } else if (!isa<zrt::WaitOp, zrt::RecordOp>(
                   ops[slice.body][slice.instruction])) {
      return llvm::createStringError("a timed slice names instruction " +
                                     std::to_string(slice.instruction) +
                                     " of body " + std::to_string(slice.body) +
                                     ", which the prediction does not time");
    }
    auto [span, inserted] =
        spans.try_emplace(slice.step, std::make_pair(slice.begin, slice.end));
    if (!inserted) {
      span->second.first = std::min(span->second.first, slice.begin);
      span->second.second = std::max(span->second.second, slice.end);
    }
  }
  table.steps = static_cast<int64_t>(spans.size());
  if (table.steps == 0)
    return table;
  table.firstStep = spans.begin()->first;
  table.lastStep = spans.rbegin()->first;
  double steps = static_cast<double>(table.steps);
  for (auto &[step, span] : spans)
    table.measuredStep += (span.second - span.first) / steps;

  std::map<std::string, size_t> familyOf;
  std::map<std::string, size_t> streamOf;
  for (const std::string &name : prediction.streams) {
    streamOf[name] = table.streams.size();
    table.streams.push_back({name, 0, 0, 0, 0});
  }
  for (auto [index, row] : llvm::enumerate(table.rows)) {
    row.measured = count[index] > 0;
    if (row.measured)
      row.measuredSeconds = total[index] / static_cast<double>(count[index]);
    double measuredPerStep = total[index] / steps;
    double predictedPerStep = row.predictedSeconds * row.launchesPerStep;
    auto [family, inserted] =
        familyOf.try_emplace(row.name, table.families.size());
    if (inserted)
      table.families.push_back({row.name, 0, 0, 0, 0, 0});
    ProfileFamily &sum = table.families[family->second];
    sum.launchesPerStep += row.launchesPerStep;
    sum.measuredSeconds += measuredPerStep;
    sum.predictedSeconds += predictedPerStep;
    sum.bytes += row.bytes * row.launchesPerStep;
    sum.flops += row.flops * row.launchesPerStep;
    ProfileStream &stream = table.streams[streamOf[row.stream]];
    stream.measuredBusy += measuredPerStep;
    stream.predictedBusy += predictedPerStep;
  }
  for (ProfileStream &stream : table.streams) {
    stream.measuredIdle =
        std::max(0.0, table.measuredStep - stream.measuredBusy);
    stream.predictedIdle =
        std::max(0.0, table.predictedStep - stream.predictedBusy);
  }
  llvm::stable_sort(table.families, [](const auto &a, const auto &b) {
    return a.measuredSeconds > b.measuredSeconds;
  });
  return table;
}

namespace {

std::string ms(double seconds) {
  return llvm::formatv("{0:F3}", seconds * 1e3).str();
}
std::string us(double seconds) {
  return llvm::formatv("{0:F1}", seconds * 1e6).str();
}
std::string ratio(double measured, double predicted) {
  if (predicted <= 0 || measured <= 0)
    return "-";
  return llvm::formatv("{0:F2}", measured / predicted).str();
}
/// Bytes (or FLOPs) per second in units of 1e9 (or 1e12).
std::string rate(double amount, double seconds, double unit) {
  if (amount <= 0 || seconds <= 0)
    return "-";
  return llvm::formatv("{0:F2}", amount / seconds / unit).str();
}

} // namespace

void printProfileTable(const ProfileTable &table, llvm::raw_ostream &os,
                       size_t maxRows) {
  os << "# Profile of " << table.program << " on rank 0\n\n";
  if (table.steps == 0) {
    os << "No instruction was timed.\n";
    return;
  }
  os << "Steps " << table.firstStep << "-" << table.lastStep << " ("
     << table.steps << " timed), predicted on machine '" << table.machine
     << "'. Times are per optimizer step unless said per launch; ratio is "
        "measured / predicted.\n\n";
  os << "- step: measured " << ms(table.measuredStep) << " ms, predicted "
     << ms(table.predictedStep) << " ms (ratio "
     << ratio(table.measuredStep, table.predictedStep) << ")\n";
  os << "- the predicted step on @compute: kernels and copies "
     << ms(table.predictedComputeWork) << " ms + blocked "
     << ms(table.predictedComputeBlocked) << " ms + after its last "
     << ms(table.predictedAfterCompute) << " ms = "
     << ms(table.predictedComputeWork + table.predictedComputeBlocked +
           table.predictedAfterCompute)
     << " ms\n\n";

  os << "## By kernel family\n\n";
  os << "| family | launches | measured ms | predicted ms | ratio | share | "
        "GB/s | TFLOP/s |\n|---|---|---|---|---|---|---|---|\n";
  double busy = 0;
  for (const ProfileFamily &family : table.families)
    busy += family.measuredSeconds;
  for (const ProfileFamily &family : table.families)
    os << "| " << family.name << " | "
       << llvm::format("%g", family.launchesPerStep) << " | "
       << ms(family.measuredSeconds) << " | " << ms(family.predictedSeconds)
       << " | " << ratio(family.measuredSeconds, family.predictedSeconds)
       << " | "
       << llvm::formatv("{0:F1}%",
                        busy > 0 ? 100 * family.measuredSeconds / busy : 0.0)
       << " | " << rate(family.bytes, family.measuredSeconds, 1e9) << " | "
       << rate(family.flops, family.measuredSeconds, 1e12) << " |\n";

  os << "\n## By stream\n\n";
  os << "| stream | busy measured ms | busy predicted ms | idle measured ms "
        "| idle predicted ms |\n|---|---|---|---|---|\n";
  for (const ProfileStream &stream : table.streams)
    os << "| @" << stream.name << " | " << ms(stream.measuredBusy) << " | "
       << ms(stream.predictedBusy) << " | " << ms(stream.measuredIdle) << " | "
       << ms(stream.predictedIdle) << " |\n";

  std::vector<const ProfileRow *> rows;
  for (const ProfileRow &row : table.rows)
    rows.push_back(&row);
  if (maxRows > 0 && rows.size() > maxRows) {
    llvm::stable_sort(rows, [](const ProfileRow *a, const ProfileRow *b) {
      return a->measuredSeconds * a->launchesPerStep >
             b->measuredSeconds * b->launchesPerStep;
    });
    rows.resize(maxRows);
    os << "\n## The " << maxRows << " longest instructions (of "
       << table.rows.size() << ")\n\n";
  } else {
    os << "\n## By instruction\n\n";
  }
  os << "| body | # | instruction | stream | buffer | operands | bytes | FLOPs "
        "| launches | measured us | predicted us | ratio | GB/s | TFLOP/s "
        "|\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const ProfileRow *row : rows)
    os << "| " << row->bodyKind << " | " << row->index << " | " << row->name
       << " | @" << row->stream << " | " << row->buffer << " | "
       << row->operands << " | " << llvm::format("%.0f", row->bytes) << " | "
       << llvm::format("%.0f", row->flops) << " | "
       << llvm::format("%g", row->launchesPerStep) << " | "
       << (row->measured ? us(row->measuredSeconds) : "not timed") << " | "
       << us(row->predictedSeconds) << " | "
       << ratio(row->measuredSeconds, row->predictedSeconds) << " | "
       << rate(row->bytes, row->measuredSeconds, 1e9) << " | "
       << rate(row->flops, row->measuredSeconds, 1e12) << " |\n";
}

llvm::json::Object profileTableToJson(const ProfileTable &table) {
  llvm::json::Array rows, families, streams;
  for (const ProfileRow &row : table.rows)
    rows.push_back(
        llvm::json::Object{{"body", row.body},
                           {"body_kind", row.bodyKind},
                           {"index", row.index},
                           {"name", row.name},
                           {"category", row.category},
                           {"stream", row.stream},
                           {"buffer", row.buffer},
                           {"operands", row.operands},
                           {"bytes", row.bytes},
                           {"flops", row.flops},
                           {"launches_per_step", row.launchesPerStep},
                           {"measured", row.measured},
                           {"measured_seconds", row.measuredSeconds},
                           {"predicted_seconds", row.predictedSeconds}});
  for (const ProfileFamily &family : table.families)
    families.push_back(
        llvm::json::Object{{"name", family.name},
                           {"launches_per_step", family.launchesPerStep},
                           {"measured_seconds", family.measuredSeconds},
                           {"predicted_seconds", family.predictedSeconds},
                           {"bytes", family.bytes},
                           {"flops", family.flops}});
  for (const ProfileStream &stream : table.streams)
    streams.push_back(
        llvm::json::Object{{"name", stream.name},
                           {"measured_busy_seconds", stream.measuredBusy},
                           {"predicted_busy_seconds", stream.predictedBusy},
                           {"measured_idle_seconds", stream.measuredIdle},
                           {"predicted_idle_seconds", stream.predictedIdle}});
  return llvm::json::Object{
      {"machine", table.machine},
      {"program", table.program},
      {"first_step", table.firstStep},
      {"last_step", table.lastStep},
      {"steps", table.steps},
      {"measured_step_seconds", table.measuredStep},
      {"predicted_step_seconds", table.predictedStep},
      {"predicted_compute_work_seconds", table.predictedComputeWork},
      {"predicted_compute_blocked_seconds", table.predictedComputeBlocked},
      {"predicted_after_compute_seconds", table.predictedAfterCompute},
      {"families", std::move(families)},
      {"streams", std::move(streams)},
      {"rows", std::move(rows)}};
}

} // namespace zero
