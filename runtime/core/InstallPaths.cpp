//===- InstallPaths.cpp - Where the running program lives -----------------===//

#include "zero/runtime/InstallPaths.h"
#include "zero/support/Status.h"

#include "absl/strings/str_cat.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace zero::rt {

absl::StatusOr<std::string> programPath() {
  char self[4096];
  ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length <= 0)
    return absl::InternalError(
        absl::StrCat("cannot find this program's file: /proc/self/exe: ",
                     length < 0 ? std::strerror(errno) : "empty"));
  return std::string(self, length);
}

absl::StatusOr<std::string> installRoot() {
  ZERO_ASSIGN_OR_RETURN(std::string program, programPath());
  std::string bin = program.substr(0, program.find_last_of('/'));
  return bin.substr(0, bin.find_last_of('/'));
}

} // namespace zero::rt
