//===- Launch.h - Which launcher started this rank --------------*- C++ -*-===//
//
// A rank learns where it stands in the job from the launcher that started
// it: Open MPI's mpirun, torchrun, Slurm's srun or a PMIx server. The ranks
// talk through MPI, so the launcher's word is held against MPI's world when
// the communicator is made: a job whose processes MPI did not join (torchrun,
// or srun with an MPI that cannot take its ranks from Slurm) is refused with
// what to run instead, rather than training N copies of a one-rank job. The
// order the environment is read in is docs/runtime.md's "Launchers".
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_LAUNCH_H
#define ZERO_RUNTIME_LAUNCH_H

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <string>

namespace zero::rt {

/// This process's place in the job, as its launcher gave it.
struct Launch {
  /// "Open MPI", "PMI", "torchrun", "Slurm", "PMIx", or "none" (started by
  /// hand: one rank, or the first of a job zero-run -n relaunches under
  /// mpirun).
  std::string launcher = "none";
  /// The variables it was read from.
  std::string variables;
  int rank = 0;
  /// The job's processes; 0 where the launcher does not say (PMIx alone:
  /// MPI's world is the job).
  int worldSize = 1;
  /// Index among the ranks of this node, and how many there are; the local
  /// rank picks this rank's GPU.
  int localRank = 0;
  int localSize = 1;
};

/// The launch the environment describes, read in this order: Open MPI
/// (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE), PMI (MPICH's
/// and Intel MPI's PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS),
/// torchrun
/// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE), Slurm's srun
/// (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID, and the node's share
/// of SLURM_STEP_TASKS_PER_NODE by SLURM_NODEID; a batch script's own
/// process is not a task of a step), PMIx (PMIX_RANK), and otherwise none.
/// Fails, naming the variable, on a value that is not a number in range.
absl::StatusOr<Launch> resolveLaunch();

/// How many of the job's ranks share this node, to divide its cores or
/// GPUs among: the launcher's local size, or `worldSize` (every rank here)
/// where no launcher says.
int ranksOnThisNode(int worldSize);

/// "torchrun: rank 1 of 2, local rank 1 of 2 (RANK, WORLD_SIZE, ...)".
std::string describeLaunch(const Launch &launch);

/// Whether MPI's world is the launcher's job: fails, saying what to run
/// instead, when the launcher started more processes than MPI joined (each
/// would otherwise train alone) or gave this one another rank.
absl::Status checkLaunchAgainstMpi(const Launch &launch, int mpiRank,
                                   int mpiSize);

} // namespace zero::rt

#endif // ZERO_RUNTIME_LAUNCH_H
