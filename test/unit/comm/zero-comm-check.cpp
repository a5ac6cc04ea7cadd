//===- zero-comm-check.cpp - Multi-rank communicator check ----------------===//
//
// Run under mpirun (or alone, as a one-rank singleton):
//   zero-comm-check collectives
//       every collective's values on every rank, in both modes;
//   zero-comm-check exit-early | killed
//       the last rank exits with status 3 / is killed while the others wait
//       in an all_reduce: the job must end, not hang;
//   zero-comm-check timeout [--deterministic]
//       the last rank sleeps past a 1 s timeout: the others report the
//       deadline and end the job;
//   zero-comm-check mismatch
//       ranks disagree on a count: MPI's error comes back as a status;
//   zero-comm-check grid RxS[xT...]
//       one communicator per axis of the placement grid: each axis's group
//       holds the ranks it should, every collective's values on each, two
//       axes' collectives in flight at once waited in opposite orders on
//       different ranks, an axis's ticket waited through the job's
//       communicator, and the axis's traffic counted on the job's too;
//   zero-comm-check bench
//       times all_reduce in both modes.
//
//===----------------------------------------------------------------------===//

#include "CommCheck.h"

#include "absl/strings/str_join.h"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

using namespace zero::rt;

namespace {

std::unique_ptr<Communicator> create(const CommOptions &options) {
  absl::StatusOr<std::unique_ptr<Communicator>> comm =
      createMpiCommunicator(options);
  if (!comm.ok()) {
    std::fprintf(stderr, "zero-comm-check: %s\n",
                 comm.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(comm);
}

/// Agrees on the outcome, so that every rank exits alike, prints it as
/// "zero-comm-check: <what> on N ranks: PASS (...)" and ends MPI.
int finish(check::Checker &checker, std::unique_ptr<Communicator> plain,
           std::unique_ptr<Communicator> deterministic,
           const std::string &what) {
  int64_t totals[2] = {checker.failures(), checker.checks()};
  absl::Status status =
      plain->allReduce(totals, totals, 2, DType::i64, ReduceKind::sum);
  if (!status.ok())
    plain->abortJob(status.message(), 1);
  if (plain->rank() == 0)
    std::printf("zero-comm-check: %s on %d ranks: %s (%lld checks, "
                "%lld failures)\n",
                what.c_str(), plain->size(), totals[0] == 0 ? "PASS" : "FAIL",
                static_cast<long long>(totals[1]),
                static_cast<long long>(totals[0]));
  std::fflush(stdout);
  deterministic.reset();
  plain.reset();
  finalizeMpi();
  return totals[0] == 0 ? 0 : 1;
}

int runCollectives() {
  std::unique_ptr<Communicator> deterministic = create({true, 60});
  std::unique_ptr<Communicator> plain = create({false, 60});
  check::Checker checker(plain->rank());
  check::checkCollectives(checker, *plain, false);
  check::checkCollectives(checker, *deterministic, true);
  return finish(checker, std::move(plain), std::move(deterministic),
                "collectives");
}

/// The grid of "2x4": {2, 4}; empty when malformed.
std::vector<int64_t> parseGrid(const char *text) {
  std::vector<int64_t> grid;
  for (const char *at = text; *at;) {
    char *end = nullptr;
    long extent = std::strtol(at, &end, 10);
    if (end == at || extent < 1 || (*end && *end != 'x'))
      return {};
    grid.push_back(extent);
    at = *end ? end + 1 : end;
  }
  return grid;
}

void checkGrid(check::Checker &checker, Communicator &job,
               const std::vector<int64_t> &grid, bool deterministic) {
  std::string mode = deterministic ? "deterministic" : "non-deterministic";
  absl::StatusOr<std::vector<std::unique_ptr<Communicator>>> axes =
      splitPlacementAxes(job, grid);
  if (!checker.expectOk(axes.status(), mode + " splitPlacementAxes"))
    return;
  std::vector<int64_t> coordinates(grid.size());
  for (int64_t rest = job.rank(), axis = grid.size(); axis-- > 0;) {
    coordinates[axis] = rest % grid[axis];
    rest /= grid[axis];
  }
  // Each axis's group: the job ranks that differ from this one only in
  // that coordinate, in coordinate order.
  std::vector<std::vector<int64_t>> members(grid.size());
  for (size_t axis = 0; axis < grid.size(); ++axis) {
    Communicator &group = *(*axes)[axis];
    std::string what = absl::StrCat(mode, " axis ", axis);
    int64_t stride = 1;
    for (size_t inner = axis + 1; inner < grid.size(); ++inner)
      stride *= grid[inner];
    int64_t first = job.rank() - coordinates[axis] * stride;
    for (int64_t index = 0; index < grid[axis]; ++index)
      members[axis].push_back(first + index * stride);
    checker.expect(
        group.size() == grid[axis] && group.rank() == coordinates[axis],
        absl::StrCat(what, ": rank ", group.rank(), " of ", group.size(),
                     ", expected ", coordinates[axis], " of ", grid[axis]));
    int64_t mine = job.rank();
    std::vector<int64_t> seen(group.size());
    if (checker.expectOk(group.allGather(&mine, seen.data(), 1, DType::i64),
                         what + " membership"))
      checker.expect(seen == members[axis],
                     absl::StrCat(what, " holds job ranks ",
                                  absl::StrJoin(seen, ","), ", expected ",
                                  absl::StrJoin(members[axis], ",")));
    for (int64_t index = 0; index < group.size(); ++index)
      checker.expect(group.jobRank(static_cast<int>(index)) ==
                         members[axis][index],
                     absl::StrCat(what, " names its rank ", index, " job rank ",
                                  group.jobRank(static_cast<int>(index))));
    check::checkCollectives(checker, group, deterministic);
  }
  // Two axes in flight at once, waited in opposite orders on even and odd
  // ranks: each wait must advance the other axis's collective too.
  if (grid.size() >= 2) {
    int64_t values[2] = {job.rank() + 1, job.rank() + 1};
    absl::StatusOr<Communicator::Ticket> first = (*axes)[0]->startAllReduce(
        &values[0], &values[0], 1, DType::i64, ReduceKind::sum);
    absl::StatusOr<Communicator::Ticket> second = (*axes)[1]->startAllReduce(
        &values[1], &values[1], 1, DType::i64, ReduceKind::sum);
    if (checker.expectOk(first.status(), mode + " start on axis 0") &&
        checker.expectOk(second.status(), mode + " start on axis 1")) {
      bool even = job.rank() % 2 == 0;
      checker.expectOk((*axes)[even ? 1 : 0]->wait(even ? *second : *first),
                       mode + " wait on one axis");
      // The other through the job's communicator: the tickets are one
      // sequence (CpuBackend waits on the job's).
      checker.expectOk(job.wait(even ? *first : *second),
                       mode + " wait on the other axis through the job");
      for (int axis = 0; axis < 2; ++axis) {
        int64_t sum = 0;
        for (int64_t member : members[axis])
          sum += member + 1;
        checker.expect(values[axis] == sum,
                       absl::StrCat(mode, " axis ", axis, " sum ", values[axis],
                                    ", expected ", sum));
      }
    }
  }
  // An axis's traffic is its own and the job's, with the axis's group size
  // in the ring factor.
  job.resetTraffic();
  Communicator &last = *axes->back();
  last.resetTraffic();
  std::vector<float> data(100, 1.0f);
  if (checker.expectOk(last.allReduce(data.data(), data.data(), 100, DType::f32,
                                      ReduceKind::sum),
                       mode + " traffic all_reduce")) {
    int64_t ranks = last.size();
    double sent = 2 * static_cast<double>(400) * (ranks - 1) / ranks;
    for (Communicator *counted : {&last, &job}) {
      auto found = counted->traffic().find("all_reduce");
      checker.expect(found != counted->traffic().end() &&
                         found->second.count == 1 &&
                         found->second.bytes == 400 &&
                         found->second.sentBytesPerRank == sent,
                     absl::StrCat(mode, counted == &job ? " job" : " axis",
                                  " traffic of an axis all_reduce"));
    }
  }
  job.resetTraffic();
  checker.expectOk(job.barrier(), mode + " barrier");
}

int runGrid(const char *shape) {
  std::vector<int64_t> grid = parseGrid(shape);
  if (grid.empty()) {
    std::fprintf(stderr, "zero-comm-check: grid: '%s' is not RxS[x...]\n",
                 shape);
    return 2;
  }
  std::unique_ptr<Communicator> plain = create({false, 60});
  std::unique_ptr<Communicator> deterministic = create({true, 60});
  check::Checker checker(plain->rank());
  checkGrid(checker, *plain, grid, false);
  checkGrid(checker, *deterministic, grid, true);
  return finish(checker, std::move(plain), std::move(deterministic),
                absl::StrCat("grid ", shape));
}

/// The last rank fails in `how` while the others wait for it.
int runDeadRank(const char *how) {
  std::unique_ptr<Communicator> comm = create({false, 100});
  int last = comm->size() - 1;
  if (absl::Status status = comm->barrier(); !status.ok())
    comm->abortJob(status.message(), 1);
  if (comm->rank() == last && last > 0) {
    // Let the others enter the all_reduce first.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (std::strcmp(how, "killed") == 0)
      std::raise(SIGKILL);
    std::exit(3);
  }
  float data[256] = {};
  absl::Status status =
      comm->allReduce(data, data, 256, DType::f32, ReduceKind::sum);
  if (!status.ok())
    comm->abortJob(status.message(), 1);
  std::printf("zero-comm-check: rank %d: all_reduce completed\n", comm->rank());
  comm.reset();
  finalizeMpi();
  return 0;
}

int runTimeout(bool deterministic) {
  std::unique_ptr<Communicator> comm = create({deterministic, 1});
  int last = comm->size() - 1;
  if (absl::Status status = comm->barrier(); !status.ok())
    comm->abortJob(status.message(), 1);
  if (comm->rank() == last && last > 0)
    // Longer than the lit test's own timeout: only abortJob ends this.
    std::this_thread::sleep_for(std::chrono::seconds(120));
  float data[1024] = {};
  absl::Status status =
      comm->allReduce(data, data, 1024, DType::f32, ReduceKind::sum);
  if (!status.ok())
    comm->abortJob(status.message(), 2);
  std::printf("zero-comm-check: rank %d: all_reduce completed\n", comm->rank());
  comm.reset();
  finalizeMpi();
  return 0;
}

/// Breaks the SPMD contract on purpose: rank r reduces 64 * (r + 1) bf16
/// elements, so rank 0 receives more than it expects, and MPI's error must
/// come back as a status.
int runMismatch() {
  std::unique_ptr<Communicator> comm = create({false, 20});
  std::vector<uint16_t> data(64 * (comm->rank() + 1), 0);
  absl::Status status = comm->allReduce(data.data(), data.data(),
                                        static_cast<int64_t>(data.size()),
                                        DType::bf16, ReduceKind::sum);
  if (!status.ok())
    comm->abortJob(status.ToString(), 4);
  std::printf("zero-comm-check: rank %d: all_reduce completed\n", comm->rank());
  comm.reset();
  finalizeMpi();
  return 0;
}

/// Times blocking all_reduces (not a test; for judging the fixed-order
/// path's cost against MPI's own).
int runBench() {
  std::unique_ptr<Communicator> deterministic = create({true, 600});
  std::unique_ptr<Communicator> plain = create({false, 600});
  for (int64_t count : {int64_t{1} << 10, int64_t{1} << 20, int64_t{1} << 24})
    for (DType dtype : {DType::f32, DType::bf16})
      for (Communicator *comm : {plain.get(), deterministic.get()}) {
        check::Buffer data(dtype, count);
        int repeats = count >= (int64_t{1} << 24) ? 3 : 20;
        absl::Status status = comm->barrier();
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < repeats && status.ok(); ++i)
          status = comm->allReduce(data.data(), data.data(), count, dtype,
                                   ReduceKind::sum);
        double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count() /
                         repeats;
        if (!status.ok())
          comm->abortJob(status.message(), 1);
        if (comm->rank() == 0)
          std::printf("all_reduce %s %9lld elements %-17s %10.3f ms\n",
                      std::string(dtypeName(dtype)).c_str(),
                      static_cast<long long>(count),
                      comm == plain.get() ? "plain" : "deterministic",
                      seconds * 1e3);
      }
  deterministic.reset();
  plain.reset();
  finalizeMpi();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  const char *scenario = argc > 1 ? argv[1] : "";
  bool deterministic = argc > 2 && std::strcmp(argv[2], "--deterministic") == 0;
  if (std::strcmp(scenario, "collectives") == 0)
    return runCollectives();
  if (std::strcmp(scenario, "exit-early") == 0 ||
      std::strcmp(scenario, "killed") == 0)
    return runDeadRank(scenario);
  if (std::strcmp(scenario, "timeout") == 0)
    return runTimeout(deterministic);
  if (std::strcmp(scenario, "mismatch") == 0)
    return runMismatch();
  if (std::strcmp(scenario, "bench") == 0)
    return runBench();
  if (std::strcmp(scenario, "grid") == 0 && argc > 2)
    return runGrid(argv[2]);
  std::fprintf(stderr,
               "usage: zero-comm-check collectives | exit-early | "
               "killed | timeout [--deterministic] | mismatch | grid RxS | "
               "bench\n");
  return 2;
}
