#!/usr/bin/env python3
"""Each mesh scheme predicted on nodes of 8 H100 joined by 400 Gb/s per GPU.

The compiler's machine model (zero-report's prediction, docs/zero-opt.md)
on the two-level preset h100-nodes-ib400: GPT-2 124M in bf16, 4 sequences
of 1024 tokens per GPU, on 2 and on 8 nodes of 8 GPUs (mesh=2,8 and 8,8),
compiled as:

  * zero3:   ZeRO-3 over one axis of all the GPUs, on the same preset:
             one axis runs over the preset's axis 0, the fabric (a ring over
             every GPU crosses nodes, so it runs at the inter-node
             bandwidth);
  * hybrid3: mesh-scheme=hybrid, stage 3;
  * full3:   mesh-scheme=full, stage 3;
  * hpz:     full3 with hpz;
  * zeropp:  hpz with qwz and qgz (int8 across nodes);
  * ddp:     stage 0 on the mesh;

and prints per scheme the model state per GPU, the bytes each GPU sends
across nodes per step (the report's axis 0; zero3's all), the predicted
step and its exposed communication. A prediction, not a measurement: no
such machine was lent.

  mesh_predictions.py [--gpt2-train build/bin/gpt2_train]
                      [--zero-opt build/bin/zero-opt] [--markdown]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402

PRESET = "h100-nodes-ib400"
SCHEMES = [
    ("hybrid3", "stage=3 mesh-scheme=hybrid"),
    ("full3", "stage=3 mesh-scheme=full"),
    ("hpz", "stage=3 mesh-scheme=full hpz=true"),
    ("zeropp", "stage=3 mesh-scheme=full hpz=true qwz=true qgz=true"),
    ("ddp", "stage=0"),
]


def predict(zero_opt, step, options, workdir, tag):
    report = os.path.join(workdir, f"{tag}.json")
    pipeline = (f"builtin.module(zero-pipeline{{{options} lower-to-runtime=true "
                f"report=json report-output={report}}})")
    done = subprocess.run([zero_opt, step, "-o", os.devnull,
                           f"--pass-pipeline={pipeline}"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"error: zero-opt {options} failed:\n{done.stderr}")
    with open(report) as f:
        return json.load(f)


def across_nodes(report, mesh):
    """Bytes one GPU sends across nodes per step."""
    traffic = (report["axes"][0]["traffic"] if mesh
               else report["traffic"])
    return sum(kind["sent_bytes_per_rank"] for kind in traffic.values())


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpt2-train", default=os.path.join(
        benchlib.ROOT, "build", "bin", "gpt2_train"))
    parser.add_argument("--zero-opt", default=os.path.join(
        benchlib.ROOT, "build", "bin", "zero-opt"))
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        step = os.path.join(workdir, "gpt2-124m.mlir")
        # The step of one GPU (4 sequences); zero-pipeline places it.
        subprocess.run([args.gpt2_train, "--size", "124M", "--precision",
                        "bf16", "--batch", "4", "-n", "1", "--plan-only",
                        "--save-step", step], check=True,
                       capture_output=True)
        for nodes in (2, 8):
            gpus = nodes * 8
            configs = [("zero3", f"stage=3 ranks={gpus} machine={PRESET}",
                        False)]
            configs += [(name, f"{options} mesh={nodes},8 machine={PRESET}",
                         True) for name, options in SCHEMES]
            base = None
            for name, options, mesh in configs:
                report = predict(args.zero_opt, step, options, workdir,
                                 f"{nodes}-{name}")
                prediction = report["prediction"]
                crossed = across_nodes(report, mesh)
                base = base or crossed
                rows.append([
                    f"{nodes}x8", name,
                    f"{report['per_rank']['model_state']['bytes'] / 2**20:.0f}",
                    f"{crossed / 2**20:.0f}", f"{crossed / base:.2f}",
                    f"{prediction['step_seconds'] * 1e3:.1f}",
                    f"{prediction['exposed_communication_seconds'] * 1e3:.1f}"])
                print(" ".join(rows[-1]), flush=True)
    print(benchlib.table(
        ["nodes x GPUs", "scheme", "model state MiB/GPU",
         "MiB across nodes/GPU/step", "x zero3", "predicted ms/step",
         "exposed comm ms"], rows, args.markdown))
    print(f"GPT-2 124M bf16, 4 x 1024 tokens per GPU, predicted on "
          f"{PRESET} (zero3 on its fabric as one axis)")


if __name__ == "__main__":
    main()
