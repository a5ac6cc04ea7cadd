//===- Launch.cpp - Which launcher started this rank ----------------------===//

#include "zero/runtime/Launch.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <vector>

namespace zero::rt {

namespace {

/// One launcher's variables; an empty name is one it does not set.
struct LauncherVariables {
  const char *launcher;
  const char *rank;
  const char *worldSize;
  const char *localRank;
  const char *localSize;
};

// The order they are tried in. The MPI launchers first (Open MPI's mpirun;
// MPICH's and Intel MPI's PMI): mpirun run inside a Slurm
// allocation or a torchrun environment describes its own processes, not
// theirs. torchrun before Slurm, for the same reason inside an allocation.
// Slurm's step variables, not SLURM_NTASKS: a batch script's process is
// not one of the step's tasks.
constexpr LauncherVariables kLaunchers[] = {
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"Slurm", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", ""},
    {"PMIx", "PMIX_RANK", "", "", ""},
};

const char *variable(const char *name) {
  return *name ? std::getenv(name) : nullptr;
}

absl::StatusOr<std::optional<int>> number(const char *name, int lowest) {
  const char *text = variable(name);
  if (!text)
    return std::optional<int>();
  int value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < lowest)
    return absl::InvalidArgumentError(absl::StrCat(
        "the launcher's ", name, "='", text, "' is not ",
        lowest == 0 ? "a rank (0 or more)" : "a number of ranks (1 or more)"));
  return std::optional<int>(value);
}

/// The step's tasks on this node (SLURM_NODEID) from srun's
/// SLURM_STEP_TASKS_PER_NODE ("4", "2(x3),1": counts per node, run-length
/// encoded), or nothing where srun did not set them.
absl::StatusOr<std::optional<int>> slurmTasksOnThisNode() {
  const char *text = std::getenv("SLURM_STEP_TASKS_PER_NODE");
  if (!text)
    return std::optional<int>();
  absl::StatusOr<std::optional<int>> node = number("SLURM_NODEID", 0);
  if (!node.ok())
    return node.status();
  int wanted = node->value_or(0), first = 0;
  for (absl::string_view entry : absl::StrSplit(text, ',')) {
    int count = 0, repeat = 1;
    std::vector<absl::string_view> parts = absl::StrSplit(entry, "(x");
    if (parts.empty() || parts.size() > 2 ||
        !absl::SimpleAtoi(parts[0], &count) || count < 1 ||
        (parts.size() == 2 &&
         (!absl::ConsumeSuffix(&parts[1], ")") ||
          !absl::SimpleAtoi(parts[1], &repeat) || repeat < 1)))
      return absl::InvalidArgumentError(
          absl::StrCat("the launcher's SLURM_STEP_TASKS_PER_NODE='", text,
                       "' is not a list of task counts such as 2(x3),1"));
    if (wanted < first + repeat)
      return std::optional<int>(count);
    first += repeat;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("the launcher's SLURM_NODEID=", wanted,
                   " has no entry in SLURM_STEP_TASKS_PER_NODE='", text, "'"));
}

} // namespace

absl::StatusOr<Launch> resolveLaunch() {
  for (const LauncherVariables &vars : kLaunchers) {
    // A launcher counts where it set both its rank and its size (PMIx:
    // its rank).
    if (!variable(vars.rank) || (*vars.worldSize && !variable(vars.worldSize)))
      continue;
    Launch launch;
    launch.launcher = vars.launcher;
    std::vector<std::string> read;
    absl::StatusOr<std::optional<int>> rank = number(vars.rank, 0);
    if (!rank.ok())
      return rank.status();
    launch.rank = **rank;
    read.push_back(vars.rank);
    launch.worldSize = 0;
    if (*vars.worldSize) {
      absl::StatusOr<std::optional<int>> size = number(vars.worldSize, 1);
      if (!size.ok())
        return size.status();
      launch.worldSize = **size;
      read.push_back(vars.worldSize);
      if (launch.rank >= launch.worldSize)
        return absl::InvalidArgumentError(absl::StrCat(
            "the launcher's ", vars.rank, "=", launch.rank,
            " is not below its ", vars.worldSize, "=", launch.worldSize));
    }
    launch.localRank = launch.rank;
    launch.localSize = launch.worldSize ? launch.worldSize : 1;
    absl::StatusOr<std::optional<int>> localRank = number(vars.localRank, 0);
    if (!localRank.ok())
      return localRank.status();
    if (*localRank) {
      launch.localRank = **localRank;
      read.push_back(vars.localRank);
    }
    absl::StatusOr<std::optional<int>> localSize = number(vars.localSize, 1);
    if (!localSize.ok())
      return localSize.status();
    if (*localSize) {
      launch.localSize = **localSize;
      read.push_back(vars.localSize);
    } else if (std::string(vars.launcher) == "Slurm") {
      // Slurm says how many of the step's tasks each node runs.
      absl::StatusOr<std::optional<int>> perNode = slurmTasksOnThisNode();
      if (!perNode.ok())
        return perNode.status();
      if (*perNode) {
        launch.localSize = **perNode;
        read.push_back("SLURM_STEP_TASKS_PER_NODE");
      }
    }
    for (size_t i = 0; i < read.size(); ++i)
      absl::StrAppend(&launch.variables, i ? ", " : "", read[i]);
    return launch;
  }
  return Launch();
}

int ranksOnThisNode(int worldSize) {
  absl::StatusOr<Launch> launch = resolveLaunch();
  return launch.ok() && launch->launcher != "none"
             ? std::max(1, launch->localSize)
             : std::max(1, worldSize);
}

std::string describeLaunch(const Launch &launch) {
  if (launch.launcher == "none")
    return "none: one process started by hand (rank 0 of 1); zero-run -n N "
           "and python -m zero.run -n N start N under mpirun";
  return absl::StrCat(launch.launcher, ": rank ", launch.rank,
                      launch.worldSize
                          ? absl::StrCat(" of ", launch.worldSize)
                          : std::string(" (the job's size is MPI's)"),
                      ", local rank ", launch.localRank, " of ",
                      launch.localSize, " (", launch.variables, ")");
}

absl::Status checkLaunchAgainstMpi(const Launch &launch, int mpiRank,
                                   int mpiSize) {
  if (launch.launcher == "none" ||
      ((launch.worldSize == 0 || launch.worldSize == mpiSize) &&
       launch.rank == mpiRank))
    return absl::OkStatus();
  std::string instead;
  if (launch.launcher == "torchrun")
    instead = absl::StrCat(
        "torchrun starts processes but not MPI, through which our ranks "
        "talk; start the job with `python -m zero.run -n ",
        launch.worldSize, " train.py` (or `mpirun -n ", launch.worldSize,
        " python train.py`; `zero-run -n ", launch.worldSize,
        "` for zero-run) instead");
  else if (launch.launcher == "Slurm")
    instead = absl::StrCat(
        "this MPI does not take its ranks from Slurm here: run `srun "
        "--mpi=pmix ...` where Slurm has PMIx (`srun --mpi=list`), or `mpirun "
        "-n ",
        launch.worldSize, " ...` inside the allocation");
  else
    instead = "start the job with mpirun";
  return absl::FailedPreconditionError(
      absl::StrCat("this process was started by ", describeLaunch(launch),
                   ", but MPI joined it into a world of ", mpiSize, " as rank ",
                   mpiRank, ": each process would train alone. ", instead));
}

} // namespace zero::rt
