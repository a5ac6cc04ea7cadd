#!/usr/bin/env python3
"""Compare the loss traces of two zero-run --metrics-json files.

Used by the autodiff tests: a step whose backward train-autodiff generated
must train like the same step with the backward written by hand. The
generated backward has the same ops, operands and order of summation as the
hand-written ones in examples/, so the traces are expected to be bitwise
equal; the check allows 1e-6 relative so that a rule rewritten to an
equivalent formula (other rounding) is not a failure, and says which it is.

  compare_losses.py A.json B.json [--rtol 1e-6]
"""

import argparse
import json
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--rtol", type=float, default=1e-6)
    args = parser.parse_args()
    with open(args.a) as f:
        a = json.load(f)["losses"]
    with open(args.b) as f:
        b = json.load(f)["losses"]
    if len(a) != len(b) or not a:
        print("FAIL: %d and %d losses" % (len(a), len(b)))
        return 1
    worst = 0.0
    for step, (x, y) in enumerate(zip(a, b), 1):
        error = abs(x - y) / max(abs(x), abs(y), 1e-30)
        worst = max(worst, error)
        if error > args.rtol:
            print("FAIL: step %d: loss %r vs %r (relative error %.3g > %g)" % (
                step, x, y, error, args.rtol))
            return 1
    print("%d losses equal within %g relative (%s)" % (
        len(a), args.rtol, "bitwise" if a == b else "worst %.3g" % worst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
