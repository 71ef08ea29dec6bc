#!/usr/bin/env bash
# tests/mpi_gpu_gate.sh GPUS HAVE_NCCL COMMAND...: runs COMMAND (an mpirun line
# of the NCCL tests) where the build has NCCL (HAVE_NCCL = 1) and this host
# shows at least GPUS GPUs; otherwise prints one line and exits 77, which
# ctest reports as skipped (SKIP_RETURN_CODE 77).
set -u
need=$1 have_nccl=$2
shift 2
if [ "$have_nccl" != 1 ]; then
  echo "SKIP: parray was built without NCCL"
  exit 77
fi
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then  # the devices a CUDA program will see
  visible=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .)
  [ "$visible" -lt "$gpus" ] && gpus=$visible
fi
if [ "$gpus" -lt "$need" ]; then
  echo "SKIP: needs $need GPUs (one MPI rank each), this host has $gpus"
  exit 77
fi
exec "$@"
