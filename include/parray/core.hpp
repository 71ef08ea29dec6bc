// parray core definitions shared by host and device code: the index type, the
// __host__ __device__ marker and the library's exception type.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

// CUDA's stream type, named without CUDA's headers: cudaStream_t is
// CUstream_st*, so a GpuStream is a cudaStream_t in code that has them.
struct CUstream_st;

#if defined(__CUDACC__)
#define PARRAY_HD __host__ __device__
#else
#define PARRAY_HD
#endif

namespace parray {

// All index arithmetic is 64-bit: a 50000 x 50000 matrix already has more
// elements than a 32-bit int can count.
using index_t = std::int64_t;

// A CUDA stream a call's GPU work is queued on. nullptr means the calling
// thread's default stream (cudaStreamPerThread), never the legacy default
// stream: two threads' calls do not serialise on it.
using GpuStream = CUstream_st*;

// Every user-facing error of the library. The CLI turns it into one line on
// stderr and exit status 2.
class Error : public std::invalid_argument {
 public:
  explicit Error(const std::string& what) : std::invalid_argument(what) {}
};

enum class Dtype { f32, f64 };

// What happened to one row of a benchmark table: verified (and then timed),
// failed its check, or not run, with the reason in the row's note.
enum class Outcome { passed, failed, skipped };

inline const char* outcome_name(Outcome o) {
  return o == Outcome::passed ? "passed" : o == Outcome::failed ? "failed" : "skipped";
}

// A row's note as tables and CSV files show it: "skipped: why" for a row not run.
inline std::string shown_note(Outcome o, const std::string& note) {
  return o == Outcome::skipped ? "skipped: " + note : note;
}

inline const char* dtype_name(Dtype d) { return d == Dtype::f32 ? "f32" : "f64"; }

template <class T>
constexpr Dtype dtype_of();
template <>
constexpr Dtype dtype_of<float>() { return Dtype::f32; }
template <>
constexpr Dtype dtype_of<double>() { return Dtype::f64; }

}  // namespace parray
