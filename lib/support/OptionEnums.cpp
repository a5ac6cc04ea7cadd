//===- OptionEnums.cpp - The choices of the ZeRO options ------------------===//

#include "zero/support/OptionEnums.h"

#include "llvm/ADT/StringSwitch.h"

#include "zero/support/OptionEnums.cpp.inc"
