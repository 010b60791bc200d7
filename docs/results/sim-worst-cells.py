# The cells of one set of `pinlearn sim` JSON files (DIR/NAME-MACHINE-....json, docs/results/sim-loops.sh) by regret over the better of Linux
# and the best fixed pin (the round-robin pin, or `best-static`, the load model's optimum, where the set ran it), worst first, with the
# set's geometric means; where `best-static` ran, the regret over Linux and the round-robin pin alone too. usage: [N=12] python3 THIS DIR NAME
import json,glob,os,sys,statistics as st,math
d,name=sys.argv[1],sys.argv[2]
rows=[]
for f in sorted(glob.glob(f'{d}/{name}-*.json')):
    m=os.path.basename(f)[len(name)+1:-5]
    if not m[:1].isdigit(): continue
    t={}
    for r in json.load(open(f))['runs']:
        t.setdefault((r['scenario'],r['scheduler']),[]).append(r['completion_s'])
    for s in sorted({k[0] for k in t}):
        o=st.median(t[(s,'os')]);p=st.median(t[(s,'static')]);l=st.median(t[(s,'learn')])
        b=st.median(t[(s,'best-static')]) if (s,'best-static') in t else None
        pin=p if b is None else min(p,b)
        rows.append((m,s,l/o,p/o,None if b is None else b/o,l/min(o,p),l/min(o,pin)))
gm=lambda xs: math.exp(sum(map(math.log,xs))/len(xs))
best=all(r[4] is not None for r in rows)
line=f"{len(rows)} cells learn/os {gm([r[2] for r in rows]):.4f} regret {gm([r[6] for r in rows]):.4f} >1.05: {sum(r[6]>1.05 for r in rows)} >1.02os: {sum(r[2]>1.02 for r in rows)}"
if best:
    line+=f" (over the round-robin pin alone: regret {gm([r[5] for r in rows]):.4f} >1.05: {sum(r[5]>1.05 for r in rows)})"
print(line)
for r in sorted(rows,key=lambda r:-r[6])[:int(os.environ.get('N','12'))]:
    extra='' if r[4] is None else f" best-static/os {r[4]:.3f}"
    print(f"  {r[0]:24s} {r[1]:4s} learn/os {r[2]:.3f} pin/os {r[3]:.3f}{extra} regret {r[6]:.3f}")
