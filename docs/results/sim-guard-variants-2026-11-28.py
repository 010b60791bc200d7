# Compares `pinlearn sim` JSON files of the guard's variants with the default's, cell by cell (learn / os and regret over
# the better of os and static): files /tmp/simh/NAME-MACHINE-SESSION-WORKLOAD.json written by the loop of docs/simulator.md
# "A second chance on Linux's blind spot, at scale" (default, halflife, blind8, blind4, retry4, retry4-blind4); usage: python3 THIS NAME ...
# (SIM_DIR=DIR reads DIR/NAME-MACHINE-SESSION-WORKLOAD.json instead: the loop of "Linux's probes as the load moves";
# BASE=NAME compares with NAME's files instead of default's.)
import json, glob, math, statistics as st, os, sys
SIM_DIR = os.environ.get('SIM_DIR', '/tmp/simh')
def load(cfg):
    cells = {}
    for f in sorted(glob.glob(f'{SIM_DIR}/{cfg}-*.json')):
        machine = os.path.basename(f)[len(cfg)+1:-5]
        if not machine[:1].isdigit():  # another variant's file (retry4-blind4-... for retry4)
            continue
        t = {}
        for r in json.load(open(f))['runs']:
            t.setdefault((r['scenario'], r['scheduler']), []).append(r['completion_s'])
        for s in {k[0] for k in t}:
            m = lambda k: st.median(t[(s, k)])
            cells[(machine, s)] = (m('learn') / m('os'), m('learn') / min(m('os'), m('static')))
    return cells
base = load(os.environ.get('BASE', 'default'))
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
for cfg in sys.argv[1:]:
    h = load(cfg)
    common = sorted(set(base) & set(h))
    for name, c in ((os.environ.get('BASE', 'default'), base), (cfg, h)):
        lo = [c[k][0] for k in common]; rg = [c[k][1] for k in common]
        print(f"{name}: {len(common)} cells, learn/os gm {gm(lo):.4f}, >1.02x os {sum(x > 1.02 for x in lo)}, regret gm {gm(rg):.4f}, >1.05 {sum(x > 1.05 for x in rg)}, worst regret {max(rg):.3f}")
    diff = sorted(((h[k][1] / base[k][1], k) for k in common))
    print(" best:", [(k, round(r, 3)) for r, k in diff[:6]])
    print(" worst:", [(k, round(r, 3)) for r, k in diff[-6:]])
    print(" cells >0.5% better", sum(r < 0.995 for r, _ in diff), "worse", sum(r > 1.005 for r, _ in diff))
