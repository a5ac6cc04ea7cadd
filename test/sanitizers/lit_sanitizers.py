# -*- Python -*-
# The sanitizer runtime options of a ZERO_SANITIZE build, shared by the
# FileCheck suite (test/lit.cfg.py) and the GoogleTest suite
# (test/unit/lit.cfg.py). docs/building.md explains each choice.

import os


def configure(config, report_dir):
    """Sets ASAN/UBSAN/LSAN options in the tests' environment.

    Every report goes to a file under `report_dir` (log_path), so that a
    report inside a test that expects a failure (`not zero-run ...`) is still
    found: scripts/test.sh counts each report file as a failure."""
    if not config.zero_sanitize:
        return
    os.makedirs(report_dir, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    asan = [
        # Debian's MLIR is not instrumented but poisons its own allocators'
        # memory (llvm::BumpPtrAllocator under MLIRContext); ASan would
        # report those as use-after-poison in code that is correct.
        "allow_user_poisoning=0",
        "detect_leaks=1",
        # A crash, not an exit status: `not` fails on a crash, so a test
        # that expects an error cannot hide a report.
        "abort_on_error=1",
        "check_initialization_order=1",
        "detect_stack_use_after_return=1",
        "log_path=" + os.path.join(report_dir, "asan"),
    ]
    ubsan = [
        "print_stacktrace=1",
        "abort_on_error=1",
        "log_path=" + os.path.join(report_dir, "ubsan"),
    ]
    lsan = [
        "suppressions=" + os.path.join(here, "lsan.supp"),
        "print_suppressions=0",
    ]
    # Open MPI's components stay loaded until exit, so that the leak stacks
    # that start in them name them (test/unit/sanitizers/
    # KeepModulesLoaded.c). Without that module, only the slow unwinder
    # reaches the linked Open MPI libraries that lsan.supp names.
    keep_loaded = os.path.join(config.zero_obj_root, "lib",
                               "libZeroKeepModulesLoaded.so")
    if os.path.exists(keep_loaded):
        config.environment["LD_PRELOAD"] = keep_loaded
    else:
        asan.append("fast_unwind_on_malloc=0")
    symbolizer = "/usr/lib/llvm-19/bin/llvm-symbolizer"
    if os.path.exists(symbolizer):
        config.environment["ASAN_SYMBOLIZER_PATH"] = symbolizer
    config.environment["ASAN_OPTIONS"] = ":".join(asan)
    config.environment["UBSAN_OPTIONS"] = ":".join(ubsan)
    config.environment["LSAN_OPTIONS"] = ":".join(lsan)
    config.available_features.add("sanitizers")
