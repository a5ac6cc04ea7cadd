//===- TensorFileFuzzer.cpp - libFuzzer target: the tensor-file readers ---===//
//
// Writes arbitrary bytes to a file and reads it as safetensors, npy and npz
// (whole archive and one entry), as `zero-run --init/--data` would. Every
// reader must answer with tensors that pass checkTensor or with a Status; a
// crash, a sanitizer report, or an allocation the file's size cannot justify
// is a bug.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/TensorFile.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace {

/// One scratch file per fuzzing process, in memory where /dev/shm exists.
const std::string &scratchPath() {
  static const std::string path = [] {
    const char *directory = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(directory) + "/zero-fuzz-tensorfile-" +
           std::to_string(getpid());
  }();
  return path;
}

void writeScratch(const uint8_t *data, size_t size) {
  FILE *file = std::fopen(scratchPath().c_str(), "wb");
  if (!file || (size && std::fwrite(data, 1, size, file) != size)) {
    std::perror("fuzzer: cannot write the scratch file");
    std::abort();
  }
  std::fclose(file);
}

void checkAll(const zero::rt::TensorMap &tensors) {
  for (const auto &[name, tensor] : tensors)
    if (!zero::rt::checkTensor(tensor, name).ok()) {
      std::fprintf(stderr, "fuzzer: reader returned malformed tensor '%s'\n",
                   name.c_str());
      std::abort();
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  writeScratch(data, size);
  const std::string &path = scratchPath();
  if (auto tensors = zero::rt::readSafetensors(path); tensors.ok())
    checkAll(*tensors);
  if (auto tensor = zero::rt::readNpy(path); tensor.ok())
    checkAll({{"npy", *tensor}});
  if (auto tensors = zero::rt::readNpz(path); tensors.ok())
    checkAll(*tensors);
  if (auto tensor = zero::rt::readNpzEntry(path, "x"); tensor.ok())
    checkAll({{"x", *tensor}});
  return 0;
}
