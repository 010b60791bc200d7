# The table of docs/simulator.md per machine: every scheduler of the loops (docs/results/sim-loops.sh) against the modelled
# Linux, and the regret over the better of Linux and the best fixed pin (the round-robin pin or `best-static`, whichever is
# faster in the cell), with the papers' learner from a second run of the loops under --config configs/papers-learner.toml.
# usage: python3 THIS DIR DEFAULT_NAME PAPERS_NAME    (DIR: /tmp/simc, the 160 cells; /tmp/sims, the 40 spinning ones)
import json, glob, os, sys, statistics as st, math
d, default, papers = sys.argv[1:4]
MACHINES = {'2x14-same': '2x14, 40 threads, load in the program\'s session', '2x14-own': '2x14, 40 threads, load in its own session',
            '4x8-own': '4x8, 40 threads, own session', '8x32-own': '8x32, 256 threads, own session'}
def cells(name):
    out = {}
    for f in glob.glob(f'{d}/{name}-*.json'):
        tail = os.path.basename(f)[len(name) + 1:-5]
        machine = next((m for m in MACHINES if tail.startswith(m)), None)
        if machine is None: continue
        t = {}
        for r in json.load(open(f))['runs']:
            t.setdefault((r['scenario'], r['scheduler']), []).append(r['completion_s'])
        for (s, sch), v in t.items():
            out[(machine, tail, s, sch)] = st.median(v)
    return out
a, b = cells(default), cells(papers)
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
print('| machine | scheduler | vs os, geometric mean | worst | cells > 1.02x os | regret, geometric mean | worst | cells > 1.05 |')
print('|---|---|---:|---:|---:|---:|---:|---:|')
for machine, label in MACHINES.items():
    keys = sorted({(k[1], k[2]) for k in a if k[0] == machine})
    if not keys: continue
    rows = [('`static`', a, 'static'), ('`best-static`', a, 'best-static'),
            ("papers' learner (`configs/papers-learner.toml`)", b, 'learn'), ('**learn (default)**', a, 'learn')]
    for i, (name, src, sch) in enumerate(rows):
        vs, regrets = [], []
        for cell in keys:
            os_t = src[(machine,) + cell + ('os',)]
            pin = min(a[(machine,) + cell + ('static',)], a[(machine,) + cell + ('best-static',)])
            t = src[(machine,) + cell + (sch,)]
            vs.append(t / os_t); regrets.append(t / min(a[(machine,) + cell + ('os',)], pin))
        n = len(keys)
        print(f"| {label if i == 0 else ''} | {name} | {gm(vs):.3f} | {max(vs):.2f} | {sum(v > 1.02 for v in vs)} of {n} | "
              f"{gm(regrets):.3f} | {max(regrets):.2f} | {sum(r > 1.05 for r in regrets)} of {n} |")
