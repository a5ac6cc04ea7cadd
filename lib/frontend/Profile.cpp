//===- Profile.cpp - A run's measured step, as a trace and a table --------===//

#include "zero/frontend/Profile.h"

#include "zero/analysis/MachineModel.h"
#include "zero/analysis/ProfileTable.h"
#include "zero/analysis/StepSimulation.h"
#include "zero/support/Status.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <limits>

using namespace zero;
using namespace zero::rt;

namespace {

/// Events as rows of ProfileEvent::kFields numbers, for one all-gather.
std::vector<int64_t> flatten(const std::vector<ProfileEvent> &events,
                             size_t rows) {
  std::vector<int64_t> flat(rows * ProfileEvent::kFields, -1);
  for (size_t i = 0; i < events.size(); ++i) {
    const ProfileEvent &e = events[i];
    int64_t *row = &flat[i * ProfileEvent::kFields];
    row[0] = e.body;
    row[1] = e.instruction;
    row[2] = e.stream;
    row[3] = e.step;
    row[4] = e.beginNs;
    row[5] = e.endNs;
  }
  return flat;
}

std::string category(const StepInstruction &instruction) {
  if (instruction.isCollective())
    return "collective";
  switch (instruction.kind) {
  case StepInstruction::Kind::copy:
    return "copy";
  case StepInstruction::Kind::wait:
    return "wait";
  default:
    return "kernel";
  }
}

absl::Status writeTrace(Communicator &comm, const Executor &executor,
                        const std::vector<ProfileEvent> &events,
                        const std::string &path) {
  // Ranks may have timed different numbers of instructions: pad to the
  // largest count, rows of -1 are padding.
  int64_t count = static_cast<int64_t>(events.size()), most = 0;
  std::vector<int64_t> counts(comm.size());
  ZERO_RETURN_IF_ERROR(comm.allGather(&count, counts.data(), 1, DType::i64));
  most = *std::max_element(counts.begin(), counts.end());
  std::vector<int64_t> local = flatten(events, most);
  std::vector<int64_t> all(local.size() * comm.size());
  ZERO_RETURN_IF_ERROR(
      comm.allGather(local.data(), all.data(), local.size(), DType::i64));
  if (comm.rank() != 0)
    return absl::OkStatus();

  int64_t origin = std::numeric_limits<int64_t>::max();
  for (size_t row = 0; row * ProfileEvent::kFields < all.size(); ++row)
    if (all[row * ProfileEvent::kFields] >= 0)
      origin = std::min(origin, all[row * ProfileEvent::kFields + 4]);

  const std::vector<StepBody> &bodies = executor.stepBodies();
  const std::vector<std::string> &streams = executor.streamNames();
  llvm::json::Array trace;
  for (int rank = 0; rank < comm.size(); ++rank) {
    trace.push_back(llvm::json::Object{
        {"name", "process_name"},
        {"ph", "M"},
        {"pid", rank},
        {"args", llvm::json::Object{{"name", absl::StrCat("rank ", rank)}}}});
    for (size_t stream = 0; stream < streams.size(); ++stream)
      trace.push_back(llvm::json::Object{
          {"name", "thread_name"},
          {"ph", "M"},
          {"pid", rank},
          {"tid", static_cast<int64_t>(stream)},
          {"args", llvm::json::Object{{"name", "@" + streams[stream]}}}});
  }
  for (int rank = 0; rank < comm.size(); ++rank)
    for (int64_t i = 0; i < most; ++i) {
      const int64_t *row = &all[(rank * most + i) * ProfileEvent::kFields];
      if (row[0] < 0)
        continue;
      if (row[0] >= static_cast<int64_t>(bodies.size()) ||
          row[1] >= static_cast<int64_t>(bodies[row[0]].size()))
        return absl::InternalError(absl::StrCat(
            "--profile: rank ", rank, " timed instruction ", row[1],
            " of body ", row[0], ", which rank 0's program does not have"));
      const StepInstruction &instruction = bodies[row[0]][row[1]];
      trace.push_back(llvm::json::Object{
          {"name", instruction.label},
          {"cat", category(instruction)},
          {"ph", "X"},
          {"pid", rank},
          {"tid", row[2]},
          {"ts", static_cast<double>(row[4] - origin) / 1e3},
          {"dur", static_cast<double>(row[5] - row[4]) / 1e3},
          {"args", llvm::json::Object{{"step", row[3]},
                                      {"body", row[0]},
                                      {"instruction", row[1]}}}});
    }

  std::error_code error;
  llvm::raw_fd_ostream os(path, error, llvm::sys::fs::OF_Text);
  if (error)
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write ", path, ": ", error.message()));
  os << llvm::formatv("{0}", llvm::json::Value(llvm::json::Object{
                                 {"traceEvents", std::move(trace)},
                                 {"displayTimeUnit", "ms"}}));
  os << "\n";
  return absl::OkStatus();
}

/// The prediction the table is held against, or why there is none.
absl::StatusOr<StepPrediction>
predict(zrt::ProgramOp program, const frontend::ProfileOutputs &outputs) {
  std::string diagnostic;
  mlir::ScopedDiagnosticHandler capture(
      program.getContext(), [&](mlir::Diagnostic &d) {
        absl::StrAppend(&diagnostic, diagnostic.empty() ? "" : "; ", d.str());
        return mlir::success();
      });
  mlir::FailureOr<MachineModel> machine =
      loadMachineModel(outputs.machine, program.getLoc());
  if (mlir::failed(machine))
    return absl::InvalidArgumentError(
        absl::StrCat("--profile-machine: ", diagnostic));
  mlir::FailureOr<StepPrediction> prediction =
      simulateProgram(program, *machine);
  if (mlir::failed(prediction))
    return absl::InvalidArgumentError(absl::StrCat(
        "--profile-table cannot predict the step on machine '", outputs.machine,
        "': ", diagnostic, " (name another with --profile-machine)"));
  return std::move(*prediction);
}

/// Rank 0's table: its own events against the prediction on `outputs`'
/// machine.
absl::Status writeTable(zrt::ProgramOp program,
                        const std::vector<ProfileEvent> &events,
                        const frontend::ProfileOutputs &outputs) {
  ZERO_ASSIGN_OR_RETURN(StepPrediction prediction, predict(program, outputs));
  std::vector<MeasuredSlice> slices;
  slices.reserve(events.size());
  for (const ProfileEvent &event : events)
    slices.push_back({event.body, event.instruction, event.step,
                      static_cast<double>(event.beginNs) * 1e-9,
                      static_cast<double>(event.endNs) * 1e-9});
  llvm::Expected<ProfileTable> table =
      buildProfileTable(program, prediction, slices, outputs.firstStep);
  if (!table)
    return absl::InternalError(
        absl::StrCat("--profile-table: ", llvm::toString(table.takeError())));
  std::error_code error;
  llvm::raw_fd_ostream os(outputs.table, error, llvm::sys::fs::OF_Text);
  if (error)
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write ", outputs.table, ": ", error.message()));
  if (absl::EndsWith(outputs.table, ".json"))
    os << llvm::formatv("{0:2}", llvm::json::Value(profileTableToJson(*table)))
       << "\n";
  else
    printProfileTable(*table, os);
  return absl::OkStatus();
}

} // namespace

absl::Status frontend::writeProfile(Communicator &comm,
                                    const Executor &executor,
                                    zrt::ProgramOp program,
                                    std::vector<ProfileEvent> events,
                                    const ProfileOutputs &outputs) {
  if (!outputs.trace.empty())
    ZERO_RETURN_IF_ERROR(writeTrace(comm, executor, events, outputs.trace));
  if (!outputs.table.empty() && comm.rank() == 0)
    ZERO_RETURN_IF_ERROR(writeTable(program, events, outputs));
  return absl::OkStatus();
}

absl::Status frontend::checkProfileOutputs(zrt::ProgramOp program,
                                           const ProfileOutputs &outputs) {
  if (outputs.table.empty())
    return absl::OkStatus();
  return predict(program, outputs).status();
}
