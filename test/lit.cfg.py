# -*- Python -*-
# lit configuration of the ZeRO compiler's FileCheck suites.

import os
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "ZERO"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "inputs"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.zero_obj_root, "test")

sys.path.insert(0, os.path.join(config.zero_src_root, "test"))
import lit_common

lit_common.configure(config, llvm_config)
# %timed SECONDS -- CMD: CMD's exit status and whether it ended within the
# bound, as two lines to match (test/tools/run_timed.py).
config.substitutions.append(
    (
        "%timed",
        "%s %s"
        % (
            lit_common.resolved_python(),
            os.path.join(config.zero_src_root, "test", "tools", "run_timed.py"),
        ),
    )
)

tool_dirs = [config.zero_tools_dir, config.llvm_tools_dir]
tools = [ToolSubst("zero-opt", unresolved="fatal"),
         ToolSubst("zero-ckpt", unresolved="fatal")]
# The embedding example (examples/embed), where it was built.
if os.path.exists(os.path.join(config.zero_tools_dir, "zero-embed-example")):
    config.available_features.add("zero-embed-example")
    tools.append(ToolSubst("zero-embed-example", unresolved="fatal"))
llvm_config.add_tool_substitutions(tools, tool_dirs)

import shutil
import subprocess

# libZeroPlugin.so and the stock mlir-opt it loads into (docs/plugin.md).
# The plugin's own suite, test/plugin/, runs test/passes/ through them.
zero_plugin = os.path.join(config.zero_obj_root, "lib", "libZeroPlugin.so")
stock_mlir_opt = os.path.join(config.llvm_tools_dir, "mlir-opt")
if config.zero_has_plugin and os.path.exists(stock_mlir_opt):
    config.available_features.add("zero-plugin")
    config.substitutions.append(("%zero_plugin", zero_plugin))
    config.substitutions.append(("%mlir_opt", stock_mlir_opt))

sys.path.insert(0, os.path.join(config.zero_src_root, "test", "sanitizers"))
import lit_sanitizers

lit_sanitizers.configure(
    config, os.path.join(config.zero_obj_root, "sanitizer-reports")
)

# Mounting a small tmpfs (root, and a kernel that lets us): the test of a
# save that fills its file system.
def _can_mount_tmpfs():
    import tempfile
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    target = tempfile.mkdtemp(prefix="zero-lit-mount-")
    try:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k",
                                  "tmpfs", target], capture_output=True)
        if mounted.returncode != 0:
            return False
        subprocess.run(["umount", target], capture_output=True)
        return True
    finally:
        os.rmdir(target)


if _can_mount_tmpfs():
    config.available_features.add("tmpfs-mount")


# Network namespaces (root, iproute2, util-linux's unshare): the multi-host
# launch test makes its hosts with them.
def _can_make_netns():
    if os.geteuid() != 0 or not shutil.which("ip") or \
            not shutil.which("unshare"):
        return False
    name = "zero-lit-probe-%d" % os.getpid()
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True)
    if made.returncode != 0:
        return False
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return True


if _can_make_netns():
    config.available_features.add("netns")

# The Python package (python/), where it was built and numpy imports.
python_package = os.path.join(config.zero_obj_root, "python")
python_module_dir = os.path.join(python_package, "zero")
python_built = os.path.isdir(python_module_dir) and any(
    name.startswith("_zero.") for name in os.listdir(python_module_dir))
if python_built and subprocess.run(["python3", "-c", "import numpy"],
                                   capture_output=True).returncode == 0:
    config.available_features.add("python-zero")
    config.environment["PYTHONPATH"] = python_package

# The reference safetensors library (scripts/setup.sh installs it).
if subprocess.run(["python3", "-c", "import safetensors"],
                  capture_output=True).returncode == 0:
    config.available_features.add("py-safetensors")

# PyTorch and transformers for the importer's tests (test/torch): a 5.6 GB
# install, so they run in the --all tier (scripts/test.sh runs
# scripts/setup-torch.sh, then lit with --param torch=1) and show as
# unsupported in the default tier, installed or not.
if lit_config.params.get("torch") == "1" and subprocess.run(
        ["python3", "-c", "import torch, transformers, safetensors"],
        capture_output=True).returncode == 0:
    config.available_features.add("torch")

# A single-node Slurm cluster (test/slurm/start-slurm.sh starts slurmctld
# and slurmd as root): its tests run in the --all tier, which starts it and
# passes --param slurm=1, and show as unsupported elsewhere.
if lit_config.params.get("slurm") == "1" and shutil.which("srun") and \
        subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True,
                       text=True).stdout.strip() in ("idle", "mixed"):
    config.available_features.add("slurm")

if shutil.which("clang-format"):
    config.available_features.add("clang-format")

# Multi-rank runtime tests (test/runtime) run under Open MPI's mpirun: as root
# in containers (--allow-run-as-root), with more ranks than cores
# (--oversubscribe), over shared memory only (no network probing), and
# without the cross-process single-copy mechanism, which needs ptrace rights
# that containers often lack.
mpirun = shutil.which("mpirun")
if mpirun and os.path.exists(os.path.join(config.zero_tools_dir, "zero-comm-check")):
    config.available_features.add("mpi")
    config.substitutions.append(
        (
            "%mpirun",
            os.path.join(config.zero_src_root, "test", "private-mpirun.sh")
            + " --allow-run-as-root --oversubscribe --bind-to none"
            + " --mca btl self,vader --mca btl_vader_single_copy_mechanism none",
        )
    )
    llvm_config.add_tool_substitutions(
        [ToolSubst("zero-comm-check", unresolved="ignore")], tool_dirs
    )

# The fuzz targets (test/fuzz): libFuzzer programs in a ZERO_FUZZERS build
# ("fuzzers"), replay drivers in the others ("fuzz-replay").
if os.path.exists(os.path.join(config.zero_tools_dir, "zero-fuzz-mlir")):
    config.available_features.add(
        "fuzzers" if config.zero_fuzzers else "fuzz-replay")
    llvm_config.add_tool_substitutions(
        [
            ToolSubst("zero-fuzz-mlir", unresolved="fatal"),
            ToolSubst("zero-fuzz-tensorfile", unresolved="fatal"),
        ],
        tool_dirs,
    )

# zero-run and gpt2_train launch their own ranks through mpirun (with -n):
# each launch with a session directory of its own, as %mpirun's
# (test/private-mpirun.sh says why).
config.environment["ZERO_MPIRUN_PRIVATE_TMPDIR"] = "1"

# zero-run launches its own ranks through mpirun (with -n) and so needs MPI.
if "mpi" in config.available_features and os.path.exists(
    os.path.join(config.zero_tools_dir, "zero-run")
):
    config.available_features.add("zero-run")
    llvm_config.add_tool_substitutions(
        [ToolSubst("zero-run", unresolved="fatal")], tool_dirs
    )

# CUDA: "cuda" where the CUDA parts were built (nvcc found at configure
# time), "gpu" where this machine also has a GPU to run them. GPU tests
# REQUIRE both and so are reported as unsupported (skipped) elsewhere.
if config.zero_has_cuda:
    config.available_features.add("cuda")
    config.substitutions.append(
        (
            "%zero_cuda_module",
            os.path.join(config.zero_obj_root, "lib", "libZeroCudaBackend.so"),
        )
    )
    import subprocess

    try:
        listed = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        listed = ""
    if any(line.startswith("GPU ") for line in listed.splitlines()):
        config.available_features.add("gpu")
