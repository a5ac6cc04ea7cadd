"""Training across hosts: network namespaces made here stand for hosts.

  check_multihost.py --zero-run ZERO_RUN --mlp MLP.mlir --workdir DIR
                     [--python-script SCRIPT]

Makes three namespaces (hosts 10.213.0.1-3), each with a veth on a bridge
in this namespace (10.213.0.254, where mpirun runs), an Open MPI hostfile
naming them, and an rsh agent that runs a command "on" a host with
`ip netns exec` (under its own UTS namespace, so each host has its own
hostname). Then trains the MLP at ZeRO stage 3 on 4 ranks over the hosts
(2 + 1 + 1 slots), over TCP only (`--mca btl tcp,self`), and checks that
the losses equal the single-host run's; with --python-script, the same for a
Python script on 3 ranks, one per host. Everything made is removed at the
end, also on failure.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

HOSTS = ["10.213.0.1", "10.213.0.2", "10.213.0.3"]
NAMESPACES = ["zero-mh1", "zero-mh2", "zero-mh3"]
BRIDGE = "zero-mhbr"
SUBNET = "10.213.0.0/24"


def sh(*command, check=True):
    return subprocess.run(command, check=check, capture_output=True,
                          text=True)


def teardown():
    for ns in NAMESPACES:
        sh("ip", "netns", "del", ns, check=False)
    for index in range(len(NAMESPACES)):
        sh("ip", "link", "del", f"zero-mhv{index + 1}", check=False)
    sh("ip", "link", "del", BRIDGE, check=False)


def setup(workdir):
    teardown()
    sh("ip", "link", "add", BRIDGE, "type", "bridge")
    sh("ip", "addr", "add", "10.213.0.254/24", "dev", BRIDGE)
    sh("ip", "link", "set", BRIDGE, "up")
    for index, (ns, host) in enumerate(zip(NAMESPACES, HOSTS)):
        veth = f"zero-mhv{index + 1}"
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0",
           "netns", ns)
        sh("ip", "link", "set", veth, "master", BRIDGE)
        sh("ip", "link", "set", veth, "up")
        sh("ip", "netns", "exec", ns, "ip", "addr", "add", f"{host}/24", "dev",
           "eth0")
        sh("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up")
        sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
    agent = os.path.join(workdir, "netns-rsh")
    cases = "\n".join(f"  {host}) ns={ns} ;;"
                      for host, ns in zip(HOSTS, NAMESPACES))
    with open(agent, "w") as f:
        f.write(f"""#!/bin/sh
# Open MPI's rsh agent for the namespaces: $1 is the host, the rest the
# command to run there.
host=$1; shift
case "$host" in
{cases}
  *) echo "netns-rsh: unknown host $host" >&2; exit 1 ;;
esac
exec ip netns exec "$ns" unshare --uts sh -c "hostname $host; $*"
""")
    os.chmod(agent, 0o755)
    return agent


def mpirun(agent, hostfile, ranks):
    return [shutil.which("mpirun"), "--allow-run-as-root", "--hostfile",
            hostfile, "-n", str(ranks), "--bind-to", "none",
            "--mca", "plm_rsh_agent", agent,
            "--mca", "oob_tcp_if_include", SUBNET,
            "--mca", "btl", "tcp,self",
            "--mca", "btl_tcp_if_include", SUBNET]


def run(command, what):
    done = subprocess.run(command, capture_output=True, text=True,
                          timeout=300)
    if done.returncode != 0:
        sys.exit(f"{what} failed ({done.returncode}):\n{done.stdout}\n"
                 f"{done.stderr}")
    return done.stdout


def losses(metrics_path):
    with open(metrics_path) as f:
        return json.load(f)["losses"]


def same_as_one_host(args, launch, flags, single_flags, tag, what):
    """Runs zero-run with `flags` through `launch` (mpirun on the hosts) and,
    with `single_flags` too, on this host alone; exits unless the losses are
    the same, bit for bit. Returns them."""
    spread = os.path.join(args.workdir, f"{tag}-hosts.json")
    single = os.path.join(args.workdir, f"{tag}-single.json")
    run(launch + [args.zero_run] + flags + ["--metrics-json", spread], what)
    run([args.zero_run] + flags + single_flags + ["--metrics-json", single],
        f"{what}, on one host")
    across, here = losses(spread), losses(single)
    if across != here:
        sys.exit(f"{what}: the losses differ from the single-host run's: "
                 f"{across} vs {here}")
    return across


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--zero-run", required=True)
    parser.add_argument("--mlp", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--python-script")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    try:
        agent = setup(args.workdir)
        hostfile = os.path.join(args.workdir, "hosts")
        with open(hostfile, "w") as f:
            f.write(f"{HOSTS[0]} slots=2\n{HOSTS[1]} slots=1\n"
                    f"{HOSTS[2]} slots=1\n")
        hosts_out = run(mpirun(agent, hostfile, 4) + ["hostname"],
                        "hostname on the hosts")
        names = sorted(hosts_out.split())
        print("ranks on hosts:", " ".join(names))
        if names != sorted([HOSTS[0], HOSTS[0], HOSTS[1], HOSTS[2]]):
            sys.exit(f"the ranks did not run on the hosts: {names}")

        flags = [args.mlp, "--stage", "3", "--steps", "4", "--deterministic"]
        across = same_as_one_host(
            args, mpirun(agent, hostfile, 4), flags, ["-n", "4"], "spread",
            "zero-run over 3 hosts")
        print("zero-run stage 3, 4 ranks on 3 hosts:",
              " ".join(f"{x:.9g}" for x in across))
        print("ok: zero-run over TCP across hosts = one host, bitwise")

        # A two-level mesh whose nodes are hosts: 2 hosts of 2 ranks (a
        # node's ranks consecutive, as mpirun fills each host's slots), full
        # 2-D sharding with ZeRO++'s hpZ, qwZ and qgZ, so that the int8
        # gathers and all-to-alls cross the hosts' TCP link.
        pairs = os.path.join(args.workdir, "hosts2x2")
        with open(pairs, "w") as f:
            f.write(f"{HOSTS[0]} slots=2\n{HOSTS[1]} slots=2\n")
        mesh_flags = flags + [
            "--mesh", "2x2", "--mesh-scheme", "full", "--hpz", "--qwz",
            "--qgz", "--pipeline-options",
            "quantize-block=1024 quantize-min-elements=1024"]
        across = same_as_one_host(args, mpirun(agent, pairs, 4), mesh_flags,
                                  [], "mesh", "zero-run on a mesh of 2 hosts")
        print("zero-run mesh 2x2 (2 hosts x 2 ranks), ZeRO++:",
              " ".join(f"{x:.9g}" for x in across))
        print("ok: a mesh whose nodes are hosts = one host, bitwise")

        if args.python_script:
            one_each = os.path.join(args.workdir, "hosts3")
            with open(one_each, "w") as f:
                f.writelines(f"{host} slots=1\n" for host in HOSTS)
            script = [sys.executable, args.python_script, "--stage", "3",
                      "--steps", "3"]
            env_flags = ["-x", "PYTHONPATH"]
            across = run(mpirun(agent, one_each, 3) + env_flags + script,
                         "the Python script over 3 hosts")
            here = run([shutil.which("mpirun"), "--allow-run-as-root",
                        "--oversubscribe", "-n", "3", "--bind-to", "none"] +
                       script,
                       "the Python script on one host")
            print("python stage 3, 3 ranks on 3 hosts:",
                  across.strip().replace("\n", "; "))
            if across != here:
                sys.exit(f"the Python losses differ:\n{across}\nvs\n{here}")
            print("ok: Python over TCP across hosts = one host, bitwise")
    finally:
        teardown()


if __name__ == "__main__":
    main()
