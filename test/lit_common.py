"""What every lit suite of the project sets up (test/lit.cfg.py and the
plugin suite's test/plugin/lit.cfg.py)."""

import subprocess


def resolved_python():
    """The interpreter `python3` runs here, as an absolute path. A launcher
    such as mpirun may resolve `python3` differently (pyenv's shims pick an
    interpreter from the environment), and the tests need this one: the one
    the suite checked for numpy."""
    try:
        found = subprocess.run(
            ["python3", "-c", "import sys; print(sys.executable)"],
            capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        found = ""
    return found or "python3"


def configure(config, llvm_config):
    # FileCheck variables defined under a CHECK-LABEL do not leak into the
    # next.
    config.environment["FILECHECK_OPTS"] = (
        "-enable-var-scope --allow-unused-prefixes=false")

    config.substitutions.append(("%zero_src_root", config.zero_src_root))
    config.substitutions.append(("%zero_obj_root", config.zero_obj_root))
    config.substitutions.append(("%python", resolved_python()))

    llvm_config.with_system_environment(
        ["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
    llvm_config.use_default_substitutions()
    # `not`, `count` and FileCheck resolve anywhere in a RUN line.
    llvm_config.with_environment("PATH", config.llvm_tools_dir,
                                 append_path=True)
