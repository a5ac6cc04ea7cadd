#!/usr/bin/env python3
"""How long a job of an imported Hugging Face model takes before its first
step, and where it goes, per rank (issue 66 item 4).

Launches `python3 -m zero.run -n RANKS` of this file (--child), whose ranks
each time their phases: the interpreter's start, `import torch`, `import
zero`, `import transformers`, building the module (a fixed seed, nothing
downloaded), `zero.from_torch`, `compile`, `graph.trainer` (the lowering to
the runtime program, the executor's allocations and the initial state) and
the first step. The table gives, per phase, the median over repetitions of
the slowest rank's seconds, and the whole from launch to the end of the
first step.

    python3 bench/startup.py --markdown [--model llama-2l|gpt2-124m]
        [--ranks 2] [--repeats 3]

Models: llama-2l is examples/python/finetune.py's (a LlamaForCausalLM of 2
layers, width 64, vocabulary 256; 4 rows of 96 tokens with a mask),
gpt2-124m GPT2LMHeadModel's default config (2 rows of 128 tokens). Stage 3,
AdamW.

On a virtual machine, memory the guest has not touched since it booted is
slow to touch the first time (measured here: 3-12 s a GiB for the first
GiBs, 0.6 s a GiB after); the first repetitions after a boot pay it, and
the table's median is of the repetitions that follow. Needs torch and
transformers (scripts/setup-torch.sh) and the Python package on PYTHONPATH
(build/python).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PHASES = ["interpreter", "import torch", "import zero", "import transformers",
          "build module", "from_torch", "compile", "trainer", "first step"]


def child(model_name, launched):
    marks = [("interpreter", time.time())]
    import numpy as np
    import torch
    marks.append(("import torch", time.time()))
    import zero
    marks.append(("import zero", time.time()))
    import transformers
    marks.append(("import transformers", time.time()))
    torch.manual_seed(0)
    ranks = zero.world_size()
    generator = np.random.default_rng(0)
    if model_name == "llama-2l":
        module = transformers.LlamaForCausalLM(transformers.LlamaConfig(
            hidden_size=64, intermediate_size=172, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, vocab_size=256,
            max_position_embeddings=256, tie_word_embeddings=False,
            pad_token_id=0))
        rows, positions, with_mask = 4, 96, True
    else:
        module = transformers.GPT2LMHeadModel(
            transformers.GPT2Config(n_positions=128))
        rows, positions, with_mask = 2, 128, False
    marks.append(("build module", time.time()))
    ids = generator.integers(1, 256, (rows, positions)).astype(np.int64)
    example = {"input_ids": torch.from_numpy(ids[:rows // ranks])}
    batch = {"input_ids": ids, "labels": ids}
    if with_mask:
        example["attention_mask"] = torch.ones_like(example["input_ids"])
        batch["attention_mask"] = np.ones_like(ids)
    graph = zero.from_torch(module, example)
    marks.append(("from_torch", time.time()))
    graph.config.optimizer(zero.AdamW(lr=1e-3)).enable_zero(True, 3)
    compiled = graph.compile(ranks)
    marks.append(("compile", time.time()))
    trainer = graph.trainer(compiled)
    marks.append(("trainer", time.time()))
    trainer.step(batch)
    marks.append(("first step", time.time()))
    seconds, previous = {}, launched
    for name, when in marks:
        seconds[name] = when - previous
        previous = when
    seconds["total"] = previous - launched
    print("STARTUP " + json.dumps({"rank": zero.rank(), "seconds": seconds}),
          flush=True)


def run_once(model, ranks):
    env = dict(os.environ, ZERO_PROGRESS="0")
    launched = time.time()
    out = subprocess.run(
        [sys.executable, "-m", "zero.run", "-n", str(ranks),
         os.path.abspath(__file__), "--child", model, "--launched",
         repr(launched)], env=env, check=True, capture_output=True,
        text=True).stdout
    ranks_seen = [json.loads(line[len("STARTUP "):])["seconds"]
                  for line in out.splitlines() if line.startswith("STARTUP ")]
    if len(ranks_seen) != ranks:
        raise SystemExit(f"expected {ranks} ranks' figures, got:\n{out}")
    return {phase: max(rank[phase] for rank in ranks_seen)
            for phase in PHASES + ["total"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-2l",
                        choices=["llama-2l", "gpt2-124m"])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--launched", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.launched)
        return 0
    sys.path.insert(0, HERE)
    from benchlib import machine, table
    runs = [run_once(args.model, args.ranks) for _ in range(args.repeats)]
    rows = [[phase, f"{statistics.median(r[phase] for r in runs):.2f}",
             " ".join(f"{r[phase]:.2f}" for r in runs)]
            for phase in PHASES + ["total"]]
    print(f"{args.model}, {args.ranks} ranks, stage 3: seconds per phase "
          "(the slowest rank's; median and each repetition)")
    print(table(["phase", "median s", "runs"], rows, args.markdown))
    print(machine())
    return 0


if __name__ == "__main__":
    sys.exit(main())
