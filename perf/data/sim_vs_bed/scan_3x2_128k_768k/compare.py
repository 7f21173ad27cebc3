import csv, sys
simcsv, table = sys.argv[1:3]
sim = {}
for r in csv.reader(open(simcsv)):
    if r[0] == 'collective': continue
    sim[int(r[4]), r[3]] = float(r[6])
m = {}; cols = []
for l in open(table):
    f = l.split()
    if l.strip().startswith('size'): cols = f
    elif f and f[0].isdigit():
        for i in range(1, len(cols) - 3): m[int(f[0]), cols[i]] = float(f[i].strip('*'))
ssz = sorted({k[0] for k in sim}); ok = n = 0
for s in sorted({k[0] for k in m}):
    ns = min(ssz, key=lambda x: abs(x - s)); line = '%7d' % s
    for a in cols[1:-3]:
        r = sim[ns, a] / m[s, a]; n += 1; ok += 0.75 < r < 1.25
        line += '  %s %.3g/%.3g (%.2f)' % (a, m[s, a], sim[ns, a], r)
    print(line)
print('# %d of %d within 25%%' % (ok, n))
