# How noisy a real bench matrix was: per file, how many no-load cells (X.1, where every scheduler
# should be level with Linux) have a paired median ratio more than 10 points from 1, the median width
# of the paired ratios' range (max - min over repeats, static and learn), and Linux's own runs of a
# cell, slowest over fastest (median over cells, and the largest).
# usage: python3 docs/results/bench-spread.py BENCH.json [MORE.json ...]
import json, statistics as st, sys
for f in sys.argv[1:]:
    d = json.load(open(f)); cells = {}
    for r in d['runs']:
        if r['completion_s'] is None: continue
        cells.setdefault((r['workload'], r['scenario']), {}).setdefault(r['scheduler'], {})[r['repeat']] = r['completion_s']
    unloaded, widths, linux = [], [], []
    for (w, s), v in cells.items():
        for sch in ('static', 'learn'):
            rs = [v[sch][k] / v['os'][k] for k in v.get(sch, {}) if k in v['os']]
            if not rs: continue
            widths.append(max(rs) - min(rs))
            if s.endswith('.1'): unloaded.append(abs(st.median(rs) - 1))
        t = list(v['os'].values()); linux.append(max(t) / min(t))
    print(f"{f} ({d['setup']['date']}, last-level cache {d['setup'].get('last_level_cache_mib')} MiB): "
          f"X.1 ratios more than 10 points from 1: {sum(x > 0.10 for x in unloaded)} of {len(unloaded)}; "
          f"paired range width, median {st.median(widths):.3f}; Linux slowest/fastest run of a cell, "
          f"median {st.median(linux):.3f}, largest {max(linux):.2f}")
