// FAISS IndexFlatL2 / IndexFlatIP (exact brute force: BLAS SGEMM + heaps) as
// the CPU k-NN baseline, when CMake found FAISS (Debian: libfaiss-dev). FAISS
// is never required: without it faiss_available() is false and the k-NN
// registry records faiss-flat as missing.
#include <dlfcn.h>
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "harness/knn_bench.hpp"

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

namespace {

// FAISS searches the FP32 base whatever KnnData::storage() says (stores_16bit
// is false): callers that want the 16-bit base refuse it by that flag.
KnnSearch faiss_search(KnnData& x, const KnnOptions& o) {
  check_knn_problem(x.n(), x.q(), x.d(), o);
  struct Results {
    std::vector<float> dist;
    std::vector<index_t> idx;
  };
  auto r = std::make_shared<Results>();
  r->dist.assign(std::size_t(x.q() * o.k), std::nanf(""));
  r->idx.assign(std::size_t(x.q() * o.k), -1);
  const FaissFlatIndex& index = x.faiss_index(o.metric);
  KnnSearch s;
  s.name = "faiss-flat";
  s.run = [&x, &index, o, r] { index.search(x.queries(), x.q(), o.k, o.threads, r->dist.data(), r->idx.data()); };
  s.results = [r](float* distances, index_t* indices) {
    std::copy(r->dist.begin(), r->dist.end(), distances);
    std::copy(r->idx.begin(), r->idx.end(), indices);
  };
  return s;
}

}  // namespace

void register_knn_baselines(KnnRegistry& r) {
  if (r.find_or_null("faiss-flat") || r.absent_or_null("faiss-flat")) return;
  KnnImpl i;
  i.name = "faiss-flat";
  i.aliases = {"faiss"};
  i.description = faiss_description();
  i.baseline = true;
  i.threaded = true;
  i.tags = {"baseline"};
  i.preconditions = "host data; searches the FP32 base, no 16-bit storage";
  if (!faiss_available()) {
    r.add_absent(std::move(i), faiss_description());
    return;
  }
  i.prepare = faiss_search;
  r.add(std::move(i));
}

}  // namespace parray
