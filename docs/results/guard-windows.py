# The guard's windows of `pinlearn run --trace` files (or `pinlearn sim --trace`), one line each: the arm that placed them, when they began,
# their periods, the mean progress the guard scored and the first six, and the first places. usage: python3 THIS TRACE.csv ...
import csv,sys,statistics as st
from collections import OrderedDict
for path in sys.argv[1:]:
    per=OrderedDict()
    for row in csv.DictReader(open(path)):
        p=int(row['period'])
        e=per.setdefault(p,{'arm':row['arm'],'progress':row['progress'],'t':float(row['time_s']),'places':[]})
        e['places'].append(row['place'])
    ps=list(per)
    wins=[]
    for k in range(1,len(ps)):
        placed=per[ps[k-1]]['arm']; pr=per[ps[k]]['progress']
        pr=float(pr) if pr not in ('',None) else None
        if not wins or wins[-1][0]!=placed: wins.append([placed,per[ps[k]]['t'],[],[]])
        wins[-1][2].append(pr); wins[-1][3].append(' '.join(per[ps[k]]['places']))
    print(path, len(ps),'periods; os placed',sum(len(w[2]) for w in wins if w[0]=='os'))
    for a,t,prs,pl in wins:
        v=[x for x in prs if x is not None]
        print(f"  {a:5s} t={t:6.2f} n={len(prs):3d} mean={st.mean(v) if v else float('nan'):8.3f} first={[round(x,2) if x else x for x in prs[:6]]} places={pl[:3]}")
