//===- MpiLaunch.cpp - Starting a tool's ranks under mpirun ---------------===//
//
// `zero-run -n 4` and `gpt2_train -n 4` re-launch themselves under mpirun
// with the options this project's machines need, so that users need not
// know them.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/Communicator.h"
#include "zero/runtime/InstallPaths.h"

#include "absl/strings/str_cat.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace zero::rt {

bool isUnderMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK");
}

absl::Status relaunchUnderMpirun(int ranks, int argc, char **argv) {
  absl::StatusOr<std::string> self = programPath();
  if (!self.ok())
    return absl::InternalError(absl::StrCat(
        "cannot launch this program under mpirun: ", self.status().message()));
  // More ranks than cores is normal here (tests, laptops); unbound ranks let
  // BLAS threads use whatever cores are free; shared memory only.
  std::vector<std::string> args = {"mpirun",
                                   "--oversubscribe",
                                   "--bind-to",
                                   "none",
                                   "--mca",
                                   "btl",
                                   "self,vader",
                                   "-np",
                                   std::to_string(ranks)};
  if (geteuid() == 0)
    args.insert(args.begin() + 1, "--allow-run-as-root");
  args.push_back(*self);
  for (int index = 1; index < argc; ++index)
    args.push_back(argv[index]);
  std::vector<char *> pointers;
  for (std::string &arg : args)
    pointers.push_back(arg.data());
  pointers.push_back(nullptr);
  // Containers forbid the cross-memory attach Open MPI tries first.
  setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
  // Jobs started at once on one machine share Open MPI's session directory
  // and race on its removal (test/private-mpirun.sh): where asked, as the
  // test suite asks, this launch gets a base of its own under $TMPDIR (left
  // empty behind it: mpirun is exec'd, nothing runs after it here).
  if (std::getenv("ZERO_MPIRUN_PRIVATE_TMPDIR") &&
      !std::getenv("OMPI_MCA_orte_tmpdir_base")) {
    const char *tmp = std::getenv("TMPDIR");
    std::string base =
        absl::StrCat(tmp && *tmp ? tmp : "/tmp", "/zero-mpirun.XXXXXX");
    if (mkdtemp(base.data()))
      setenv("OMPI_MCA_orte_tmpdir_base", base.c_str(), 1);
  }
  execvp("mpirun", pointers.data());
  return absl::UnavailableError(
      absl::StrCat("cannot run mpirun to launch ", ranks,
                   " ranks (is Open MPI installed? scripts/setup.sh "
                   "installs it): ",
                   std::strerror(errno)));
}

} // namespace zero::rt
