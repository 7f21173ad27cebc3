# Stalled calls (period >= 5x median) of the trace against scheduling delays (perf sched timehist)
import json,sys,glob,re,statistics
from collections import defaultdict
d=sys.argv[1]; algo=sys.argv[2] if len(sys.argv)>2 else 'hier_rd'
starts=defaultdict(list)
for p in glob.glob(d+'/t.rank*.json'):
    for e in json.load(open(p)):
        if e.get('ph')=='X' and e['cat']=='call' and e['name'].endswith(algo):
            starts[e['args']['seq']].append(e['ts'])
seqs=sorted(s for s in starts if len(starts[s])==6)
calls=[(seqs[i],min(starts[seqs[i]])/1e6,min(starts[seqs[i+1]])/1e6) for i in range(len(seqs)-1) if seqs[i+1]-seqs[i]<=2]
per=[b-a for _,a,b in calls]; med=statistics.median(per)
# delays: (task, cpu, wake, run)
delays=[]
for line in open(d+'/timehist.txt'):
    f=line.split()
    if len(f)<6 or not f[0][0].isdigit(): continue
    try: t=float(f[0]); cpu=f[1]; task=f[2]; sd=float(f[-2])/1e3; rt=float(f[-1])/1e3
    except: continue
    if not ('chorus-perf' in task or 'ksoftirqd' in task): continue
    run=t-rt; delays.append((task,cpu,run-sd,run))
def worst(a,b,kind):
    m=0
    for task,cpu,w,r in delays:
        if kind not in task: continue
        o=min(b,r)-max(a,w)
        if o>m: m=o
    return m*1e3
rows=[]
for seq,a,b in calls:
    rows.append((b-a>=5*med, (b-a)*1e3, worst(a,b,'ksoftirqd'), worst(a,b,'chorus-perf')))
print('median period %.2f ms, %d calls, %d stalled'%(med*1e3,len(calls),sum(r[0] for r in rows)))
for st in (True,False):
    sel=[r for r in rows if r[0]==st]
    if not sel: continue
    ks=[r[2] for r in sel]; cp=[r[3] for r in sel]
    ex=[r[1]-med*1e3 for r in sel]
    cover=sum(1 for r in sel if max(r[2],r[3])>=0.5*(r[1]-med*1e3))
    print('%s: n=%d  period median %.1f ms; ksoftirqd delay overlap median %.2f max %.1f; rank delay overlap median %.2f max %.1f; calls whose excess is >=50%% covered by one delay: %d'%(
        'stalled' if st else 'normal ',len(sel),statistics.median([r[1] for r in sel]),statistics.median(ks),max(ks),statistics.median(cp),max(cp),cover))
if len(sys.argv)>3:
    for r in rows:
        if r[0]: print('  period %.1f ms  ksoftirqd %.1f  rank %.1f'%(r[1],r[2],r[3]))
