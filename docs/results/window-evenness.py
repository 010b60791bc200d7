#!/usr/bin/env python3
"""How evenly each guard window shares the CPU among a run's threads.

usage: python3 docs/results/window-evenness.py TRACE.csv [FROM_S TO_S]

Reads a trace of `pinlearn sim --trace` or `pinlearn run --trace` (its time_s, arm and share
columns), splits the periods into windows of one arm in a row, and prints per window of at least
six periods: its arm, start, length, the mean over its periods (the first left out) of the slowest
tenth of the threads' run shares over their mean, and of the shares' coefficient of variation.
"""
import collections
import csv
import statistics
import sys

path = sys.argv[1]
start, end = (float(sys.argv[2]), float(sys.argv[3])) if len(sys.argv) > 3 else (0.0, float("inf"))
shares = collections.defaultdict(list)
arm = {}
for row in csv.DictReader(open(path)):
    if row["share"]:
        shares[row["time_s"]].append(float(row["share"]))
        arm[row["time_s"]] = row["arm"]
windows = []
for t in sorted(shares, key=float):
    if not windows or windows[-1][0] != arm[t]:
        windows.append((arm[t], t, []))
    v = shares[t]
    mean = statistics.mean(v)
    slowest = sorted(v)[: max(len(v) // 10, 1)]
    windows[-1][2].append((statistics.mean(slowest) / mean, statistics.pstdev(v) / mean))
for name, t, periods in windows:
    if start <= float(t) <= end and len(periods) >= 6:
        rest = periods[1:]
        print(f"{name:5s} t={float(t):7.2f} n={len(periods):4d} "
              f"slowest-tenth/mean {statistics.mean(p[0] for p in rest):.2f} "
              f"cv {statistics.mean(p[1] for p in rest):.2f}")
