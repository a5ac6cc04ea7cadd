# -*- Python -*-
# Runs the GoogleTest binaries in this directory, one lit test per test case,
# so that lit's summary counts unit tests beside the FileCheck suites.

import os
import sys

import lit.formats

sys.path.insert(0, os.path.join(config.zero_src_root, "test", "sanitizers"))
import lit_sanitizers

config.name = "ZERO-Unit"
config.suffixes = []
config.test_source_root = config.unit_test_dir
config.test_exec_root = config.unit_test_dir
config.test_format = lit.formats.GoogleTest(".", "Tests")

lit_sanitizers.configure(
    config, os.path.join(config.zero_obj_root, "sanitizer-reports")
)
