#!/usr/bin/env python3
"""Prints `N passed, N failed[, N skipped]` from lit's xunit XML and exits
non-zero when any test failed or the file is missing (a run that did not
finish is not a pass)."""

import sys
import xml.etree.ElementTree as ElementTree


def main():
    if len(sys.argv) != 2:
        print("usage: summarize_tests.py RESULTS.xml")
        return 2
    try:
        tree = ElementTree.parse(sys.argv[1])
    except (OSError, ElementTree.ParseError) as error:
        print("no test results (%s)" % error)
        print("0 passed, 1 failed")
        return 1
    passed = failed = skipped = 0
    for case in tree.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    line = "%d passed, %d failed" % (passed, failed)
    if skipped:
        line += ", %d skipped" % skipped
    print(line)
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
