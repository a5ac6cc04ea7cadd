"""The architecture zoo (test/torch/zoo.py) against PyTorch's training.

  check_zoo.py --stage S [--steps N] [--markdown] [NAME ...]

Each architecture (all of the zoo by default) is imported and trained at
ZeRO stage S on this job's ranks with AdamW and with plain SGD, next to
PyTorch's own training of the same module on the same padded batches, and
held to check_torch_import.check: losses within 1e-5, every parameter (with
SGD, every parameter's update) within its bound of a float64 training.

Prints per architecture and optimizer the largest loss error and the worst
parameter's share of its bound; an architecture the importer refuses is
reported with the refusal. Exits non-zero if any comparison fails or any
architecture is refused: the zoo lists what must work.
"""

import argparse
import sys
import time

import torch

import check_torch_import
import zero
import zoo

OPTIMIZERS = ("adamw", "sgd")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stage", type=int, required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    torch.set_num_threads(1)  # one thread per rank, as ours
    names = args.names or list(zoo.ZOO)
    unknown = [name for name in names if name not in zoo.ZOO]
    if unknown:
        raise SystemExit(f"check_zoo: no architecture {unknown} in zoo.py")
    rows, failed = [], []
    for name in names:
        start = time.time()
        cells = []
        for opt in OPTIMIZERS:
            try:
                loss_error, worst = check_torch_import.check(
                    f"zoo:{name}", args.steps, [args.stage], opt)
                cells.append(f"{loss_error:.1e} / {worst:.2f}")
            except zero.torch.UnsupportedModuleError as error:
                cells.append(f"refused: {error}")
                failed.append(name)
                break
            except AssertionError as error:
                cells.append(f"WRONG: {error}")
                failed.append(name)
        rows.append((name, cells, time.time() - start))
    if zero.rank() != 0:
        return 1 if failed else 0
    ranks = zero.world_size()
    for name, cells, seconds in rows:
        print(f"zoo {name} N={ranks} stage {args.stage}: "
              + "; ".join(f"{opt} {cell}"
                          for opt, cell in zip(OPTIMIZERS, cells))
              + f" ({seconds:.0f} s)", flush=True)
    if args.markdown:
        print(f"\n| architecture | {' | '.join(OPTIMIZERS)} |")
        print("|---|" + "---|" * len(OPTIMIZERS))
        for name, cells, _ in rows:
            print(f"| {name} | {' | '.join(cells)} |")
    print(f"zoo N={ranks} stage {args.stage}: {len(rows) - len(set(failed))} "
          f"of {len(rows)} architectures match PyTorch", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
