# Compares `pinlearn sim` JSON files of the default learner and of --config configs/forecast-halflife-8.toml
# (named /tmp/simh/{default,halflife}-MACHINE-SESSION-WORKLOAD.json by the loop of docs/simulator.md
# "A forecast that ages, at scale"): learn / os and regret over the better of os and static per cell.
import json, glob, math, statistics as st, os
def load(cfg):
    cells = {}
    for f in sorted(glob.glob(f'/tmp/simh/{cfg}-*.json')):
        machine = os.path.basename(f)[len(cfg)+1:-5]
        t = {}
        for r in json.load(open(f))['runs']:
            t.setdefault((r['scenario'], r['scheduler']), []).append(r['completion_s'])
        for s in {k[0] for k in t}:
            m = lambda k: st.median(t[(s, k)])
            cells[(machine, s)] = (m('learn') / m('os'), m('learn') / min(m('os'), m('static')))
    return cells
d, h = load('default'), load('halflife')
common = sorted(set(d) & set(h))
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
for name, c in (('default', d), ('halflife 8', h)):
    lo = [c[k][0] for k in common]; rg = [c[k][1] for k in common]
    print(f"{name}: {len(common)} cells, learn/os gm {gm(lo):.4f}, >1.02x os {sum(x > 1.02 for x in lo)}, regret gm {gm(rg):.4f}, >1.05 {sum(x > 1.05 for x in rg)}, worst regret {max(rg):.3f}")
diff = sorted(((h[k][1] / d[k][1], k) for k in common))
print("best:", [(k, round(r, 3)) for r, k in diff[:5]])
print("worst:", [(k, round(r, 3)) for r, k in diff[-5:]])
print("cells >0.5 point better", sum(r < 0.995 for r, _ in diff), "worse", sum(r > 1.005 for r, _ in diff))
