# Counts the cells where the round-robin pin beats Linux by 15% or more (static / os <= 0.85, medians) and those of them where
# the learner does too (learn / os <= 0.85): issue 13's target. Files DIR/NAME-MACHINE-....json as the loops of docs/simulator.md write
# them; usage: python3 THIS DIR NAME
import json, glob, os, sys, statistics as st
d, name = sys.argv[1], sys.argv[2]
tot = hit = 0; miss = []
for f in sorted(glob.glob(f'{d}/{name}-*.json')):
    m = os.path.basename(f)[len(name)+1:-5]
    if not m[:1].isdigit(): continue
    t = {}
    for r in json.load(open(f))['runs']:
        t.setdefault((r['scenario'], r['scheduler']), []).append(r['completion_s'])
    for s in sorted({k[0] for k in t}):
        os_ = st.median(t[(s, 'os')]); so = st.median(t[(s, 'static')]) / os_; lo = st.median(t[(s, 'learn')]) / os_
        if so <= 0.85:
            tot += 1; hit += lo <= 0.85
            if lo > 0.85: miss.append((m, s, round(lo, 3), round(so, 3)))
print(f"{name}: pin <= 0.85 of Linux in {tot} cells, learn <= 0.85 in {hit}; misses {miss}")
