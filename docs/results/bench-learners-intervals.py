# Reads the run lines `scripts/bench-learners` prints to stderr (saved as a .log) and gives, per case,
# each mode's spread over the repeats (slowest / fastest) and the paired ratios' median with the
# sign-test interval: the order statistics that hold the median with at least 90% (n >= 5), and how many
# repeats would pin the ratio to +-1% at the spread of its log.
# Logs from before 2026-12-07 carry no guard share between the time and the workload; both are read.
# usage: python3 docs/results/bench-learners-intervals.py FILE.log
import math, statistics as st, sys

def interval(n):
    """The largest k (the narrowest interval) with P(X(k) <= median <= X(n+1-k)) >= 0.9, and that probability."""
    best = None
    for k in range(1, n // 2 + 1):
        p = 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n
        if p >= 0.9:
            best = (k, p)
    return best

times = {}
for line in open(sys.argv[1]):
    parts = line.rstrip("\n").split(" ", 5)
    if len(parts) < 6 or parts[0] not in ("idle", "load", "late", "moving"):
        continue
    load, threads, repeat, mode, secs, rest = parts
    share, _, name = rest.partition(" ")
    try:
        if share != "-":
            float(share)
    except ValueError:  # an older log: the workload follows the time
        name = rest
    times.setdefault((name, load, threads), {}).setdefault(mode, {})[int(repeat)] = float(secs)
for (name, load, threads), modes in times.items():
    print(f"{name} ({load}, {threads} threads)")
    for mode, runs in modes.items():
        v = list(runs.values())
        print(f"  {mode:5} median {st.median(v):.2f} s, slowest / fastest {max(v) / min(v):.3f}")
    for a, b in (("learn", "os"), ("alt", "os"), ("learn", "alt")):
        ratios = sorted(modes[a][r] / modes[b][r] for r in modes[a] if r in modes[b])
        found = interval(len(ratios))
        if found is None:
            print(f"  {a} / {b}: median {st.median(ratios):.3f} (too few repeats for an interval)")
            continue
        k, p = found
        # The spread of the paired log-ratios, and the repeats a normal approximation needs for a 95%
        # interval of +-1% at that spread.
        sd = st.stdev(math.log(r) for r in ratios)
        print(f"  {a} / {b}: median {st.median(ratios):.3f} [{ratios[k - 1]:.3f}..{ratios[-k]:.3f}] ({100 * p:.1f}%), "
              f"log-ratios' sd {sd:.3f}: about {(1.96 * sd / 0.01) ** 2:.0f} repeats for +-1%")
