# The cells where the learner pins (Linux placed under half the periods, median over seeds) and, of
# those, the ones whose final assignment's L/L* (median over seeds) is above 1.05, per set of
# `pinlearn sim` JSON files the loop of docs/simulator.md writes (/tmp/simc/NAME-MACHINE-SESSION-WORKLOAD.json).
# usage: python3 THIS NAME [NAME...]
import json,glob,os,statistics as st,sys
def load(n):
    out={}
    for f in glob.glob(f'/tmp/simc/{n}-*.json'):
        m=os.path.basename(f)[len(n)+1:-5]
        if not m[:1].isdigit(): continue
        t={}
        for r in json.load(open(f))['runs']:
            if r['scheduler']!='learn': continue
            t.setdefault(r['scenario'],[]).append(r)
        for s,rs in t.items():
            share=st.median([r['os_share'] or 0 for r in rs]); ll=st.median([r['makespan_ratio'] for r in rs if r['makespan_ratio'] is not None] or [float('nan')])
            out[(m,s)]=(share,ll)
    return out
for n in sys.argv[1:]:
    c=load(n); pins=[k for k,(sh,ll) in c.items() if sh<0.5]
    bad=sorted([(c[k][1],k) for k in pins if c[k][1]>1.05],reverse=True)
    print(n,'pins',len(pins),'L/L*>1.05',len(bad)); print('  ',[(round(x,2),k[0],k[1]) for x,k in bad])
