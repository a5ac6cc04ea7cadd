"""Checks that zero-pipeline's fit alternatives are planned, not guessed:
each one's peak device memory and step time equal those of the report of a
run with that change made (test/passes/zero-pipeline-predict.test).

    check_fit_alternatives.py REPORT.json CHANGE@DIRECT.json ...

CHANGE with commas for spaces (stage=3,offload=optimizer+params).
"""

import json
import sys


def main():
    report = json.load(open(sys.argv[1]))
    alternatives = {a["change"]: a for a in report["fit_alternatives"]}
    for pair in sys.argv[2:]:
        change, _, path = pair.rpartition("@")
        change = change.replace(",", " ")
        direct = json.load(open(path))["prediction"]
        mine = alternatives[change]
        if (mine["peak_device_bytes"] != direct["peak_device_bytes"]
                or mine["step_seconds"] != direct["step_seconds"]):
            sys.exit(f"{change}: the alternative predicts "
                     f"{mine['peak_device_bytes']} B, "
                     f"{mine['step_seconds']} s; the run with it "
                     f"{direct['peak_device_bytes']} B, "
                     f"{direct['step_seconds']} s")
        print(f"{change}: as planned: {mine['peak_device_bytes']} B, "
              f"fits {mine['fits']}")


if __name__ == "__main__":
    main()
