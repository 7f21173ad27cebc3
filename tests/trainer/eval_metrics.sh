#!/bin/bash
# chorus-train's metrics.csv, held-out evaluation and both tasks, checked by
# check_metrics.py (the schedule recomputed, evaluation steps, the report's final figure)
# and check_figures.py:
#   1. the MLP on the digits: --eval-every 10, warm-up 5 and linear decay (held-out
#      accuracy in [0, 1], and above 0.5 after 30 steps: chance is 0.1);
#   2. the transformer on text: --eval-every 4, cosine decay (held-out perplexity between 1
#      and 256, the byte values: uniform guessing); its FLOP per sequence, T x (6 x (12 d^2 L
#      + V d) + 12 T d L) as PaLM counts it (appendix B), recomputed.
#   eval_metrics.sh CHORUS_RUN CHORUS_TRAIN
set -u
run=$1 train=$2
here=$(dirname "$0")
work=$(mktemp -d /tmp/chorus-eval-metrics.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$run" -n 2 --timeout 120 "$train" --hidden 48 --layers 2 --batch 16 --steps 30 --eval-every 10 \
  --lr 0.01 --warmup 5 --decay linear --min-lr-ratio 0.2 --bucket-mb 0.004 --quiet \
  --timeout-s 60 --out "$work/mlp" >"$work/mlp.log" 2>&1 || { cat "$work/mlp.log"; fail "mlp"; }
python3 "$here/check_metrics.py" "$work/mlp" 30 10 0.01 5 linear 0.2 accuracy 0.5 1 ||
  fail "mlp metrics"
python3 "$here/check_figures.py" "$work/mlp" 64 48 2 10 0.004 || fail "mlp figures"

"$run" -n 2 --timeout 120 "$train" --model transformer --dim 32 --heads 2 --context 32 \
  --layers 1 --batch 4 --steps 12 --eval-every 4 --quiet --timeout-s 60 --out "$work/lm" \
  >"$work/lm.log" 2>&1 || { cat "$work/lm.log"; fail "transformer"; }
python3 "$here/check_metrics.py" "$work/lm" 12 4 0.001 0 cosine 0.1 perplexity 1 256 ||
  fail "transformer metrics"
python3 - "$work/lm/report.json" <<'PY' || fail "transformer FLOP per sequence"
import json, math, sys
r = json.load(open(sys.argv[1]))
d, L, T, V = 32, 1, 32, 256
want = T * (6 * (12 * d * d * L + V * d) + 12 * T * d * L)
if not math.isclose(r["flops_per_sample"], want, rel_tol=1e-5):
    sys.exit(f"FAIL: flops_per_sample {r['flops_per_sample']}, PaLM's count gives {want}")
print(f"ok: transformer {want} FLOP per sequence")
PY
echo "PASS: metrics, held-out evaluation and FLOP counts of both tasks"
