#!/bin/bash
# The checks that need a GPU, as one short script (a GPU machine is lent only now and then,
# for minutes): run it where there is one, read its summary, keep its results.
#
#   perf/gpu_check.sh [BIN_DIR] [RESULT_DIR]
#
# BIN_DIR holds chorus-train (built with -DCHORUS_TRAINER_CUBLAS=ON), chorus-run,
# chorus-perf and trainer_gemm_check (default: found under build/); RESULT_DIR receives
# every run's output (default: a new directory under /tmp). DIGITS names the digits CSV.gz
# where python3-sklearn is not installed. CPU_THREADS bounds OpenBLAS's threads in the
# one-process speed comparison (default: the cores). PHASES picks phases (default "1 2 3 4").
#
# Phases, each under a deadline:
#   1. trainer_gemm_check --gpu: cuBLAS against a double reference (every transpose, padded
#      leading dimensions, alpha and beta); and without --gpu, OpenBLAS; reduce_cuda_test
#      and device_check_cuda (if in BIN_DIR): the CUDA reduction kernel against the CPU
#      kernels, the CUDA device interface (CUDA IPC included)
#   2. chorus-train, 1 rank and 4 ranks, 200 steps of the MLP: OpenBLAS vs cuBLAS. The loss
#      curves must agree (first step within 1e-4 relative, the first 20 within 1 %, every
#      step within 5 % of the starting loss, the last held-out accuracy within 2 points);
#      samples/s and MFU of each
#   3. a wider MLP (4096 x 4 layers, batch 512) on 1 rank: OpenBLAS on CPU_THREADS threads
#      vs cuBLAS, samples/s
#   4. chorus-perf all-reduce on this machine's cores at 2, 4 and 8 ranks (host memory,
#      plain and memAlloc buffers), beside a memcpy rate measured the same minute
# The exit status is that of the correctness checks (1 and 2); 3 and 4 only report.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-}
if [ -z "$bin" ]; then
  bin=$(mktemp -d /tmp/chorus-gpu-bin.XXXXXX)
  for name in chorus-train chorus-run chorus-perf trainer_gemm_check reduce_cuda_test device_check_cuda; do
    found=$(find "$here/../build" -name "$name" -type f -perm -u+x 2>/dev/null | head -1)
    [ -n "$found" ] && ln -s "$found" "$bin/$name"
  done
fi
out=${2:-$(mktemp -d /tmp/chorus-gpu-check.XXXXXX)}
mkdir -p "$out"
digits=${DIGITS:-/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz}
threads=${CPU_THREADS:-$(nproc)}
failed=0
say() { echo "gpu_check: $*"; }
bad() { echo "gpu_check: FAIL: $*"; failed=1; }
for name in chorus-train chorus-run chorus-perf trainer_gemm_check; do
  [ -x "$bin/$name" ] || { bad "no $name in $bin"; exit 1; }
done

say "host $(hostname), $(nproc) cores, $(uname -r), $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | sed 's/^/gpu_check: gpu: /'
ldd "$bin/chorus-train" | grep -i "not found" && bad "chorus-train misses libraries"
# What the library's topology detection (hwloc's PCI scan) makes of this host's GPUs
for tool in chorus-info chorus-topo; do
  [ -x "$bin/$tool" ] && timeout 30 "$bin/$tool" > "$out/$tool.txt" 2>&1
done
[ -f "$out/chorus-topo.txt" ] && grep -i -E "gpu|nvidia|10de" "$out/chorus-topo.txt" | head -5 | sed 's/^/gpu_check: topo: /'
[ -f "$out/chorus-info.txt" ] && grep -i -E "gpu" "$out/chorus-info.txt" | head -3 | sed 's/^/gpu_check: info: /'
nvidia-smi topo -m > "$out/nvidia-smi-topo.txt" 2>&1

phase() { [[ " ${PHASES:-1 2 3 4} " == *" $1 "* ]]; }

# 1: the GEMMs
if phase 1; then
timeout 120 "$bin/trainer_gemm_check" > "$out/gemm_cpu.txt" 2>&1 || bad "gemm_check (OpenBLAS) rc=$?"
timeout 120 "$bin/trainer_gemm_check" --gpu > "$out/gemm_gpu.txt" 2>&1
rc=$?
cat "$out/gemm_cpu.txt" "$out/gemm_gpu.txt"
[ $rc = 0 ] || bad "gemm_check --gpu rc=$rc (77: no GPU usable)"
# the CUDA reduction kernel against the CPU kernels, and the CUDA device's conformance
# (where the build has them)
if [ -x "$bin/reduce_cuda_test" ]; then
  timeout 120 "$bin/reduce_cuda_test" > "$out/reduce_cuda.txt" 2>&1
  rc=$?
  grep -v "another payload" "$out/reduce_cuda.txt"
  [ $rc = 0 ] || bad "reduce_cuda_test rc=$rc (77: no GPU usable)"
fi
if [ -x "$bin/device_check_cuda" ]; then
  timeout 150 "$bin/device_check_cuda" cuda 2>&1 | tee "$out/device_check.txt"
  rc=${PIPESTATUS[0]}
  [ $rc = 0 ] || bad "device_check_cuda rc=$rc (77: no GPU usable)"
fi
fi

# 2: the trainer, OpenBLAS vs cuBLAS, same seed
train() {  # name ranks extra-args...
  local name=$1 ranks=$2
  shift 2
  local t0=$(date +%s%N)
  timeout 300 "$bin/chorus-run" -n "$ranks" --timeout 280 "$bin/chorus-train" --data "$digits" \
    --quiet --out "$out/$name" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  say "$name: rc=$rc, $((($(date +%s%N) - t0) / 1000000)) ms wall"
  [ $rc = 0 ] || { tail -5 "$out/$name.log"; return 1; }
}
summary() {  # report.json -> one line
  python3 - "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1] + "/report.json"))
def find(d, key):
    if isinstance(d, dict):
        if key in d: return d[key]
        for v in d.values():
            x = find(v, key)
            if x is not None: return x
    return None
keys = ["samples_per_second", "mfu", "peak_gemm_flops", "achieved_flops", "final_loss",
        "allreduce_hidden_fraction", "step_seconds"]
print("  ".join(f"{k}={find(r, k)}" for k in keys))
EOF
}
compare_curves() {  # cpu-dir gpu-dir -> 0 when the curves agree
  python3 - "$1/metrics.csv" "$2/metrics.csv" <<'EOF'
import csv, sys
a = list(csv.DictReader(open(sys.argv[1])))
b = list(csv.DictReader(open(sys.argv[2])))
if len(a) != len(b) or not a:
    print(f"  steps differ: {len(a)} vs {len(b)}"); sys.exit(1)
rel = [abs(float(x["loss"]) - float(y["loss"])) / max(1e-12, abs(float(x["loss"]))) for x, y in zip(a, b)]
ho = [(float(x["held_out"]), float(y["held_out"])) for x, y in zip(a, b) if x["held_out"] not in ("", "nan")]
print(f"  loss rel diff: first step {rel[0]:.2e}, max {max(rel):.2e} (step {rel.index(max(rel)) + 1}), "
      f"last {rel[-1]:.2e}; final loss {a[-1]['loss']} vs {b[-1]['loss']}; held-out {ho[-1] if ho else None}")
# Rounding differs (another summation order in every GEMM), so the curves part slowly:
# the first step within 1e-4, the first 20 within 1 %, every step within 5 % of the
# starting loss (late losses are near 0, where a relative difference means nothing).
gap = [abs(float(x["loss"]) - float(y["loss"])) for x, y in zip(a, b)]
start = abs(float(a[0]["loss"]))
print(f"  max |loss difference| {max(gap):.2e} = {max(gap) / start:.2e} of the starting loss; "
      f"first 20 steps' max rel diff {max(rel[:20]):.2e}")
ok = (rel[0] <= 1e-4 and max(rel[:20]) <= 1e-2 and max(gap) <= 0.05 * start
      and (not ho or abs(ho[-1][0] - ho[-1][1]) <= 0.02))
sys.exit(0 if ok else 1)
EOF
}
phase 2 && for ranks in 1 4; do
  for backend in cpu gpu; do
    flag=$([ $backend = gpu ] && echo --gpu)
    train "mlp_${ranks}r_$backend" $ranks --steps 200 --eval-every 50 $flag ||
      bad "chorus-train $ranks ranks $backend failed"
    [ -f "$out/mlp_${ranks}r_$backend/report.json" ] && summary "$out/mlp_${ranks}r_$backend"
  done
  compare_curves "$out/mlp_${ranks}r_cpu" "$out/mlp_${ranks}r_gpu" ||
    bad "$ranks ranks: the cuBLAS loss curve departs from OpenBLAS's"
done

# 3: a wider MLP, 1 rank: where the GPU should pay despite its per-call copies
if phase 3; then
  wide=(--hidden 4096 --layers 4 --batch 512 --steps 30 --eval-every 0)
  train wide_cpu 1 "${wide[@]}" --threads "$threads" && summary "$out/wide_cpu"
  train wide_gpu 1 "${wide[@]}" --gpu && summary "$out/wide_gpu"
fi

# 4: host-memory all-reduce on this machine's cores (no oversubscription up to 8 ranks)
phase 4 && python3 -c "
import numpy as np, time
a = np.ones(1 << 26, np.float32); b = np.empty_like(a); best = 0
for _ in range(5):
    t = time.perf_counter(); np.copyto(b, a); best = max(best, a.nbytes / (time.perf_counter() - t))
print(f'gpu_check: memcpy 256 MiB: {best / 1e9:.1f} GB/s (best of 5, one thread)')" 2>&1
phase 4 && for np_ in 2 4 8; do
  for reg in 0 2; do
    timeout 120 "$bin/chorus-run" -n $np_ --timeout 110 "$bin/chorus-perf" -b 4 -e 64M -f 4 -R $reg \
      -J "$out/perf_np${np_}_R$reg.json" > "$out/perf_np${np_}_R$reg.txt" 2>&1 ||
      say "chorus-perf np $np_ -R $reg rc=$?"
    say "chorus-perf all-reduce np=$np_ -R $reg:"
    grep -E '^ +[0-9]' "$out/perf_np${np_}_R$reg.txt" | head -14
  done
done

say "results in $out"
[ $failed = 0 ] && say "PASS (correctness phases)" || say "FAILED"
exit $failed
