#!/bin/sh
# alternate_test.sh [SOURCE_DIR]: the arithmetic of the published comparisons, on fake
# benchmarks (no MPI, no ranks). Each fake prints an nccl-tests table (and writes -J JSON)
# with known out-of-place times that differ per round (a counter per column), and decoys in
# the in-place and printed-bandwidth columns. Checked against values computed by hand:
#   - perf/alternate.py: per size and column the median out-of-place time (3 rounds, and 4:
#     the mean of the middle two), the busbw recomputed from it (allreduce
#     2(n-1)/n, reducescatter and alltoall (n-1)/n, no --np: algbw), ratio = base median / its median
#     (> 1 and < 1), the median of the per-round ratios with the rounds strictly faster (a
#     tie is not), runs.tsv; every column once per round, the first one rotating; a run
#     with no "0 OK" line or a non-zero status left out of every figure, and exit status 1;
#   - perf/compare.sh on a fake build (chorus-run, chorus-perf, compare_mpi) and a fake
#     mpirun: -n, -t and -K reach alternate.py (the allgather factor), {json} one per run;
#   - perf/plot.py under /usr/bin/python3 (skipped without Debian's matplotlib): the
#     medians it draws from JSON and from printed tables, the memory-limit line (busbw
#     memcpy/n x 2(n-1)/n, time size/(memcpy/n)), a PNG and an SVG written.
# Prints a FAIL line per mismatch and exits 1.
src=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
src=$(cd "$src" && pwd)
w=$(mktemp -d /tmp/chorus-alternate-test.XXXXXX)
trap 'rm -rf "$w"' EXIT
fail=0

# bench.sh DATA [ARGS...]: one fake benchmark run. Its Nth call prints round N's table from
# DATA (lines "SIZE T1 T2 ..." in us; "factor F" for the printed busbw and the JSON; "nook
# N": no "0 OK" line in round N; "status N S": exit S in round N), -J PATH writes the JSON.
cat >"$w/bench.sh" <<'EOF'
#!/bin/sh
data=$1
shift
echo "$*" >>"$data.args"
json=""
while [ $# -gt 0 ]; do
  [ "$1" = -J ] && { json=$2; shift; }
  shift
done
n=$(($(cat "$data.n" 2>/dev/null || echo 0) + 1))
echo $n >"$data.n"
echo "${data##*/} $n" >>"${data%/*}/order"
exec awk -v r=$n -v json="$json" -f "${0%/*}/bench.awk" "$data"
EOF
cat >"$w/bench.awk" <<'EOF'
BEGIN { f = 1 }
$1 == "factor" { f = $2; next }
$1 == "nook" { if ($2 == r) nook = 1; next }
$1 == "status" { if ($2 == r) st = $3; next }
{ size[++m] = $1; t[m] = $(r + 1) }
END {
  print "# fake chorus-perf, round " r
  print "#\n#                                out-of-place                       in-place"
  print "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong"
  print "#   (B)  (elements)                (us)  (GB/s)  (GB/s)          (us)  (GB/s)  (GB/s)"
  print "4 ranks up"
  if (json != "") printf "{\"version\":1,\"results\":[" >json
  for (i = 1; i <= m; i++) {
    al = size[i] / t[i] / 1e3
    printf "%12d  %12d  %8s  %6s  %6d  %7s  %6.4g  %.6g  %5d  %7s  %6s  %6s  %5d\n",
      size[i], size[i] / 4, "float", "sum", -1, t[i], al, al * f, 0, "7777.5", "0.001",
      "0.002", 0
    if (json != "")
      printf "%s\n{\"size\":%d,\"count\":%d,\"type\":\"float\",\"redop\":\"sum\"," \
        "\"root\":-1,\"out_of_place\":{\"time\":%s,\"alg_bw\":%.6g,\"bus_bw\":%.6g," \
        "\"nwrong\":0},\"in_place\":{\"time\":7777.5,\"alg_bw\":0.001,\"bus_bw\":0.002," \
        "\"nwrong\":0}}", (i > 1 ? "," : ""), size[i], size[i] / 4, t[i], al, al * f >json
  }
  if (json != "") printf "],\"out_of_bounds\":{\"count\":0,\"okay\":true}}\n" >json
  if (!nook) print "# Out of bounds values : 0 OK"
  print "# Avg bus bandwidth    : 1.5\n#"
  exit st
}
EOF

# check LABEL FILE "BASE OTHER..." ROW...: the table rows of FILE (lines not starting with
# '#') are exactly ROW..., field by field (a mismatch names the size and the column).
check() {
  label=$1 file=$2 cols=$3
  shift 3
  printf '%s\n' "$@" >"$w/want"
  awk -v label="$label" -v cols="$cols" '
    BEGIN { nc = split(cols, c, " "); fn[1] = "size"; fn[2] = c[1] " us"; fn[3] = c[1] " busbw"
            k = 3
            for (i = 2; i <= nc; i++) {
              fn[++k] = c[i] " us"; fn[++k] = c[i] " busbw"; fn[++k] = c[i] " ratio"
              fn[++k] = c[i] " per-round median"; fn[++k] = c[i] " rounds faster" } }
    NR == FNR { want[++nw] = $0; next }
    /^#/ || NF == 0 { next }
    { if (++ng > nw) { print "FAIL: " label ": extra row: " $0; bad = 1; next }
      n = split(want[ng], e, " ")
      if (NF != n) {
        print "FAIL: " label ": size " e[1] ": " NF " fields, want " n ": " $0; bad = 1; next }
      for (i = 1; i <= n; i++)
        if ($i != e[i]) {
          print "FAIL: " label ": size " e[1] ": " fn[i] ": got " $i ", want " e[i]; bad = 1 } }
    END { if (ng < nw) { print "FAIL: " label ": " ng + 0 " rows, want " nw; bad = 1 }
          exit bad }' "$w/want" "$file" || fail=1
}

# has LABEL FILE LINE: FILE has LINE (runs of blanks squeezed), exactly.
has() {
  tr -s ' ' <"$2" | grep -qxF -- "$3" ||
    { echo "FAIL: $1: no line \"$3\" in $2:"; sed 's/^/  /' "$2"; fail=1; }
}

# rotation LABEL DIR COLUMNS ROUNDS: DIR/order has every column once per round, in round
# order, and no round starts with the column the round before started with.
rotation() {
  awk -v label="$1" -v nc="$3" -v K="$4" '
    { k = int((NR - 1) / nc) + 1
      if ($2 != k) {
        print "FAIL: " label ": call " NR " is run " $2 " of " $1 ", in round " k; bad = 1 }
      if ((NR - 1) % nc == 0) { if ($1 == first) {
        print "FAIL: " label ": rounds " k - 1 " and " k " both start with " $1; bad = 1 }
        first = $1 } }
    END { if (NR != nc * K) { print "FAIL: " label ": " NR " runs, want " nc * K; bad = 1 }
          exit bad }' "$2/order" || fail=1
}

# status LABEL GOT WANT FILE
status() {
  [ "$2" = "$3" ] ||
    { echo "FAIL: $1: exit status $2, want $3; stderr:"; sed 's/^/  /' "$4"; fail=1; }
}

alternate() {  # alternate DIR ARGS...: python3 perf/alternate.py -l DIR ARGS..., to DIR/out
  d=$1
  shift
  python3 "$src/perf/alternate.py" -l "$d" "$@" >"$d/out" 2>"$d/err"
}

# A: 3 rounds (odd), allreduce at np 4 (busbw = size/t/1e3 x 1.5), base mpi.
#   1024: mpi 10 20 16 -> 16; chorus 12.8 10 8 -> 10, ratio 1.6, per round .78125 2 2 -> 2
#         (2/3); old 20 40 16 -> 20, ratio .8, per round .5 .5 1 (a tie) -> .5 (0/3).
#   1048576: mpi 400 500 1000 -> 500; chorus 640 400 1250 -> 640, ratio .78125, per round
#         .625 1.25 .8 -> .8 (1/3); old 200 250 500 -> 250, ratio 2, per round 2 2 2 (3/3).
mkdir "$w/A"
printf 'factor 1.5\n1024 10 20 16\n1048576 400 500 1000\n' >"$w/A/mpi"
printf 'factor 1.5\n1024 12.8 10 8\n1048576 640 400 1250\n' >"$w/A/chorus"
printf 'factor 1.5\n1024 20 40 16\n1048576 200 250 500\n' >"$w/A/old"
alternate "$w/A" -K 3 --np 4 --coll allreduce \
  "mpi=sh $w/bench.sh $w/A/mpi -J {json}" "chorus=sh $w/bench.sh $w/A/chorus -J {json}" \
  "old=sh $w/bench.sh $w/A/old -J {json}"
status "A (3 rounds)" $? 0 "$w/A/err"
check "A (3 rounds)" "$w/A/out" "mpi chorus old" \
  "1024 16.00 0.0960 10.00 0.1536 1.60 2.00 (2/3) 20.00 0.0768 0.80 0.50 (0/3)" \
  "1048576 500.00 3.1457 640.00 2.4576 0.78 0.80 (1/3) 250.00 6.2915 2.00 2.00 (3/3)"
has "A header" "$w/A/out" \
  "# size mpi us busbw chorus us busbw ratio per round old us busbw ratio per round"
has "A summary" "$w/A/out" "# 3 alternating rounds; logs in $w/A"
rotation "A order" "$w/A" 3 3
for name in mpi chorus old; do
  for k in 1 2 3; do  # {json} is LOGDIR/NAME.ROUND.json, and each run has its log
    grep -qxF -- "-J $w/A/$name.$k.json" "$w/A/$name.args" && [ -s "$w/A/$name.$k.json" ] &&
      [ -s "$w/A/$name.$k.log" ] ||
      { echo "FAIL: A: no $name.$k.json / $name.$k.log from {json}"; fail=1; }
  done
done

# B: 4 rounds (even: the median is the mean of the middle two), reducescatter at np 2
# (busbw = size/t/1e3 x 0.5).
#   4096: a 10 30 24 40 -> 27; b 20 15 16 50 -> 18, ratio 1.5, per round .5 2 1.5 .8 -> 1.15
#         (2/4).   65536: a 100 200 300 400 -> 250; b 80 100 500 600 -> 300, ratio .8333,
#         per round 1.25 2 .6 .6667 -> .9583 (2/4).
mkdir "$w/B"
printf 'factor 0.5\n4096 10 30 24 40\n65536 100 200 300 400\n' >"$w/B/a"
printf 'factor 0.5\n4096 20 15 16 50\n65536 80 100 500 600\n' >"$w/B/b"
alternate "$w/B" -K 4 --np 2 --coll reduce_scatter \
  "a=sh $w/bench.sh $w/B/a" "b=sh $w/bench.sh $w/B/b"
status "B (4 rounds)" $? 0 "$w/B/err"
check "B (4 rounds)" "$w/B/out" "a b" \
  "4096 27.00 0.0759 18.00 0.1138 1.50 1.15 (2/4)" \
  "65536 250.00 0.1311 300.00 0.1092 0.83 0.96 (2/4)"
rotation "B order" "$w/B" 2 4
# runs.tsv: round, name, load, size, time, busbw of every run.
awk -v d="$w/B" '
  FNR == 1 { f++ }
  f <= 2 && /^[0-9]/ { for (k = 2; k <= NF; k++) t[FILENAME "," $1 "," k - 1] = $k; next }
  f == 3 { n++; want = t[d "/" $2 "," $4 "," $1]; bw = $4 / want / 1e3 * 0.5
           if ($5 != want || ($6 - bw) / bw > 1e-5 || (bw - $6) / bw > 1e-5) {
             print "FAIL: B runs.tsv: " $0 ": want time " want ", busbw " bw; bad = 1 } }
  END { if (n != 16) { print "FAIL: B runs.tsv: " n + 0 " lines, want 16"; bad = 1 }
        exit bad }' "$w/B/a" "$w/B/b" "$w/B/runs.tsv" || fail=1

# B2: B's 4096 row as all-to-all at np 4: busbw = size/t/1e3 x 0.75 (nccl-tests' factor).
mkdir "$w/B2"
printf 'factor 0.75\n4096 10 30 24 40\n' >"$w/B2/a"
printf 'factor 0.75\n4096 20 15 16 50\n' >"$w/B2/b"
alternate "$w/B2" -K 4 --np 4 --coll alltoall \
  "a=sh $w/bench.sh $w/B2/a" "b=sh $w/bench.sh $w/B2/b"
status "B2 (alltoall)" $? 0 "$w/B2/err"
check "B2 (alltoall)" "$w/B2/out" "a b" "4096 27.00 0.1138 18.00 0.1707 1.50 1.15 (2/4)"

# C: failed runs, no --np (busbw = algbw). size 100: m 10 10 10 -> 10; ok 5 20 (round 3
# exits 3: its 1 is left out) -> 12.5, ratio .8, per round 2 .5 -> 1.25 (1/2); bad 4 (round
# 2 has no "0 OK" line: its 1 is left out) 50 -> 27, ratio .3704, per round 2.5 .2 -> 1.35
# (1/2). Exit status 1, both failures named.
mkdir "$w/C"
printf '100 10 10 10\n' >"$w/C/m"
printf 'status 3 3\n100 5 20 1\n' >"$w/C/ok"
printf 'nook 2\n100 4 1 50\n' >"$w/C/bad"
alternate "$w/C" -K 3 "m=sh $w/bench.sh $w/C/m" "ok=sh $w/bench.sh $w/C/ok" \
  "bad=sh $w/bench.sh $w/C/bad"
status "C (failed runs)" $? 1 "$w/C/err"
check "C (failed runs)" "$w/C/out" "m ok bad" \
  "100 10.00 0.0100 12.50 0.0080 0.80 1.25 (1/2) 27.00 0.0037 0.37 1.35 (1/2)"
has "C stderr" "$w/C/err" \
  'alternate.py: failed runs: bad round 2 (no "0 OK" line), ok round 3 (status 3)'
[ "$(wc -l <"$w/C/runs.tsv")" -eq 7 ] ||
  { echo "FAIL: C runs.tsv: $(wc -l <"$w/C/runs.tsv") lines, want 7 (failed runs kept)"; fail=1; }

# D: compare.sh -n 3 -t allgather -K 2 on a fake build and mpirun (busbw x 2/3).
#   3000: mpi 2 4 -> 3; chorus 1 3 -> 2, ratio 1.5, per round 2 1.333 -> 1.6667 (2/2).
mkdir -p "$w/D/build/perf" "$w/D/build/tools" "$w/D/bin"
printf 'factor 0.666667\n3000 2 4\n' >"$w/D/mpi"
printf 'factor 0.666667\n3000 1 3\n' >"$w/D/chorus"
printf '#!/bin/sh\nexec sh %s %s "$@"\n' "$w/bench.sh" "$w/D/mpi" >"$w/D/build/perf/compare_mpi"
printf '#!/bin/sh\nexec sh %s %s "$@"\n' "$w/bench.sh" "$w/D/chorus" \
  >"$w/D/build/perf/chorus-perf"
printf '#!/bin/sh\necho "$*" >>%s\n[ "$1" = -n ] && shift 2\nexec "$@"\n' "$w/D/run.args" \
  >"$w/D/build/tools/chorus-run"
cat >"$w/D/bin/mpirun" <<EOF
#!/bin/sh
echo "\$*" >>$w/D/mpirun.args
while [ \$# -gt 0 ]; do case \$1 in -np) shift 2 ;; -*) shift ;; *) break ;; esac; done
exec "\$@"
EOF
chmod +x "$w/D/build/perf/compare_mpi" "$w/D/build/perf/chorus-perf" \
  "$w/D/build/tools/chorus-run" "$w/D/bin/mpirun"
PATH=$w/D/bin:$PATH MPIRUN_ARGS='' bash "$src/perf/compare.sh" -n 3 -t allgather -K 2 \
  -b 1K -e 4K -B "$w/D/build" -l "$w/D/log" >"$w/D/out" 2>"$w/D/err"
status "D (compare.sh)" $? 0 "$w/D/err"
check "D (compare.sh)" "$w/D/out" "mpi chorus" "3000 3.00 0.6667 2.00 1.0000 1.50 1.67 (2/2)"
has "D summary" "$w/D/out" "# compare.sh: allgather float sum, np 3, sizes 1K..4K x2: 2\
 alternating rounds; logs in $w/D/log"
for f in mpi.1 mpi.2 chorus.1 chorus.2; do
  [ -s "$w/D/log/$f.json" ] || { echo "FAIL: D: compare.sh wrote no $f.json"; fail=1; }
done
grep -q -- '^-np 3 .*compare_mpi -t allgather ' "$w/D/mpirun.args" &&
  grep -q -- '^-n 3 .*chorus-perf -t allgather ' "$w/D/run.args" ||
  { echo "FAIL: D: -n 3 -t allgather did not reach mpirun / chorus-run:"
    cat "$w/D/mpirun.args" "$w/D/run.args"; fail=1; }

# E: plot.py on A's runs: JSON (mpi, chorus) and printed tables (old's logs), --np 4
# --memcpy 20: medians of time and busbw per size (busbw's: of the printed / JSON ones),
# limit 20/4 x 2x3/4 = 7.5 GB/s, time limit size/(20/4)/1e3 us.
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  cat >"$w/plot_check.py" <<'EOF'
import sys
src, out = sys.argv[1], sys.argv[2]
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, src + "/perf")
import matplotlib
matplotlib.use("Agg")
import matplotlib.axes
calls = []
real_plot, real_axhline = matplotlib.axes.Axes.plot, matplotlib.axes.Axes.axhline


def plot(ax, xs, ys, *args, **kw):
    calls.append(("plot", ax, kw.get("label"), list(xs), list(ys)))
    return real_plot(ax, xs, ys, *args, **kw)


def axhline(ax, y, *args, **kw):
    calls.append(("axhline", ax, kw.get("label"), None, y))
    return real_axhline(ax, y, *args, **kw)


matplotlib.axes.Axes.plot, matplotlib.axes.Axes.axhline = plot, axhline
import plot as P
sys.argv = ["plot.py", "-o", out, "--np", "4", "--memcpy", "20"] + sys.argv[3:]
P.main()
sizes = [1024, 1048576]
want = {("bw", "MPI (3 runs)"): [0.096, 3.145728], ("time", "MPI"): [16, 500],
        ("bw", "Chorus (3 runs)"): [0.1536, 2.4576], ("time", "Chorus"): [10, 640],
        ("bw", "Old (3 runs)"): [0.0768, 6.291456], ("time", "Old"): [20, 250],
        ("time", "memory limit"): [0.2048, 209.7152]}
lines = [c for c in calls if c[0] == "axhline"]
bw_ax = lines[0][1] if lines else None
bad = []
if [(c[2], c[4]) for c in lines] != [("memory limit 7.5 GB/s (memcpy 20/n)", 7.5)]:
    bad.append("limit line: got %r, want 7.5 GB/s" % [(c[2], c[4]) for c in lines])
got = {("bw" if c[1] is bw_ax else "time", c[2]): (c[3], c[4])
       for c in calls if c[0] == "plot"}
for key in sorted(set(want) | set(got)):
    xs, ys = got.get(key, (None, None))
    if key not in want or xs != sizes or len(ys) != 2 or any(
            abs(y - v) > 1e-5 * v for y, v in zip(ys, want[key])):
        bad.append("%s %r: got %r %r, want %r %r" % (key + (xs, ys, sizes, want.get(key))))
for b in bad:
    print("FAIL: plot.py: " + b)
sys.exit(1 if bad else 0)
EOF
  /usr/bin/python3 "$w/plot_check.py" "$src" "$w/E.png" "MPI=$w/A/mpi.*.json" \
    "Chorus=$w/A/chorus.*.json" "Old=$w/A/old.*.log" >"$w/E.out" 2>&1 ||
    { cat "$w/E.out"; fail=1; }
  [ "$(head -c 4 "$w/E.png" 2>/dev/null | od -An -c | tr -d ' ')" = '211PNG' ] ||
    { echo "FAIL: plot.py: $w/E.png is not a PNG"; fail=1; }
  /usr/bin/python3 "$src/perf/plot.py" -o "$w/E.svg" --np 4 --memcpy 20 \
    "MPI=$w/A/mpi.*.json" >"$w/E.svg.out" 2>&1 && grep -q '<svg' "$w/E.svg" ||
    { echo "FAIL: plot.py -o E.svg:"; cat "$w/E.svg.out"; fail=1; }
  if /usr/bin/python3 "$src/perf/plot.py" -o "$w/none.png" "X=$w/nothing.*.json" \
       >"$w/none.out" 2>&1 || [ -e "$w/none.png" ]; then
    echo "FAIL: plot.py with a glob matching nothing: exit 0 or a plot written"; fail=1
  fi
else
  echo "SKIP: plot.py (no matplotlib under /usr/bin/python3)"
fi

[ $fail = 0 ] && echo "PASS: alternate.py, compare.sh, plot.py arithmetic"
exit $fail
