//===- RunProfile.cpp - zero-run --profile: a Chrome trace of the step ----===//

#include "RunProfile.h"

#include "absl/strings/str_cat.h"
#include "zero/support/Status.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <limits>

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

} // namespace

absl::Status zero::rt::writeProfile(Communicator &comm,
                                    const Executor &executor,
                                    std::vector<ProfileEvent> events,
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
