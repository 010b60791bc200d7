"""The long matrix of one `pinlearn bench --json` run against an earlier one: per cell the medians,
learn / os paired by repeat (median, min..max), the regret (learn's median over the better of the
os and static medians), the median share of periods the guard left to Linux, and the earlier run's
regret; then the geometric means, the misses of issue 12's 1.05, and where Linux is right (the
pin's median slower than os's) how many cells keep learn within 1.02x of os (paired).

    python3 docs/results/long-matrix-compare-2026-11-28.py NEW.json EARLIER.json

Either side may be several runs joined by '+' (A.json+B.json): a cell of a later file replaces the
same cell of an earlier one, so the matrix can be pieced together from runs of parts of it.
"""
import json, sys, math, statistics as st
def load(files):
    t = {}
    share = {}
    runs = []
    for f in files.split('+'):
        part = [r for r in json.load(open(f))['runs'] if r.get('completion_s') is not None]
        cells = {(r['workload'], r['scenario']) for r in part}
        runs = [r for r in runs if (r['workload'], r['scenario']) not in cells] + part
    for r in runs:
        t.setdefault((r['workload'], r['scenario'], r['scheduler']), {})[r['repeat']] = r['completion_s']
        if r['scheduler'] == 'learn' and r.get('os_share') is not None:
            share.setdefault((r['workload'], r['scenario']), []).append(r['os_share'])
    return t, share
new, share = load(sys.argv[1]); old, _ = load(sys.argv[2])
cells = sorted({(w, s) for (w, s, _) in new})
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
regs, los, oregs = [], [], []
right = []
print('| workload | scenario | os s | static s | learn s | learn / os, paired [min..max] | regret | OS-placed | regret earlier |')
print('|---|---|---:|---:|---:|---:|---:|---:|---:|')
for w, s in cells:
    m = lambda d, k: st.median(d[(w, s, k)].values()) if (w, s, k) in d else None
    os_, stc, lrn = m(new, 'os'), m(new, 'static'), m(new, 'learn')
    pr = [new[(w, s, 'learn')][k] / new[(w, s, 'os')][k] for k in new[(w, s, 'learn')] if k in new[(w, s, 'os')]]
    reg = lrn / min(os_, stc)
    oreg = None
    if (w, s, 'os') in old:
        oreg = m(old, 'learn') / min(m(old, 'os'), m(old, 'static'))
        oregs.append(oreg)
    regs.append(reg); los.append(st.median(pr))
    if stc > os_: right.append((w, s, st.median(pr), lrn / os_))
    osh = st.median(share.get((w, s), [float('nan')]))
    print(f"| {w} | {s} | {os_:.2f} | {stc:.2f} | {lrn:.2f} | {st.median(pr):.3f} [{min(pr):.3f}..{max(pr):.3f}] | {reg:.2f} | {osh:.0%} | {oreg:.2f} |" if oreg else f"| {w} | {s} | {os_:.2f} | {stc:.2f} | {lrn:.2f} | {st.median(pr):.3f} | {reg:.2f} | {osh:.0%} | - |")
print()
print(f"cells {len(cells)}: regret gm {gm(regs):.3f} (earlier {gm(oregs):.3f}), <=1.05 in {sum(r <= 1.05 for r in regs)}; learn/os paired gm {gm(los):.3f}")
print(f"misses: {[(w, s, round(r, 2)) for (w, s), r in zip(cells, regs) if r > 1.05]}")
print(f"Linux right (static slower than os): {len(right)} cells; learn/os paired <=1.02 in {sum(p <= 1.02 for *_, p, _ in right)}: {[(w, s, round(p, 3), round(q, 3)) for w, s, p, q in right]}")
