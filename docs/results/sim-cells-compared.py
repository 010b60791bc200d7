# Lists the cells of two sets of `pinlearn sim` JSON files side by side, the NEW set's worst learn / os first:
# learn / os and regret (completion over the better of os and the best fixed pin: static, or best-static where the set ran it) in both,
# and the best fixed pin / os in the new one.
# Files DIR/NAME-MACHINE-SESSION-WORKLOAD.json as the loop of docs/simulator.md writes them (SIM_DIR, default /tmp/simc).
# usage: python3 THIS BASE NEW [ROWS]
#        python3 THIS BASE NEW moved   (every cell whose learn median moved by more than 0.3%, NEW over BASE, fastest first)
import json, glob, os, statistics as st, sys
SIM_DIR = os.environ.get('SIM_DIR', '/tmp/simc')
def load(cfg):
    cells = {}
    for f in sorted(glob.glob(f'{SIM_DIR}/{cfg}-*.json')):
        machine = os.path.basename(f)[len(cfg) + 1:-5]
        if not machine[:1].isdigit():  # another set whose name starts with this one's
            continue
        t = {}
        for r in json.load(open(f))['runs']:
            t.setdefault((r['scenario'], r['scheduler']), []).append(r['completion_s'])
        for s in {k[0] for k in t}:
            pin = min(st.median(t[(s, k)]) for k in ('static', 'best-static') if (s, k) in t)
            cells[(machine, s)] = (st.median(t[(s, 'os')]), pin, st.median(t[(s, 'learn')]))
    return cells
base, new = load(sys.argv[1]), load(sys.argv[2])
rows = []
for k in sorted(set(base) & set(new)):
    (o, s, l), (o0, s0, l0) = new[k], base[k]
    rows.append((l / o, k, l0 / o0, l / min(o, s), l0 / min(o0, s0), s / o))
if sys.argv[3:4] == ['moved']:
    moved = sorted((new[k][2] / base[k][2], k) for k in set(base) & set(new))
    for ratio, k in moved:
        if abs(ratio - 1) > 0.003:
            (o, s, l), (o0, s0, l0) = new[k], base[k]
            print("%-28s %-4s new/base %.3f  learn/os %.3f->%.3f regret %.3f->%.3f"
                  % (k[0], k[1], ratio, l0 / o0, l / o, l0 / min(o0, s0), l / min(o, s)))
    sys.exit()
rows.sort(reverse=True)
print(f"cell  learn/os ({sys.argv[2]}, {sys.argv[1]})  regret ({sys.argv[2]}, {sys.argv[1]})  pin/os ({sys.argv[2]})")
for r in rows[:int(sys.argv[3]) if len(sys.argv) > 3 else 12]:
    print("%-28s %-4s %.3f %.3f  %.3f %.3f  %.3f" % (r[1][0], r[1][1], r[0], r[2], r[3], r[4], r[5]))
