// GEMM step 17: a short K (K <= 32). C = alpha A B + beta C where each
// element of C is at most 32 multiply-adds: the product costs C's traffic,
// not its arithmetic, and the tile kernels, built to overlap copies of long
// K panels with the products, spend most of their time on a pipeline that
// never fills and on an epilogue that writes C scalar by scalar.
//
//  * one block a tile of 64 rows and 32 x 16 bytes of C (64 x 128 floats,
//    64 x 64 doubles), 256 threads of 8 rows x 16 bytes: a warp writes 8 of
//    the tile's rows, each as 32 lanes x 16 bytes (one 512-byte coalesced
//    store per row) where C's rows are contiguous and aligned, else as
//    stores of 32 consecutive elements;
//  * A's 64 x K and B's K x BN panels copied once into shared memory
//    (A transposed, rows padded by 16 bytes: the lanes of a warp read one
//    A value, a broadcast, and 16 consecutive bytes of B, conflict-free), along
//    whichever of each operand's strides is 1, so any strided layout reads
//    coalesced;
//  * beta == 0 never reads C and is a kernel of its own, whose registers
//    (no old values held) leave room for 4 blocks an SM — the kernel waits
//    on its panels' loads and its stores, so blocks in flight are its speed;
//    otherwise C's old values are loaded before the products, all of a
//    thread's rows at once.
#pragma once

#include "parray/core.hpp"

namespace parray::cuda::ladder {

// T: float or double. A thread's TN columns are 16 bytes of a row.
template <class T>
struct ShortK {
  static constexpr int kMax = 32, BM = 64, NT = 256, TM = 8, TN = 16 / int(sizeof(T)), BN = 32 * TN;
  static constexpr int kApad = BM + TN;
};

template <class T>
struct ShortKOperands {
  const T* a;
  index_t rsa, csa;
  const T* b;
  index_t rsb, csb;
  T* c;
  index_t rsc, csc;
};

// 16 bytes (4 floats, 2 doubles) as one load or store.
template <class T>
struct alignas(16) Bytes16 {
  T v[16 / sizeof(T)];
};

template <class T>
__device__ inline Bytes16<T> load16(const T* p) {
  return *reinterpret_cast<const Bytes16<T>*>(p);
}

// kVecC: C's rows are along its unit stride, 16-byte aligned (16-byte stores).
// kReadC: beta != 0.
template <class T, bool kVecC, bool kReadC>
__global__ void __launch_bounds__(ShortK<T>::NT, kReadC ? 2 : 4)
    short_k_gemm(index_t m, index_t n, int k, T alpha, T beta, ShortKOperands<T> o, index_t tiles_n) {
  using S = ShortK<T>;
  __shared__ __align__(16) T as[S::kMax][S::kApad];  // as[kk][i] = A(i0 + i, kk)
  __shared__ __align__(16) T bs[S::kMax][S::BN];     // bs[kk][j] = B(kk, j0 + j)
  const index_t i0 = index_t(blockIdx.x) / tiles_n * S::BM, j0 = index_t(blockIdx.x) % tiles_n * S::BN;
  const bool a_along_k = o.csa == 1 && o.rsa != 1, b_along_k = o.rsb == 1 && o.csb != 1;
  for (int e = threadIdx.x; e < S::BM * k; e += S::NT) {
    const int i = a_along_k ? e / k : e % S::BM, kk = a_along_k ? e % k : e / S::BM;
    as[kk][i] = i0 + i < m ? __ldg(o.a + (i0 + i) * o.rsa + kk * o.csa) : T(0);
  }
  for (int e = threadIdx.x; e < S::BN * k; e += S::NT) {
    const int j = b_along_k ? e / k : e % S::BN, kk = b_along_k ? e % k : e / S::BN;
    bs[kk][j] = j0 + j < n ? __ldg(o.b + kk * o.rsb + (j0 + j) * o.csb) : T(0);
  }
  const int ty = threadIdx.x / 32, tx = threadIdx.x % 32;
  // A thread's TN columns: consecutive where C's rows take 16-byte stores,
  // else a warp-width apart, so that each scalar store of a warp is 32
  // consecutive elements (TN consecutive per lane would touch each 128 bytes
  // of C TN times, once per store).
  auto col = [&](int q) { return kVecC ? tx * S::TN + q : q * 32 + tx; };
  const index_t jv = j0 + tx * S::TN;  // the vector path's first column
  // beta != 0: C's old values are loaded before the products, all of a
  // thread's loads in flight at once (loaded row by row after them, each
  // store would wait for its row's load).
  T old[S::TM][S::TN] = {};
  if constexpr (kReadC)
#pragma unroll
    for (int r = 0; r < S::TM; ++r) {
      const index_t i = i0 + ty * S::TM + r;
      if (i >= m) break;
      const T* row = o.c + i * o.rsc;
      if (kVecC && jv + S::TN <= n) {
        const Bytes16<T> v = load16(row + jv);
#pragma unroll
        for (int q = 0; q < S::TN; ++q) old[r][q] = v.v[q];
      } else {
#pragma unroll
        for (int q = 0; q < S::TN; ++q)
          if (j0 + col(q) < n) old[r][q] = row[(j0 + col(q)) * o.csc];
      }
    }
  __syncthreads();
  T acc[S::TM][S::TN] = {};
#pragma unroll 4
  for (int kk = 0; kk < k; ++kk) {
    T av[S::TM];
#pragma unroll
    for (int h = 0; h < S::TM; h += S::TN) {
      const Bytes16<T> a = load16(&as[kk][ty * S::TM + h]);
#pragma unroll
      for (int q = 0; q < S::TN; ++q) av[h + q] = a.v[q];
    }
    T bw[S::TN];
    if constexpr (kVecC) {
      const Bytes16<T> bv = load16(&bs[kk][tx * S::TN]);
#pragma unroll
      for (int q = 0; q < S::TN; ++q) bw[q] = bv.v[q];
    } else {
#pragma unroll
      for (int q = 0; q < S::TN; ++q) bw[q] = bs[kk][col(q)];
    }
#pragma unroll
    for (int r = 0; r < S::TM; ++r)
#pragma unroll
      for (int q = 0; q < S::TN; ++q) acc[r][q] += av[r] * bw[q];
  }
#pragma unroll
  for (int r = 0; r < S::TM; ++r) {
    const index_t i = i0 + ty * S::TM + r;
    if (i >= m) break;
    T* row = o.c + i * o.rsc;
    if (kVecC && jv + S::TN <= n) {
      Bytes16<T> v;
#pragma unroll
      for (int q = 0; q < S::TN; ++q) v.v[q] = kReadC ? alpha * acc[r][q] + beta * old[r][q] : alpha * acc[r][q];
      *reinterpret_cast<Bytes16<T>*>(row + jv) = v;
    } else {
#pragma unroll
      for (int q = 0; q < S::TN; ++q) {
        const index_t j = j0 + col(q);
        if (j < n) row[j * o.csc] = kReadC ? alpha * acc[r][q] + beta * old[r][q] : alpha * acc[r][q];
      }
    }
  }
}

}  // namespace parray::cuda::ladder
