//===- InstallPaths.h - Where the running program lives ---------*- C++ -*-===//
//
// Programs find what ships beside them (the CUDA backend module, the
// examples, themselves for mpirun) relative to their own file, so that the
// build tree and the relocatable release bundle work alike: both put the
// programs in ROOT/bin, libraries in ROOT/lib and data in ROOT/share/zero.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_INSTALLPATHS_H
#define ZERO_RUNTIME_INSTALLPATHS_H

#include "absl/status/statusor.h"

#include <string>

namespace zero::rt {

/// The running program's own file (/proc/self/exe).
absl::StatusOr<std::string> programPath();

/// ROOT, the directory above the running program's bin/.
absl::StatusOr<std::string> installRoot();

} // namespace zero::rt

#endif // ZERO_RUNTIME_INSTALLPATHS_H
