# -*- Python -*-
# Runs the GoogleTest binaries in this directory, one lit test per test case,
# so that lit's summary counts unit tests beside the FileCheck suites.

import lit.formats

config.name = "ZERO-Unit"
config.suffixes = []
config.test_source_root = config.unit_test_dir
config.test_exec_root = config.unit_test_dir
config.test_format = lit.formats.GoogleTest(".", "Tests")
