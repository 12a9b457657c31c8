#!/usr/bin/env python3
"""Groups the requests of a kube-sim log into waves: what a client sent together.

With every request delayed (a fault rule `[{"latencyMs": 50}]` passed with
`kube-sim --faults`), requests that wait on each other arrive at least that far apart,
while requests sent side by side arrive within a few milliseconds: each wave is one
round trip on the critical path, and its lines say what could go out together.

    KUBE_SIM_LOG=debug kube-sim --kubeconfig-out kc --faults faults.json 2> sim.log
    scripts/request-waves.py sim.log [--window-ms 20]
"""

import argparse
import datetime
import re

LINE = re.compile(r"(\S+) DEBUG kube_sim::http: request method=(\w+) uri=(\S+)")


def requests(path):
    with open(path, errors="replace") as log:
        for line in log:
            m = LINE.match(line.replace("\x00", ""))
            if not m:
                continue
            stamp = datetime.datetime.fromisoformat(m.group(1).replace("Z", "+00:00"))
            uri = m.group(3)
            label = m.group(2) + " " + uri.split("?")[0]
            if "dryRun" in uri:
                label += " (dryRun)"
            yield stamp.timestamp(), label


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log")
    parser.add_argument("--window-ms", type=float, default=20.0,
                        help="requests this close to a wave's first one join it")
    args = parser.parse_args()
    waves = []
    for t, label in requests(args.log):
        if waves and (t - waves[-1][0]) * 1000 < args.window_ms:
            waves[-1][1].append(label)
        else:
            waves.append((t, [label]))
    if not waves:
        print("no requests in the log (was it written with KUBE_SIM_LOG=debug?)")
        return
    start = waves[0][0]
    for i, (t, labels) in enumerate(waves, 1):
        print(f"{i:4d} +{(t - start) * 1000:8.0f} ms | " + " ; ".join(labels))
    print(f"{sum(len(l) for _, l in waves)} requests, {len(waves)} waves")


if __name__ == "__main__":
    main()
