//===- ReplayMain.cpp - Replays fuzz inputs without libFuzzer -------------===//
//
// The entry point of the fuzz targets in builds without libFuzzer (the GCC
// Release build): each input file, or each regular file of an input folder,
// goes once through LLVMFuzzerTestOneInput. So the regression inputs and the
// seed corpus run through the Release tools in the default test tier too,
// where the optimizer, not the sanitizers, decides what undefined behaviour
// does (test/fuzz/replay.test). A crash aborts the process, which fails the
// test; nothing here catches it.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

bool replayFile(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "zero-fuzz replay: cannot read %s\n", path.c_str());
    return false;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  // A null pointer for an empty input, as libFuzzer passes none either.
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()),
                         bytes.size());
  return true;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s FILE|DIR...\n"
                 "replays each input once through the fuzz target (a build "
                 "without libFuzzer)\n",
                 argv[0]);
    return 2;
  }
  size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path path(argv[i]);
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) {
      // Sorted, so that a crash report names the same input on every run.
      std::vector<std::filesystem::path> files;
      for (const auto &entry : std::filesystem::directory_iterator(path, error))
        if (entry.is_regular_file())
          files.push_back(entry.path());
      if (error) {
        std::fprintf(stderr, "zero-fuzz replay: cannot list %s: %s\n",
                     path.c_str(), error.message().c_str());
        return 1;
      }
      std::sort(files.begin(), files.end());
      for (const auto &file : files) {
        if (!replayFile(file))
          return 1;
        ++replayed;
      }
    } else {
      if (!replayFile(path))
        return 1;
      ++replayed;
    }
  }
  std::printf("zero-fuzz replay: %zu inputs, none crashed\n", replayed);
  return 0;
}
