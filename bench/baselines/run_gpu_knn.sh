#!/usr/bin/env bash
# bench/baselines/run_gpu_knn.sh OUTDIR: issue 6's GPU side in one device call.
# Builds parray for sm_90a, runs the GPU k-NN/GEMV/dist tests, the seed's dist
# case, the GPU k-NN benchmark at 10 000 x 1 000 000 x 128 with PyTorch's
# matmul + topk on the same data (bench/baselines/torch_knn.py), and the GPU
# GEMV benchmark (cuBLAS in the same run). Each step has its own time limit;
# a failing step is logged and the script goes on.
set -u
OUT=${1:?usage: run_gpu_knn.sh OUTDIR}
mkdir -p "$OUT"
B=${PARRAY_GPU_BUILD:-build-gpu}
# Everything goes to ONE log (the device tool brings back only a few files
# per call): each step's output under a "== name rc=... Ns" header.
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
step configure 60 cmake -S . -B "$B" -G Ninja -DPARRAY_CUDA_ARCHITECTURES=90a -DCMAKE_BUILD_TYPE=Release
step build 150 cmake --build "$B" -j16 --target parray_cli parray_gpu_tests
P="$B/parray"; [ -x "$P" ] || P="$B/tools/parray"
step gpu_tests 60 "$B/tests/parray_gpu_tests" --gtest_filter='GpuGemv*:GpuKnn*:GpuDist*'
step dist_seed 20 "$P" dist --synthetic 1024,32 --impl gpu --top 5 --reps 2000
step dist_seed_cpu 20 "$P" dist --synthetic 1024,32 --impl cpu --top 0 --threads 1
step save_data 40 "$P" knn --synthetic 1000000,128,10000 --k 1 --save-data /tmp/knn1m
step torch 90 python3 bench/baselines/torch_knn.py --data /tmp/knn1m --k 10,100 --seed-case --reps 5
grep -v "^==" /tmp/step-torch.log >"$OUT/knn-torch-h200.csv"
step knn 120 "$P" bench knn --impl gpu,gpu:cuda-12-best --synthetic 1000000,128,10000 --k 10,100 --threads 16 --reps 5 --csv "$OUT/knn-gpu-h200.csv"
step gemv 90 "$P" bench gemv --impl gpu --shapes 16384x16384,32768x8192 --layout row,col --reps 5 --csv "$OUT/gemv-gpu-h200.csv"
