// Host-side helpers of the CUDA backend that the rest of parray (the harness,
// the CLI) calls without including CUDA headers. Implemented in src/cuda/;
// available only when PARRAY_HAVE_CUDA is 1.
#pragma once

#include <functional>
#include <string>

namespace parray::cuda {

// Times one call of run() (which launches work on the calling thread's default
// stream) with CUDA events on the legacy default stream, which the per-thread
// one is ordered with; returns milliseconds. Every CUDA error is checked.
double event_time_ms(const std::function<void()>& run);
// Launches a kernel that does nothing, one block of one thread, on `stream`
// (a cudaStream_t; nullptr: the calling thread's default stream), checked:
// the floor of any call's host time on this machine (parray bench calls).
void launch_empty_kernel(void* stream);
// cudaDeviceSynchronize, checked.
void synchronize();
// Evicts the L2 cache by writing a buffer larger than it (for cold-cache timing).
void flush_l2();
// "NVIDIA H100 80GB HBM3, 132 SMs, 1980 MHz, CUDA 13.0"
std::string device_description();
// FP32 CUDA-core peak computed from the device's properties (SMs x FP32 lanes
// per SM x 2 x clock), in GFLOP/s.
double fp32_peak_gflops();

}  // namespace parray::cuda
