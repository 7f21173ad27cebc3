#!/usr/bin/env python3
"""Runs benchmark commands alternating, round after round, and compares their tables.

The one alternate-and-median driver behind perf/compare.sh, perf/small_compare.sh and
perf/wait_ab.sh. Each column is NAME=COMMAND (a shell command printing chorus-perf's or
compare_mpi's nccl-tests table); the first column is the base the others are compared to.
Round k runs every column once, in an order rotated by k (so no column always runs first
or right after another). A run fails when it exits non-zero or lacks the table's
"Out of bounds values : 0 OK" line (a wrong element); the others still run, and the exit
status is 1.

For each size, per column: the median out-of-place time, the bus bandwidth recomputed from
it (the printed one has two decimals, too few for small sizes), and against the base
"ratio" = base time / this time (> 1: faster than the base) of the medians, then the median
of the per-round ratios with the rounds this column was faster in. The load average at
each run's start is kept with it and summarised per column.

  perf/alternate.py [-K ROUNDS] [-l LOGDIR] [--np NP] [--coll COLL] NAME=COMMAND ...

In COMMAND, {json} becomes LOGDIR/NAME.ROUND.json (for perf/plot.py). Logs:
LOGDIR/NAME.ROUND.log, and LOGDIR/runs.tsv (round, name, load, size, time, busbw).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile


def bus_factor(coll, np):
    c = coll.lower().replace('-', '').replace('_', '')
    if c == 'allreduce':
        return 2 * (np - 1) / np
    if c in ('allgather', 'reducescatter', 'alltoall'):
        return (np - 1) / np
    return 1.0


def table_rows(text):
    """(size, out-of-place time in us) of each row of an nccl-tests table."""
    rows = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 13 and not line.lstrip().startswith('#') and f[0].isdigit():
            rows.append((int(f[0]), float(f[5])))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('-K', '--rounds', type=int, default=3)
    ap.add_argument('-l', '--logdir', default='')
    ap.add_argument('--np', type=int, default=0, help='ranks, for the bus bandwidth factor')
    ap.add_argument('--coll', default='allreduce')
    ap.add_argument('--title', default='')
    ap.add_argument('columns', nargs='+', metavar='NAME=COMMAND')
    a = ap.parse_args()
    columns = []
    for c in a.columns:
        name, sep, cmd = c.partition('=')
        if not sep or not name or not cmd:
            ap.error('a column is NAME=COMMAND: %r' % c)
        columns.append((name, cmd))
    if len(columns) < 2:
        ap.error('give two columns or more')
    logdir = a.logdir or tempfile.mkdtemp(prefix='chorus-alternate.')
    os.makedirs(logdir, exist_ok=True)
    factor = bus_factor(a.coll, a.np) if a.np else 1.0

    times = {}  # (name, round, size) -> us
    loads = {name: [] for name, _ in columns}
    failed = []
    tsv = open(os.path.join(logdir, 'runs.tsv'), 'w')
    for k in range(1, a.rounds + 1):
        n = len(columns)
        for i in range(n):
            name, cmd = columns[(i + k) % n]
            log = os.path.join(logdir, '%s.%d.log' % (name, k))
            cmd = cmd.replace('{json}', os.path.join(logdir, '%s.%d.json' % (name, k)))
            load = float(open('/proc/loadavg').read().split()[0])
            loads[name].append(load)
            print('# round %d/%d %s (load %.1f): %s' % (k, a.rounds, name, load, cmd), flush=True)
            p = subprocess.run(cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, errors='replace')
            open(log, 'w').write(p.stdout)
            ok = '# Out of bounds values : 0 OK' in p.stdout
            if p.returncode != 0 or not ok:
                why = 'status %d' % p.returncode if p.returncode else 'no "0 OK" line'
                failed.append('%s round %d (%s)' % (name, k, why))
                print('alternate.py: %s failed in round %d (%s); last lines of %s:' %
                      (name, k, why, log), file=sys.stderr)
                print('\n'.join(p.stdout.splitlines()[-10:]), file=sys.stderr)
                continue
            for size, us in table_rows(p.stdout):
                times[(name, k, size)] = us
                tsv.write('%d\t%s\t%.2f\t%d\t%g\t%.6g\n' %
                          (k, name, load, size, us, size / us / 1e3 * factor if us > 0 else 0))
    tsv.close()

    base = columns[0][0]
    names = [name for name, _ in columns]
    print('#')
    print('# %s%d alternating rounds; logs in %s' % (a.title + ': ' if a.title else '',
                                                    a.rounds, logdir))
    for name in names:
        if loads[name]:
            print('# %s: load %.1f-%.1f (median %.1f)' % (name, min(loads[name]), max(loads[name]),
                                                          statistics.median(loads[name])))
    print('# median out-of-place time (us) and busbw (GB/s); ratio = %s time / its time '
          '(> 1: faster than %s), of the medians and per round (rounds faster)' % (base, base))
    head = '# %10s  %10s %10s' % ('size', base + ' us', 'busbw')
    for name in names[1:]:
        head += '  %10s %10s %6s %14s' % (name + ' us', 'busbw', 'ratio', 'per round')
    print(head)
    sizes = sorted({s for (_, _, s) in times})
    for size in sizes:
        def med(name):
            xs = [t for (n, _, s), t in times.items() if n == name and s == size]
            return statistics.median(xs) if xs else 0.0

        def bw(us):
            return size / us / 1e3 * factor if us > 0 else 0.0

        tb = med(base)
        line = '  %10d  %10.2f %10.4f' % (size, tb, bw(tb))
        for name in names[1:]:
            t = med(name)
            paired = [times[(base, k, size)] / times[(name, k, size)]
                      for k in range(1, a.rounds + 1)
                      if (base, k, size) in times and times.get((name, k, size), 0) > 0]
            per_round = ('%.2f (%d/%d)' % (statistics.median(paired),
                                           sum(r > 1 for r in paired), len(paired))
                         if paired else '-')
            line += '  %10.2f %10.4f %6.2f %14s' % (t, bw(t), tb / t if t > 0 else 0, per_round)
        print(line)
    if failed:
        print('alternate.py: failed runs: ' + ', '.join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
