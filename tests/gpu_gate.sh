#!/usr/bin/env bash
# gpu_gate.sh COMMAND...: runs COMMAND where the machine has a GPU; without
# one it exits 77 (skipped: the test ran nothing, so it did not pass), unless
# PARRAY_REQUIRE_GPU=1 (scripts/gpu-check sets it on the GPU machine), where
# a GPU that cannot be seen is a failure.
if ! nvidia-smi -L >/dev/null 2>&1; then
  if [ "${PARRAY_REQUIRE_GPU:-0}" = 1 ]; then
    echo "FAILED: PARRAY_REQUIRE_GPU=1 but nvidia-smi -L finds no GPU"
    exit 1
  fi
  echo "SKIP: no GPU (nvidia-smi -L finds none)"
  exit 77
fi
exec "$@"
