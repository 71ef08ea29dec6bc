#!/usr/bin/env bash
# bench/baselines/run_gpu_knn.sh OUTDIR: issue 6's GPU side in one device call
# (about 3-4 minutes on an H200). Builds NOTHING: it expects an existing CUDA
# build in $PARRAY_GPU_BUILD (default build-gpu) with the parray tool and
# tests/parray_gpu_tests. Runs, each step with its own time limit (a failing
# step is logged and the script goes on):
#   gpu_tests  GpuGemv*, GpuKnn*, GpuDist*            -> gpu-tests.xml
#   dist_seed  seed 002's case, 1 x 1024 x 32, CUDA events around 2000
#              back-to-back calls + single-call latency -> dist-gpu-h200.csv
#   save_data  10 000 x 1 000 000 x 128 synthetic data for PyTorch
#   torch      PyTorch matmul + topk, k = 10, 100, and the seed case
#              (bench/baselines/torch_knn.py)          -> knn-torch-h200.csv
#   knn        parray GPU k-NN, k = 10, 100, same data -> knn-gpu-h200.csv
#   gemv       GPU GEMV ladder + cuBLAS, row/col-major -> gemv-gpu-h200.csv
# Everything printed goes to ONE log, OUTDIR/run.log (the device tool brings
# back only a few files per call): each step under "== name rc=... Ns".
set -u
OUT=${1:?usage: run_gpu_knn.sh OUTDIR}
mkdir -p "$OUT"
B=${PARRAY_GPU_BUILD:-build-gpu}
P="$B/parray"; [ -x "$P" ] || P="$B/tools/parray"
T="$B/tests/parray_gpu_tests"
LOG="$OUT/run.log"
step() {  # step NAME SECONDS COMMAND...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS rc
  timeout "$limit" "$@" >"/tmp/step-$name.log" 2>&1
  rc=$?
  { echo "== $name rc=$rc $((SECONDS - t0))s"; tail -n 80 "/tmp/step-$name.log"; } >>"$LOG"
  echo "$name rc=$rc $((SECONDS - t0))s"
}
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv >>"$LOG" 2>&1
for f in "$P" "$T"; do [ -x "$f" ] || { echo "missing $f (build $B first)" | tee -a "$LOG"; exit 2; }; done
# PARRAY_SKIP_GPU_TESTS=1: the caller already ran the whole GPU test binary.
[ -n "${PARRAY_SKIP_GPU_TESTS:-}" ] || step gpu_tests 100 "$T" --gtest_filter='GpuGemv*:GpuKnn*:GpuDist*' --gtest_output="xml:$OUT/gpu-tests.xml"
step dist_seed 20 "$P" dist --synthetic 1024,32 --impl gpu --top 3 --reps 2000 --time-csv "$OUT/dist-gpu-h200.csv"
step save_data 40 "$P" knn --synthetic 1000000,128,10000 --k 1 --save-data /tmp/knn1m
step torch 60 python3 bench/baselines/torch_knn.py --data /tmp/knn1m --k 10,100 --seed-case --reps 5
grep -v "^==" /tmp/step-torch.log | grep -E "^(impl|torch)" >"$OUT/knn-torch-h200.csv"
step knn 90 "$P" bench knn --impl gpu --synthetic 1000000,128,10000 --k 10,100 --threads 16 --reps 5 --csv "$OUT/knn-gpu-h200.csv"
step gemv 60 "$P" bench gemv --impl gpu --shapes 16384x16384,32768x8192 --layout row,col --reps 5 --csv "$OUT/gemv-gpu-h200.csv"
rm -f /tmp/knn1m_base.fvecs /tmp/knn1m_queries.fvecs
