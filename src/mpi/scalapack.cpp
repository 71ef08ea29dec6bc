// ScaLAPACK's psgemm / pdgemm as the baseline of `parray dist-gemm --baseline
// scalapack`, on a BLACS "Row" grid over MPI_COMM_WORLD (the same
// coordinates as MpiThreadArray) and the very same local blocks, whose
// descriptors DistMatrix::desc() gives.
#include <string>

#include "parray/mpi/summa.hpp"

#if PARRAY_HAVE_SCALAPACK
extern "C" {
void Cblacs_get(int context, int what, int* value);
void Cblacs_gridinit(int* context, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int context);
void psgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const float* alpha,
             const float* a, const int* ia, const int* ja, const int* desca, const float* b, const int* ib,
             const int* jb, const int* descb, const float* beta, float* c, const int* ic, const int* jc,
             const int* descc, std::size_t, std::size_t);
void pdgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const double* alpha,
             const double* a, const int* ia, const int* ja, const int* desca, const double* b, const int* ib,
             const int* jb, const int* descb, const double* beta, double* c, const int* ic, const int* jc,
             const int* descc, std::size_t, std::size_t);
}
#endif

namespace parray::mpi {

bool scalapack_available() { return PARRAY_HAVE_SCALAPACK != 0; }

template <class T>
void scalapack_gemm(Trans trans_a, Trans trans_b, T alpha, const DistMatrix<T>& a, const DistMatrix<T>& b, T beta,
                    DistMatrix<T>& c) {
#if PARRAY_HAVE_SCALAPACK
  const MpiThreadArray& grid = c.grid();
  int ctxt = 0;
  Cblacs_get(0, 0, &ctxt);
  Cblacs_gridinit(&ctxt, "Row", grid.rows(), grid.cols());
  int pr = 0, pc = 0, myrow = -1, mycol = -1;
  Cblacs_gridinfo(ctxt, &pr, &pc, &myrow, &mycol);
  if (myrow != grid.coord().row || mycol != grid.coord().col)
    throw Error("scalapack: BLACS placed this rank at (" + std::to_string(myrow) + "," + std::to_string(mycol) +
                "), the process array at (" + std::to_string(grid.coord().row) + "," + std::to_string(grid.coord().col) + ")");
  const auto da = a.desc(ctxt).array(), db = b.desc(ctxt).array(), dc = c.desc(ctxt).array();
  const char ta = trans_a == Trans::yes ? 'T' : 'N', tb = trans_b == Trans::yes ? 'T' : 'N';
  const int m = static_cast<int>(c.rows()), n = static_cast<int>(c.cols());
  const int k = static_cast<int>(trans_a == Trans::yes ? a.rows() : a.cols());
  const int one = 1;
  if constexpr (std::is_same_v<T, float>)
    psgemm_(&ta, &tb, &m, &n, &k, &alpha, a.data(), &one, &one, da.data(), b.data(), &one, &one, db.data(), &beta,
            c.data(), &one, &one, dc.data(), 1, 1);
  else
    pdgemm_(&ta, &tb, &m, &n, &k, &alpha, a.data(), &one, &one, da.data(), b.data(), &one, &one, db.data(), &beta,
            c.data(), &one, &one, dc.data(), 1, 1);
  Cblacs_gridexit(ctxt);
#else
  (void)trans_a, (void)trans_b, (void)alpha, (void)a, (void)b, (void)beta, (void)c;
  throw Error("--baseline scalapack: this build found no ScaLAPACK (Debian: libscalapack-openmpi-dev)");
#endif
}

template void scalapack_gemm<float>(Trans, Trans, float, const DistMatrix<float>&, const DistMatrix<float>&, float,
                                    DistMatrix<float>&);
template void scalapack_gemm<double>(Trans, Trans, double, const DistMatrix<double>&, const DistMatrix<double>&,
                                     double, DistMatrix<double>&);

}  // namespace parray::mpi
