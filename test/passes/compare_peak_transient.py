#!/usr/bin/env python3
"""Compare the peak transient bytes of two zero-report JSON reports.

Used by train-autodiff-recompute-report.test: the step whose backward
recomputes the marked activations must need less transient memory than the
same step that keeps them. Prints both figures and the saving so FileCheck
can check the verdict.

  compare_peak_transient.py RECOMPUTED.json KEPT.json
"""

import json
import sys


def peak(path):
    with open(path) as f:
        return json.load(f)["per_rank"]["peak_transient_bytes"]


def main():
    recomputed, kept = peak(sys.argv[1]), peak(sys.argv[2])
    verdict = "lower" if recomputed < kept else "NOT lower"
    print("peak transient %s with recompute: %d B vs %d B (%.1f%% saved)" % (
        verdict, recomputed, kept, 100.0 * (kept - recomputed) / kept))
    return 0 if recomputed < kept else 1


if __name__ == "__main__":
    sys.exit(main())
