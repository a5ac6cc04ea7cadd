"""zero-opt and a stock mlir-opt with libZeroPlugin.so print the same thing.

  check_plugin_examples.py --zero-opt Z --mlir-opt M --plugin P EXAMPLES_DIR

For every examples/*.mlir: the parsed and printed module, and for each
training step the whole pipeline to the runtime program at stages 0-3 with
the text report. Both tools must give the same stdout, stderr and exit
status, and zero-opt must succeed on every training step.
"""

import argparse
import pathlib
import subprocess
import sys


def run(command):
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--zero-opt", required=True)
    parser.add_argument("--mlir-opt", required=True)
    parser.add_argument("--plugin", required=True)
    parser.add_argument("examples", type=pathlib.Path)
    args = parser.parse_args()
    hosted = [args.mlir_opt, f"--load-dialect-plugin={args.plugin}",
              f"--load-pass-plugin={args.plugin}"]

    problems, compared = [], 0
    examples = sorted(args.examples.glob("*.mlir"))
    if not examples:
        sys.exit(f"no examples in {args.examples}")
    for example in examples:
        is_step = "train." in example.read_text()
        pipelines = [None]
        if is_step:
            pipelines += [
                f"builtin.module(zero-pipeline{{stage={stage} ranks=2 "
                f"report=text lower-to-runtime=true}})" for stage in range(4)]
        for pipeline in pipelines:
            flags = [str(example)]
            if pipeline:
                flags.append(f"--pass-pipeline={pipeline}")
            ours = run([args.zero_opt] + flags)
            theirs = run(hosted + flags)
            what = f"{example.name} {pipeline or '(parse and print)'}"
            compared += 1
            if ours[0] != 0:
                problems.append(f"{what}: zero-opt failed:\n{ours[2]}")
            if ours != theirs:
                for name, a, b in zip(("exit status", "stdout", "stderr"),
                                      ours, theirs):
                    if a != b:
                        problems.append(f"{what}: the {name} differs: "
                                        f"zero-opt {str(a)[:300]!r}, "
                                        f"mlir-opt {str(b)[:300]!r}")
    for problem in problems:
        print("FAIL:", problem)
    print(f"{compared} runs compared over {len(examples)} examples, "
          f"{len(problems)} differences")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
