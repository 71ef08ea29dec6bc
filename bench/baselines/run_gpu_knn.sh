#!/usr/bin/env bash
# bench/baselines/run_gpu_knn.sh OUTDIR [tests|bench|all]: the GPU k-NN side
# in device calls. Builds NOTHING: it expects a CUDA build in
# $PARRAY_GPU_BUILD (default build-gpu) with the parray tool and
# tests/parray_gpu_tests; $PARRAY_GPU_BASELINE (optional) is a second build's
# parray tool, timed in the same run on the same data (before/after a change).
#   tests   GpuGemv*, GpuKnn*, GpuDist* -> gpu-tests.xml; compute-sanitizer
#           memcheck over the exactness tests and the lab report's kernel
#   bench   10 000 x 1 000 000 x 128 uniform [-1, 1), k = 10, 100: parray
#           (and the baseline build, alternating), PyTorch matmul + topk;
#           the same sizes offset to [999, 1001): parray and PyTorch, recall
#           against FP64 for both; GEMV ladder + cuBLAS; the GEMV lab report's case
# Everything printed goes to OUTDIR/run.log, each step under
# "== name rc=... Ns"; CSVs beside it.
set -u
OUT=${1:?usage: run_gpu_knn.sh OUTDIR [tests|bench|all]}
PHASE=${2:-all}
mkdir -p "$OUT"
B=${PARRAY_GPU_BUILD:-build-gpu}
P="$B/parray"; [ -x "$P" ] || P="$B/tools/parray"
T="$B/tests/parray_gpu_tests"
OLD=${PARRAY_GPU_BASELINE:-}
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -oE 'H[0-9]+' | tr 'H' 'h')
LOG="$OUT/run.log"
step() {  # step NAME SECONDS COMMAND...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS rc
  timeout "$limit" "$@" >"/tmp/step-$name.log" 2>&1
  rc=$?
  { echo "== $name rc=$rc $((SECONDS - t0))s"; tail -n 60 "/tmp/step-$name.log"; } >>"$LOG"
  echo "$name rc=$rc $((SECONDS - t0))s"
}
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv >>"$LOG" 2>&1
for f in "$P" "$T"; do [ -x "$f" ] || { echo "missing $f (build $B first)" | tee -a "$LOG"; exit 2; }; done

if [ "$PHASE" = tests ] || [ "$PHASE" = all ]; then
  step gpu_tests 300 "$T" --gtest_filter='GpuGemv*:GpuKnn*:*GpuKnnExact*:GpuDist*' --gtest_output="xml:$OUT/gpu-tests.xml"
  step memcheck 300 compute-sanitizer --tool memcheck --error-exitcode 1 "$T" --gtest_brief=1 \
    --gtest_filter='*GpuKnnExact*:GpuDist*'
fi

if [ "$PHASE" = bench ] || [ "$PHASE" = all ]; then
  step dist_lab_case 20 "$P" dist --synthetic 1024,32 --impl gpu --top 3 --reps 2000 --time-csv "$OUT/dist-gpu-$GPU.csv"
  for off in 0 1000; do
    tag=$([ "$off" = 0 ] && echo uniform || echo offset)
    step "save_$tag" 60 "$P" knn --synthetic 1000000,128,10000 --offset "$off" --k 1 --save-data "/tmp/knn_$tag"
    step "torch_$tag" 120 python3 bench/baselines/torch_knn.py --data "/tmp/knn_$tag" --k 10,100 --reps 5
    grep -E "^(impl|torch)" "/tmp/step-torch_$tag.log" >"$OUT/knn-torch-$GPU-$tag.csv"
    rm -f "/tmp/knn_${tag}_base.fvecs" "/tmp/knn_${tag}_queries.fvecs"
    rounds=$([ "$off" = 0 ] && [ -n "$OLD" ] && echo "1 2 3" || echo 1)
    for r in $rounds; do  # alternating: the baseline build, then this one
      if [ "$off" = 0 ] && [ -n "$OLD" ]; then
        step "knn_${tag}_before_$r" 150 "$OLD" bench knn --impl gpu --synthetic 1000000,128,10000 --k 10,100 \
          --threads 16 --reps 5 --csv "$OUT/knn-gpu-$GPU-$tag-before-$r.csv"
      fi
      step "knn_${tag}_$r" 150 "$P" bench knn --impl gpu --synthetic 1000000,128,10000 --offset "$off" --k 10,100 \
        --threads 16 --reps 5 --csv "$OUT/knn-gpu-$GPU-$tag-$r.csv"
    done
  done
  step gemv 60 "$P" bench gemv --impl gpu --shapes 16384x16384,32768x8192 --layout row,col --reps 5 \
    --csv "$OUT/gemv-gpu-$GPU.csv"
fi
