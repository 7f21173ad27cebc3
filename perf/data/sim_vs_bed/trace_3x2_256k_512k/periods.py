import json,sys,glob,re,statistics,csv
from collections import defaultdict
prefix=sys.argv[1]; simcsvs=sys.argv[2:]
sim={}
for f in simcsvs:
    for r in csv.reader(open(f)):
        if r[0]=='collective': continue
        sim[(r[3],int(r[4]))]=float(r[5])
calls=defaultdict(dict)
for p in sorted(glob.glob(prefix+'.rank*.json')):
    if not re.search(r'\.rank\d+\.json$',p): continue
    for e in json.load(open(p)):
        if e.get('ph')=='X' and e['cat']=='call':
            a=e['args']; calls[(e['name'].split()[-1],a['count'],a['seq'])][e['pid']]=(e['ts'],e['ts']+e['dur'])
groups=defaultdict(list)
for (algo,count,seq),c in calls.items():
    if len(c)==6 and count>=65536: groups[(algo,count)].append((seq,min(v[0] for v in c.values())))
print('%-9s %7s %5s %8s %8s %8s %6s %8s  %s'%('algo','bytes','calls','mean','median','trim','stalls','sim','sim/mean sim/trim'))
for (algo,count),l in sorted(groups.items(), key=lambda x:(x[0][1],x[0][0])):
    l.sort()
    # consecutive seqs of this group only (timed loop): periods between successive calls with seq gap small
    per=[l[i+1][1]-l[i][1] for i in range(len(l)-1) if l[i+1][0]-l[i][0]<=2]
    if len(per)<5: continue
    med=statistics.median(per); mean=statistics.mean(per)
    trim=[p for p in per if p<5*med]
    b=min(sim, key=lambda k:(k[0]!=algo, abs(k[1]-count*4))) if sim else None
    s=sim.get(b,0) if b and b[0]==algo else 0
    print('%-9s %7d %5d %8.0f %8.0f %8.0f %6d %8.0f  %.2f %.2f'%(algo,count*4,len(per),mean,med,statistics.mean(trim),len(per)-len(trim),s,s/mean if s else 0,s/statistics.mean(trim) if s else 0))
