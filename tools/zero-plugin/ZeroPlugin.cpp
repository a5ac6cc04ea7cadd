//===- ZeroPlugin.cpp - The ZeRO dialects and passes for mlir-opt ---------===//
//
// libZeroPlugin.so, loaded by a stock mlir-opt:
//
//   mlir-opt --load-dialect-plugin=libZeroPlugin.so \
//            --load-pass-plugin=libZeroPlugin.so \
//            --pass-pipeline='builtin.module(zero-pipeline{stage=3 ranks=4})'
//
// The library holds only the project's object files. MLIR itself comes from
// the host tool, which links it statically and exports its symbols: a
// second copy here would give every TypeID and command-line option two
// definitions.
//
//===----------------------------------------------------------------------===//

#include "zero/passes/Pipeline.h"

#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Zero", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            zero::registerZeroDialects(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Zero", LLVM_VERSION_STRING,
          []() { zero::registerZeroPasses(); }};
}
