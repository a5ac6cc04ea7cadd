# -*- Python -*-
# The pass tests (test/passes/) a second time, through Debian's stock
# mlir-opt with libZeroPlugin.so loaded as dialect and pass plugin: every
# RUN line's `zero-opt` becomes that mlir-opt (docs/plugin.md).

import os
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "ZERO-PLUGIN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["lit.local.cfg", "inputs"]

config.test_source_root = os.path.join(config.zero_src_root, "test", "passes")
config.test_exec_root = os.path.join(config.zero_obj_root, "test", "plugin")

sys.path.insert(0, os.path.join(config.zero_src_root, "test"))
import lit_common

lit_common.configure(config, llvm_config)

plugin = os.path.join(config.zero_obj_root, "lib", "libZeroPlugin.so")
mlir_opt = os.path.join(config.llvm_tools_dir, "mlir-opt")
if not config.zero_has_plugin:
    config.unsupported = True
else:
    llvm_config.add_tool_substitutions(
        [ToolSubst("zero-opt", command=mlir_opt,
                   extra_args=["--load-dialect-plugin=" + plugin,
                               "--load-pass-plugin=" + plugin])],
        [config.llvm_tools_dir])
