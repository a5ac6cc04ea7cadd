#!/usr/bin/env python3
"""Prints `N passed, N failed[, N skipped]` from JUnit/xunit XML files (lit's
and scripts/fuzz.sh's) and exits non-zero when any test failed, a file is
missing (a run that did not finish is not a pass) or nothing passed.

usage: summarize_tests.py [--label NAME=RESULTS.xml ...] [RESULTS.xml ...]
                          [--sanitizer-reports DIR]

With several files, one line per file comes first, then the total. Every
file under --sanitizer-reports (ASan/UBSan/LSan reports written through
log_path by a ZERO_SANITIZE build's tests) counts as one failure and is
printed: a report inside a test that expected a failure is still a failure.

Before the summary line, every failed test is named with its file's label
and the last lines of its output (FAILED_TAIL_LINES), so that the end of a
long run says what failed without scrolling back to the stage.
"""

import argparse
import os
import sys
import xml.etree.ElementTree as ElementTree


FAILED_TAIL_LINES = 15


def count(path, failures):
    """(passed, failed, skipped) of one results file; a missing or broken
    file is one failure. Appends (test name, its output's last lines) of
    each failed test to `failures`."""
    try:
        tree = ElementTree.parse(path)
    except (OSError, ElementTree.ParseError) as error:
        print("no test results in %s (%s)" % (path, error))
        failures.append((path, ["no test results (%s)" % error]))
        return 0, 1, 0
    passed = failed = skipped = 0
    for case in tree.iter("testcase"):
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        if failure is not None:
            failed += 1
            name = "%s :: %s" % (case.get("classname", ""), case.get("name", ""))
            text = (failure.text or "").rstrip().splitlines()
            if failure.get("message"):
                text.append(failure.get("message"))
            failures.append((name, text[-FAILED_TAIL_LINES:]))
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def line(passed, failed, skipped):
    text = "%d passed, %d failed" % (passed, failed)
    if skipped:
        text += ", %d skipped" % skipped
    return text


def sanitizer_reports(directory):
    if not directory or not os.path.isdir(directory):
        return []
    reports = sorted(
        os.path.join(directory, name) for name in os.listdir(directory)
    )
    for report in reports:
        print("sanitizer report %s:" % report)
        with open(report, errors="replace") as f:
            text = f.read()
        print("\n".join(text.splitlines()[:60]))
    return reports


def main():
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("results", nargs="*")
    parser.add_argument("--label", action="append", default=[])
    parser.add_argument("--sanitizer-reports")
    args = parser.parse_args()
    files = [(os.path.basename(p), p) for p in args.results]
    for labelled in args.label:
        name, _, path = labelled.partition("=")
        files.append((name, path))
    if not files:
        parser.print_usage()
        return 2
    total = [0, 0, 0]
    failures = []
    for name, path in files:
        failed_here = []
        figures = count(path, failed_here)
        failures += [("%s: %s" % (name, test), tail) for test, tail in failed_here]
        if len(files) > 1:
            print("%s: %s" % (name, line(*figures)))
        total = [a + b for a, b in zip(total, figures)]
    reports = sanitizer_reports(args.sanitizer_reports)
    if reports:
        print("sanitizer reports: %d (each counted as a failure)" % len(reports))
        total[1] += len(reports)
    if failures:
        print("== failed: %d" % len(failures))
        for test, tail in failures:
            print("FAILED %s" % test)
            for text in tail:
                print("    " + text)
    print(line(*total))
    return 1 if total[1] or total[0] == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
