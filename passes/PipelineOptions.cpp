//===- PipelineOptions.cpp - The rules of the ZeRO options ----------------===//

#include "zero/passes/PipelineOptions.h"

#include "zero/support/ZeroStage.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>

using namespace zero;

OptionSpelling OptionSpelling::commandLine() {
  return {[](llvm::StringRef option) { return ("--" + option).str(); }, " ",
          "--stage 3", "give --mesh RxS", " "};
}

OptionSpelling OptionSpelling::builder() {
  return {[](llvm::StringRef option) {
            std::string words = option.str();
            std::replace(words.begin(), words.end(), '-', ' ');
            return words;
          },
          " ", "enable_zero(true, 3)", "call mesh(nodes, ranks_per_node)",
          " and "};
}

OptionSpelling OptionSpelling::passOptions() {
  return {[](llvm::StringRef option) { return option.str(); }, "=", "stage=3",
          "give mesh=R,S", " and "};
}
