// libparray_blas.so's CBLAS and Fortran GEMM entries against OpenBLAS's
// cblas_?gemm (opened by the harness with dlopen, as both export the same
// names), on seeded random problems: either order, every transpose, sizes
// 0..300, padded leading dimensions, alpha and beta 0, 1 or random. What BLAS
// does not read is NaN (the padding past each column or row always, A and B
// when alpha == 0, C when beta == 0) and must not reach C; C's padding must be
// left as it was, and all of C when a reference quick return applies.
// Then illegal arguments: the handlers defined here replace libparray_blas's
// defaults, and must be told the reference's parameter number, C untouched.
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "harness/harness.hpp"

extern "C" {
void cblas_sgemm(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
void cblas_dgemm(int, int, int, int, int, int, double, const double*, int, const double*, int, double, double*,
                 int);
void sgemm_(const char*, const char*, const int*, const int*, const int*, const float*, const float*, const int*,
            const float*, const int*, const float*, float*, const int*);
void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*, const double*, const int*,
            const double*, const int*, const double*, double*, const int*);
}

namespace {

constexpr int kRowMajor = 101, kColMajor = 102, kNoTrans = 111, kTrans = 112, kConjTrans = 113;

// What the error handlers below were last told.
struct Report {
  int calls = 0, number = 0;
  std::string routine;
};
Report report;

}  // namespace

extern "C" void cblas_xerbla(int p, const char* rout, const char*, ...) {
  ++report.calls;
  report.number = p;
  report.routine = rout;
}

// A Fortran XERBLA as gfortran sees it: SRNAME's length is a hidden argument.
extern "C" void xerbla_(const char* srname, const int* info, std::size_t srname_len) {
  ++report.calls;
  report.number = *info;
  report.routine.assign(srname, srname_len);
}

namespace {

// libparray_blas's entries and the routine names they report, for float or double.
template <class T>
struct Api {
  static constexpr bool single = std::is_same_v<T, float>;
  static constexpr auto cblas = [] {
    if constexpr (single) return cblas_sgemm;
    else return cblas_dgemm;
  }();
  static constexpr auto fortran = [] {
    if constexpr (single) return sgemm_;
    else return dgemm_;
  }();
  static constexpr const char* cblas_name = single ? "cblas_sgemm" : "cblas_dgemm";
  static constexpr const char* fortran_name = single ? "SGEMM " : "DGEMM ";
};

// One call's arguments; ta and tb are CBLAS values (Fortran calls translate them).
struct Problem {
  int order = kColMajor, ta = kNoTrans, tb = kNoTrans, m = 0, n = 0, k = 0, lda = 1, ldb = 1, ldc = 1;
  double alpha = 1, beta = 0;
  bool fortran = false;  // through ?gemm_ (column-major)

  std::string str() const {
    std::ostringstream s;
    s << (fortran ? "?gemm_ " : order == kRowMajor ? "row " : order == kColMajor ? "col " : "order ")
      << order << " ta " << ta << " tb " << tb << " m " << m << " n " << n << " k " << k << " lda " << lda
      << " ldb " << ldb << " ldc " << ldc << " alpha " << alpha << " beta " << beta;
    return s.str();
  }
};

// A stored rows x cols matrix: `outer` columns (column-major) or rows
// (row-major) of `inner` elements, ld apart.
struct Stored {
  int order, rows, cols, ld;
  int outer() const { return order == kRowMajor ? rows : cols; }
  int inner() const { return order == kRowMajor ? cols : rows; }
  std::size_t size() const { return std::size_t(std::max(outer(), 0)) * std::max(ld, 1); }
  bool padding(std::size_t i) const { return int(i % ld) >= inner(); }
  std::size_t at(int r, int c) const { return order == kRowMajor ? std::size_t(r) * ld + c : std::size_t(c) * ld + r; }
};

Stored stored_a(const Problem& p) {
  return p.ta == kNoTrans ? Stored{p.order, p.m, p.k, p.lda} : Stored{p.order, p.k, p.m, p.lda};
}
Stored stored_b(const Problem& p) {
  return p.tb == kNoTrans ? Stored{p.order, p.k, p.n, p.ldb} : Stored{p.order, p.n, p.k, p.ldb};
}
Stored stored_c(const Problem& p) { return {p.order, p.m, p.n, p.ldc}; }

// 0..300, mostly small (log-uniform), so that thousands of problems take seconds.
int random_size(std::mt19937_64& rng) {
  if (rng() % 10 == 0) return 0;
  return std::min(300, int(std::exp(std::uniform_real_distribution<double>(0, std::log(301.0))(rng))));
}

double random_scalar(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0: return 0;
    case 1: return 1;
    default: return std::uniform_real_distribution<double>(-2, 2)(rng);
  }
}

Problem random_problem(std::mt19937_64& rng) {
  constexpr int trans[] = {kNoTrans, kTrans, kConjTrans};
  Problem p;
  p.order = rng() % 2 ? kRowMajor : kColMajor;
  p.ta = trans[rng() % 3];
  p.tb = trans[rng() % 3];
  p.m = random_size(rng), p.n = random_size(rng), p.k = random_size(rng);
  p.alpha = random_scalar(rng);
  p.beta = random_scalar(rng);
  p.fortran = p.order == kColMajor && rng() % 2;
  // ld: the least legal value plus 0..7 elements of padding.
  p.lda = std::max(1, stored_a(p).inner()) + int(rng() % 8);
  p.ldb = std::max(1, stored_b(p).inner()) + int(rng() % 8);
  p.ldc = std::max(1, stored_c(p).inner()) + int(rng() % 8);
  return p;
}

// One operand twice: `given` to parray, NaN where BLAS does not read it;
// `full` to OpenBLAS, which reads A and B even when alpha == 0 (0.3.21 gave
// NaN there), with values in [-1, 1) wherever the matrix is. Both are NaN in
// the padding.
template <class T>
struct Operand {
  std::vector<T> given, full;
};

template <class T>
Operand<T> operand(const Stored& s, bool read, std::mt19937_64& rng) {
  Operand<T> o{std::vector<T>(s.size(), std::numeric_limits<T>::quiet_NaN()), {}};
  o.full = o.given;
  std::uniform_real_distribution<T> value(-1, 1);
  for (std::size_t i = 0; i < s.size(); ++i)
    if (!s.padding(i)) o.full[i] = value(rng);
  if (read) o.given = o.full;
  return o;
}

// Lower and upper case are both legal: the calls use some of each.
char fortran_trans(int t) { return t == kNoTrans ? 'N' : t == kTrans ? 't' : 'C'; }

template <class T>
void call_parray(const Problem& p, const T* a, const T* b, T* c) {
  const T alpha = T(p.alpha), beta = T(p.beta);
  if (!p.fortran)
    return Api<T>::cblas(p.order, p.ta, p.tb, p.m, p.n, p.k, alpha, a, p.lda, b, p.ldb, beta, c, p.ldc);
  const char ta = fortran_trans(p.ta), tb = fortran_trans(p.tb);
  Api<T>::fortran(&ta, &tb, &p.m, &p.n, &p.k, &alpha, a, &p.lda, b, &p.ldb, &beta, c, &p.ldc);
}

template <class T>
bool same_bits(T x, T y) {
  return std::memcmp(&x, &y, sizeof x) == 0;
}

// Twice the forward-error bound of docs/verification.md (each result may be
// that far from the exact one): 4 (K + 4) u (|alpha| (|A||B|)_ij + |beta| |C0_ij|).
template <class T>
double tolerance(const Problem& p, const std::vector<T>& a, const std::vector<T>& b, T c0, int i, int j) {
  const double u = std::numeric_limits<T>::epsilon() / 2;
  double ab = 0;
  if (p.alpha != 0) {
    const Stored sa = stored_a(p), sb = stored_b(p);
    for (int l = 0; l < p.k; ++l)
      ab += std::abs(double(a[p.ta == kNoTrans ? sa.at(i, l) : sa.at(l, i)])) *
            std::abs(double(b[p.tb == kNoTrans ? sb.at(l, j) : sb.at(j, l)]));
  }
  const double c_term = p.beta != 0 ? std::abs(p.beta * double(c0)) : 0;
  return 4.0 * (p.k + 4) * u * (std::abs(p.alpha) * ab + c_term);
}

// "" when parray's C agrees with OpenBLAS's, else what is wrong.
template <class T>
std::string compare(const Problem& p, const std::vector<T>& a, const std::vector<T>& b, const std::vector<T>& c0,
                    const std::vector<T>& mine, const std::vector<T>& theirs) {
  const Stored sc = stored_c(p);
  const bool quick = p.m == 0 || p.n == 0 || ((p.alpha == 0 || p.k == 0) && p.beta == 1);
  for (std::size_t e = 0; e < mine.size(); ++e)
    if ((quick || sc.padding(e)) && !same_bits(mine[e], c0[e]))
      return "C[" + std::to_string(e) + "] was written (padding or a quick return)";
  for (int i = 0; i < p.m; ++i)
    for (int j = 0; j < p.n; ++j) {
      const std::size_t e = sc.at(i, j);
      const double err = std::abs(double(mine[e]) - double(theirs[e]));
      if (!std::isfinite(mine[e]) || !(err <= tolerance(p, a, b, c0[e], i, j)))
        return "C(" + std::to_string(i) + "," + std::to_string(j) + ") is " + std::to_string(mine[e]) +
               ", OpenBLAS " + std::to_string(theirs[e]);
    }
  return "";
}

template <class T>
void fuzz_against_openblas(int cases, std::uint64_t seed) {
  if (std::string why = parray::baseline_missing("openblas"); !why.empty()) GTEST_SKIP() << "OpenBLAS: " << why;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < cases; ++i) {
    const Problem p = random_problem(rng);
    const Operand<T> a = operand<T>(stored_a(p), p.alpha != 0, rng), b = operand<T>(stored_b(p), p.alpha != 0, rng),
                     c = operand<T>(stored_c(p), p.beta != 0, rng);
    std::vector<T> mine = c.given, theirs = c.full;
    report = {};
    call_parray(p, a.given.data(), b.given.data(), mine.data());
    parray::baseline_cblas_gemm<T>("openblas", p.order, p.ta, p.tb, p.m, p.n, p.k, T(p.alpha), a.full.data(), p.lda,
                                   b.full.data(), p.ldb, T(p.beta), theirs.data(), p.ldc);
    ASSERT_EQ(report.calls, 0) << "case " << i << ": " << p.str() << " reported parameter " << report.number;
    const std::string why = compare(p, a.full, b.full, c.given, mine, theirs);
    ASSERT_EQ(why, "") << "case " << i << ": " << p.str();
  }
}

TEST(BlasFuzz, SgemmMatchesOpenBlas) { fuzz_against_openblas<float>(2000, 20270101); }
TEST(BlasFuzz, DgemmMatchesOpenBlas) { fuzz_against_openblas<double>(2000, 20270102); }

// The reference's quick returns do not even write C back unchanged: with C on
// a read-only page, a write would end the test with SIGSEGV.
TEST(BlasFuzz, QuickReturnsLeaveCUntouched) {
  report = {};
  const long page = sysconf(_SC_PAGESIZE);
  void* mem = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* c = static_cast<double*>(mem);
  for (int i = 0; i < 16; ++i) c[i] = i;
  ASSERT_EQ(mprotect(mem, page, PROT_READ), 0);
  const std::vector<double> a(16, 1.0);
  const std::vector<float> af(16, 1.0f);
  for (int order : {kRowMajor, kColMajor}) {
    cblas_dgemm(order, kNoTrans, kTrans, 4, 4, 4, 0.0, a.data(), 4, a.data(), 4, 1.0, c, 4);  // alpha == 0
    cblas_dgemm(order, kTrans, kNoTrans, 4, 4, 0, 2.0, a.data(), 4, a.data(), 4, 1.0, c, 4);  // K == 0
    cblas_sgemm(order, kNoTrans, kNoTrans, 0, 4, 4, 2.0f, af.data(), 4, af.data(), 4, 0.0f,
                reinterpret_cast<float*>(c), 4);  // M == 0
  }
  const int four = 4, zero = 0, one = 1;
  const double two = 2, unit = 1;
  dgemm_("N", "N", &four, &zero, &four, &two, a.data(), &four, a.data(), &four, &two, c, &four);   // N == 0
  dgemm_("T", "T", &four, &four, &zero, &two, a.data(), &one, a.data(), &four, &unit, c, &four);  // K == 0
  EXPECT_EQ(report.calls, 0) << "an illegal call: parameter " << report.number;
  for (int i = 0; i < 16; ++i) EXPECT_EQ(c[i], i);
  munmap(mem, page);
}

// ---- illegal arguments --------------------------------------------------------

// The number the reference reports: its checks run in the order of these
// numbers, so the least illegal one. CBLAS numbers the parameters of the
// cblas_ call (1 order ... 14 ldc); a row-major call reaches the Fortran
// routine as C^T = B^T A^T, so M and N, lda and ldb trade numbers there.
// The Fortran routine numbers its own (1 transa ... 13 ldc).
int expected_number(const Problem& p) {
  const bool legal_enums = (p.fortran || p.order == kRowMajor || p.order == kColMajor) &&
                           p.ta >= kNoTrans && p.ta <= kConjTrans && p.tb >= kNoTrans && p.tb <= kConjTrans;
  const bool swap = !p.fortran && p.order == kRowMajor;
  const int shift = p.fortran ? 0 : 1;
  const int numbers[] = {
      p.order == kRowMajor || p.order == kColMajor ? 0 : 1,
      p.ta >= kNoTrans && p.ta <= kConjTrans ? 0 : 1 + shift,
      p.tb >= kNoTrans && p.tb <= kConjTrans ? 0 : 2 + shift,
      p.m >= 0 ? 0 : (swap ? 4 : 3) + shift,
      p.n >= 0 ? 0 : (swap ? 3 : 4) + shift,
      p.k >= 0 ? 0 : 5 + shift,
      !legal_enums || p.lda >= std::max(1, stored_a(p).inner()) ? 0 : (swap ? 10 : 8) + shift,
      !legal_enums || p.ldb >= std::max(1, stored_b(p).inner()) ? 0 : (swap ? 8 : 10) + shift,
      !legal_enums || p.ldc >= std::max(1, stored_c(p).inner()) ? 0 : 13 + shift,
  };
  int least = 0;
  for (int n : numbers)
    if (n != 0 && (least == 0 || n < least)) least = n;
  return least;
}

// A legal problem of at most 8 x 8 x 8 with some of its arguments made illegal.
Problem illegal_problem(std::mt19937_64& rng, bool fortran) {
  constexpr int bad_enum[] = {0, -1, 100, 103, 110, 114, 121};
  Problem p;
  do {
    p = random_problem(rng);
    p.m %= 9, p.n %= 9, p.k %= 9;
    p.fortran = fortran;
    if (fortran) p.order = kColMajor;
    p.lda = std::max(1, stored_a(p).inner()), p.ldb = std::max(1, stored_b(p).inner());
    p.ldc = std::max(1, stored_c(p).inner());
    auto broken = [&] { return rng() % 4 == 0; };
    auto smaller = [&](int ld) { return ld - 1 - int(rng() % (ld + 2)); };
    if (!fortran && broken()) p.order = bad_enum[rng() % 7];
    if (broken()) p.ta = bad_enum[rng() % 7];
    if (broken()) p.tb = bad_enum[rng() % 7];
    if (broken()) p.m = -1 - int(rng() % 3);
    if (broken()) p.n = -1 - int(rng() % 3);
    if (broken()) p.k = -1 - int(rng() % 3);
    if (broken()) p.lda = smaller(p.lda);
    if (broken()) p.ldb = smaller(p.ldb);
    if (broken()) p.ldc = smaller(p.ldc);
  } while (expected_number(p) == 0);
  return p;
}

// Fortran calls pass their transposes as characters; an illegal CBLAS value
// becomes an illegal character.
char fortran_trans_or_bad(int t, std::mt19937_64& rng) {
  return t >= kNoTrans && t <= kConjTrans ? fortran_trans(t) : "XA/ \0R"[rng() % 6];
}

template <class T>
void fuzz_illegal(bool fortran, int cases, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::vector<T> a(256, std::numeric_limits<T>::quiet_NaN()), b = a;
  std::vector<T> c0(256);
  for (std::size_t i = 0; i < c0.size(); ++i) c0[i] = T(i) / 7;
  for (int i = 0; i < cases; ++i) {
    const Problem p = illegal_problem(rng, fortran);
    std::vector<T> c = c0;
    report = {};
    if (fortran) {
      const char ta = fortran_trans_or_bad(p.ta, rng), tb = fortran_trans_or_bad(p.tb, rng);
      const T alpha = T(p.alpha), beta = T(p.beta);
      Api<T>::fortran(&ta, &tb, &p.m, &p.n, &p.k, &alpha, a.data(), &p.lda, b.data(), &p.ldb, &beta, c.data(),
                      &p.ldc);
    } else {
      call_parray(p, a.data(), b.data(), c.data());
    }
    const char* routine = fortran ? Api<T>::fortran_name : Api<T>::cblas_name;
    ASSERT_EQ(report.calls, 1) << "case " << i << ": " << p.str();
    ASSERT_EQ(report.routine, routine) << "case " << i << ": " << p.str();
    ASSERT_EQ(report.number, expected_number(p)) << "case " << i << ": " << p.str();
    ASSERT_EQ(std::memcmp(c.data(), c0.data(), c.size() * sizeof(T)), 0) << "C written, case " << i << ": " << p.str();
  }
}

TEST(BlasFuzz, IllegalCblasArguments) {
  fuzz_illegal<float>(false, 2000, 1);
  fuzz_illegal<double>(false, 2000, 2);
}

TEST(BlasFuzz, IllegalFortranArguments) {
  fuzz_illegal<float>(true, 2000, 3);
  fuzz_illegal<double>(true, 2000, 4);
}

// The entries called above are libparray_blas's, not OpenBLAS's (which this
// process may also load, through the libraries the harness links).
TEST(BlasFuzz, EntriesAreLibparrayBlas) {
  for (void* f : {reinterpret_cast<void*>(&cblas_sgemm), reinterpret_cast<void*>(&cblas_dgemm),
                  reinterpret_cast<void*>(&sgemm_), reinterpret_cast<void*>(&dgemm_)}) {
    Dl_info info{};
    ASSERT_NE(dladdr(f, &info), 0);
    EXPECT_NE(std::string(info.dli_fname).find("libparray_blas"), std::string::npos) << info.dli_fname;
  }
}

}  // namespace
