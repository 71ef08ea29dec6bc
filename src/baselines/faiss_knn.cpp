// FAISS IndexFlatL2 / IndexFlatIP (exact brute force: BLAS SGEMM + heaps) as
// the CPU k-NN baseline, when CMake found FAISS (Debian: libfaiss-dev). FAISS
// is never required: without it faiss_available() is false and `bench knn`
// reports it missing.
#include <dlfcn.h>
#include <omp.h>

#include "parray/knn_bench.hpp"

#if PARRAY_HAVE_FAISS
#include <faiss/IndexFlat.h>
#endif

namespace parray {

bool faiss_available() { return PARRAY_HAVE_FAISS != 0; }

std::string faiss_description() {
  return faiss_available() ? "FAISS IndexFlatL2/IP (Debian libfaiss-dev; BLAS SGEMM from libblas.so.3 + heaps)"
                           : "FAISS not built in (Debian: libfaiss-dev)";
}

#if PARRAY_HAVE_FAISS
struct FaissFlatIndex::Impl {
  std::unique_ptr<faiss::IndexFlat> index;
};
#else
struct FaissFlatIndex::Impl {};
#endif

FaissFlatIndex::FaissFlatIndex(const float* base, index_t n, index_t d, Metric metric)
    : impl_(std::make_unique<Impl>()), n_(n), d_(d) {
  KnnOptions o;
  o.k = 1;
  check_knn_problem(n, 0, d, o);
#if PARRAY_HAVE_FAISS
  if (metric == Metric::l2) impl_->index = std::make_unique<faiss::IndexFlatL2>(int(d));
  else impl_->index = std::make_unique<faiss::IndexFlatIP>(int(d));
  impl_->index->add(n, base);
#else
  (void)base, (void)metric;
  throw Error("FAISS is not built into this parray (install libfaiss-dev and reconfigure)");
#endif
}

FaissFlatIndex::~FaissFlatIndex() = default;

void FaissFlatIndex::search(const float* queries, index_t q, index_t k, int threads, float* distances,
                            index_t* indices) const {
  KnnOptions o;
  o.k = k;
  check_knn_problem(n_, q, d_, o);
#if PARRAY_HAVE_FAISS
  // FAISS parallelises with OpenMP's global thread count and calls sgemm_ of
  // the process's BLAS (Debian's OpenBLAS behind libblas.so.3).
  omp_set_num_threads(threads > 0 ? threads : omp_get_max_threads());
  if (auto set = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set(threads > 0 ? threads : omp_get_max_threads());
  static_assert(sizeof(faiss::Index::idx_t) == sizeof(index_t));
  impl_->index->search(q, queries, k, distances, reinterpret_cast<faiss::Index::idx_t*>(indices));
#else
  (void)queries, (void)threads, (void)distances, (void)indices;
#endif
}

}  // namespace parray
