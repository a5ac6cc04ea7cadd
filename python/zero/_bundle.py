"""The self-contained wheel's own programs and libraries (scripts/wheel.sh).

The wheel carries, in zero/_bundle/, the release bundle's layout
(docs/building.md): bin/ (zero-opt, zero-run, zero-ckpt, gpt2_train and
zero-env), lib/ (the shared libraries they and the extension module need,
and the CUDA backend), openmpi/ (Open MPI's runtime, mpirun included). Every
file there finds its libraries through its RUNPATH; Open MPI finds its own
tree through the OPAL_* variables set here, before the extension module
starts MPI. A package built from source (PYTHONPATH=build/python, pip
install .) has no _bundle: it uses the system's Open MPI and build/bin.
"""

import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bundle")
_MPI = os.path.join(ROOT, "openmpi")
_MPI_LIB = os.path.join(_MPI, "lib", "x86_64-linux-gnu", "openmpi", "lib")
TOOLS = ("zero-opt", "zero-run", "zero-ckpt", "gpt2_train", "zero-env")


def present():
    return os.path.isdir(ROOT)


def configure_open_mpi(environ=os.environ):
    """Points Open MPI at the wheel's tree, as bin/zero-env does for the
    bundle: its prefix, its components and PMIx's, its mpirun on PATH, and
    the launcher that needs no ssh where there is none."""
    environ["OPAL_PREFIX"] = _MPI
    environ["OPAL_SYSCONFDIR"] = os.path.join(_MPI, "etc")
    environ["OPAL_PKGDATADIR"] = os.path.join(_MPI, "share", "openmpi")
    environ["OPAL_LIBDIR"] = _MPI_LIB
    environ["OPAL_PKGLIBDIR"] = os.path.join(_MPI_LIB, "openmpi3")
    environ["PMIX_MCA_mca_base_component_path"] = os.path.join(
        ROOT, "lib", "pmix")
    mpi_bin = os.path.join(_MPI, "bin")
    path = environ.get("PATH", "")
    if mpi_bin not in path.split(os.pathsep):
        environ["PATH"] = mpi_bin + (os.pathsep + path if path else "")
    if ("OMPI_MCA_plm" not in environ
            and not any(_which(name, path) for name in ("ssh", "rsh"))):
        environ["OMPI_MCA_plm"] = "isolated"


def mpirun():
    return os.path.join(_MPI, "bin", "mpirun")


def _which(name, path):
    return any(os.access(os.path.join(directory, name), os.X_OK)
               for directory in path.split(os.pathsep) if directory)


def run_tool(tool, argv=None):
    """Runs one of the wheel's programs through bin/zero-env, which sets the
    libraries and finds CUDA's (this interpreter's nvidia-* wheels
    included: its directory goes first on PATH)."""
    argv = sys.argv[1:] if argv is None else argv
    if not present():
        raise SystemExit(
            f"{tool}: this zero package was built from source and carries no "
            f"programs; run build/bin/{tool} (scripts/build.sh), or install "
            "the wheel scripts/wheel.sh makes")
    environ = dict(os.environ)
    python_dir = os.path.dirname(os.path.abspath(sys.executable))
    environ["PATH"] = python_dir + os.pathsep + environ.get("PATH", "")
    zero_env = os.path.join(ROOT, "bin", "zero-env")
    command = [zero_env] if tool == "zero-env" else [
        zero_env, os.path.join(ROOT, "bin", tool)]
    os.execve(zero_env, command + list(argv), environ)


# The console entry points of the wheel (scripts/wheel.sh writes them).
def zero_opt():
    run_tool("zero-opt")


def zero_run():
    run_tool("zero-run")


def zero_ckpt():
    run_tool("zero-ckpt")


def gpt2_train():
    run_tool("gpt2_train")


def zero_env():
    run_tool("zero-env")
