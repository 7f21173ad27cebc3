# Calls of the step trace in DIR (every rank's start of each hier_rd call): count, mean and
# median period between consecutive calls (us), and the held ones (period >= 5x median).
import glob, json, statistics, sys
from collections import defaultdict
starts = defaultdict(list)
for path in glob.glob(sys.argv[1] + '/t.rank*.json'):
    for e in json.load(open(path)):
        if e.get('ph') == 'X' and e['cat'] == 'call' and e['name'].endswith('hier_rd'):
            starts[e['args']['seq']].append(e['ts'])
seqs = sorted(s for s in starts if len(starts[s]) == 6)
periods = [min(starts[b]) - min(starts[a]) for a, b in zip(seqs, seqs[1:]) if b - a <= 2]
med = statistics.median(periods)
print('calls %d mean %.0f median %.0f held %d' % (len(periods), statistics.mean(periods), med,
                                                 sum(p >= 5 * med for p in periods)))
