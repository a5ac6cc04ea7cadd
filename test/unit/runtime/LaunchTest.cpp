//===- LaunchTest.cpp - Which launcher started this rank ------------------===//
//
// resolveLaunch reads the launchers' variables in docs/runtime.md's order,
// so that a launcher run inside another (mpirun in a Slurm allocation,
// torchrun in one) describes its own processes; checkLaunchAgainstMpi
// refuses a job MPI did not join.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/Launch.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <map>
#include <string>

using namespace zero::rt;

namespace {

using Vars = std::map<std::string, std::string>;

/// Sets the launchers' variables for one test and clears them after.
class Environment {
public:
  explicit Environment(const std::map<std::string, std::string> &values) {
    for (const char *name :
         {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
          "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
          "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "RANK",
          "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "SLURM_PROCID",
          "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", "SLURM_NTASKS",
          "SLURM_STEP_TASKS_PER_NODE", "SLURM_NODEID", "PMIX_RANK"}) {
      if (const char *old = std::getenv(name))
        saved[name] = old;
      unsetenv(name);
    }
    for (const auto &[name, value] : values)
      setenv(name.c_str(), value.c_str(), 1);
    set = values;
  }
  ~Environment() {
    for (const auto &[name, value] : set)
      unsetenv(name.c_str());
    for (const auto &[name, value] : saved)
      setenv(name.c_str(), value.c_str(), 1);
  }

private:
  std::map<std::string, std::string> saved, set;
};

Launch resolved() {
  absl::StatusOr<Launch> launch = resolveLaunch();
  EXPECT_TRUE(launch.ok()) << launch.status();
  return launch.ok() ? *launch : Launch();
}

TEST(Launch, NoLauncherIsOneProcess) {
  Environment env(Vars{});
  Launch launch = resolved();
  EXPECT_EQ(launch.launcher, "none");
  EXPECT_EQ(launch.worldSize, 1);
  EXPECT_TRUE(checkLaunchAgainstMpi(launch, 0, 1).ok());
}

TEST(Launch, TorchrunGivesRankWorldAndLocalRank) {
  Environment env(Vars{{"RANK", "3"},
                       {"WORLD_SIZE", "4"},
                       {"LOCAL_RANK", "1"},
                       {"LOCAL_WORLD_SIZE", "2"}});
  Launch launch = resolved();
  EXPECT_EQ(launch.launcher, "torchrun");
  EXPECT_EQ(launch.rank, 3);
  EXPECT_EQ(launch.worldSize, 4);
  EXPECT_EQ(launch.localRank, 1);
  EXPECT_EQ(launch.localSize, 2);
  // MPI started as a world of one per process: each would train alone.
  absl::Status alone = checkLaunchAgainstMpi(launch, 0, 1);
  EXPECT_FALSE(alone.ok());
  EXPECT_NE(alone.message().find("python -m zero.run -n 4"), std::string::npos)
      << alone;
  EXPECT_TRUE(checkLaunchAgainstMpi(launch, 3, 4).ok());
}

TEST(Launch, OpenMpiInsideAnAllocationDescribesItsOwnProcesses) {
  Environment env(Vars{{"SLURM_PROCID", "0"},
                       {"SLURM_STEP_NUM_TASKS", "1"},
                       {"RANK", "0"},
                       {"WORLD_SIZE", "1"},
                       {"OMPI_COMM_WORLD_RANK", "5"},
                       {"OMPI_COMM_WORLD_SIZE", "8"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  Launch launch = resolved();
  EXPECT_EQ(launch.launcher, "Open MPI");
  EXPECT_EQ(launch.rank, 5);
  EXPECT_EQ(launch.worldSize, 8);
  EXPECT_EQ(launch.localRank, 1);
  EXPECT_EQ(launch.localSize, 4);
}

TEST(Launch, TorchrunInsideAnAllocationBeatsSlurm) {
  Environment env(Vars{{"SLURM_PROCID", "0"},
                       {"SLURM_STEP_NUM_TASKS", "1"},
                       {"RANK", "1"},
                       {"WORLD_SIZE", "2"}});
  EXPECT_EQ(resolved().launcher, "torchrun");
}

TEST(Launch, SrunStepTasksAndNotTheBatchScript) {
  {
    Environment env(Vars{{"SLURM_PROCID", "2"},
                         {"SLURM_STEP_NUM_TASKS", "4"},
                         {"SLURM_LOCALID", "0"}});
    Launch launch = resolved();
    EXPECT_EQ(launch.launcher, "Slurm");
    EXPECT_EQ(launch.rank, 2);
    EXPECT_EQ(launch.worldSize, 4);
    EXPECT_EQ(launch.localRank, 0);
    absl::Status alone = checkLaunchAgainstMpi(launch, 0, 1);
    EXPECT_NE(alone.message().find("srun --mpi=pmix"), std::string::npos)
        << alone;
  }
  // A batch script's own process: the allocation's SLURM_NTASKS, no step.
  Environment env(Vars{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}});
  EXPECT_EQ(resolved().launcher, "none");
}

TEST(Launch, SrunSaysHowManyTasksShareTheNode) {
  // Every rank of a node must agree on it: it divides the node's cores and
  // GPUs among them.
  for (const char *procid : {"2", "3"}) {
    Environment env(Vars{{"SLURM_PROCID", procid},
                         {"SLURM_STEP_NUM_TASKS", "5"},
                         {"SLURM_LOCALID", procid[0] == '2' ? "0" : "1"},
                         {"SLURM_NODEID", "1"},
                         {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"}});
    EXPECT_EQ(resolved().localSize, 2) << "SLURM_PROCID=" << procid;
  }
  {
    Environment env(Vars{{"SLURM_PROCID", "4"},
                         {"SLURM_STEP_NUM_TASKS", "5"},
                         {"SLURM_LOCALID", "0"},
                         {"SLURM_NODEID", "2"},
                         {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"}});
    EXPECT_EQ(resolved().localSize, 1);
  }
  {
    // Without the counts, every task is taken to share the node.
    Environment env(Vars{{"SLURM_PROCID", "3"},
                         {"SLURM_STEP_NUM_TASKS", "4"},
                         {"SLURM_LOCALID", "1"}});
    EXPECT_EQ(resolved().localSize, 4);
  }
  for (const char *counts : {"2(x", "two", "2(x2)"}) {
    Environment env(Vars{{"SLURM_PROCID", "0"},
                         {"SLURM_STEP_NUM_TASKS", "4"},
                         {"SLURM_NODEID", "3"},
                         {"SLURM_STEP_TASKS_PER_NODE", counts}});
    EXPECT_FALSE(resolveLaunch().ok()) << counts;
  }
}

TEST(Launch, PmixAloneLeavesTheSizeToMpi) {
  Environment env(Vars{{"PMIX_RANK", "1"}});
  Launch launch = resolved();
  EXPECT_EQ(launch.launcher, "PMIx");
  EXPECT_EQ(launch.worldSize, 0);
  EXPECT_TRUE(checkLaunchAgainstMpi(launch, 1, 6).ok());
  EXPECT_FALSE(checkLaunchAgainstMpi(launch, 0, 6).ok());
}

TEST(Launch, MalformedValuesAreRefusedByName) {
  {
    Environment env(Vars{{"RANK", "one"}, {"WORLD_SIZE", "2"}});
    absl::StatusOr<Launch> launch = resolveLaunch();
    ASSERT_FALSE(launch.ok());
    EXPECT_NE(launch.status().message().find("RANK='one'"), std::string::npos);
  }
  {
    Environment env(Vars{{"RANK", "2"}, {"WORLD_SIZE", "2"}});
    EXPECT_FALSE(resolveLaunch().ok());
  }
  Environment env(Vars{{"RANK", "0"}, {"WORLD_SIZE", "0"}});
  EXPECT_FALSE(resolveLaunch().ok());
}

} // namespace
