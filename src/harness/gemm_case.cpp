// GemmCase: operands in named layouts, poisoning, the FP64 reference and the
// verification described in src/harness/include/harness/harness.hpp.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "parray/config.hpp"
#include "parray/gemm.hpp"
#include "harness/harness.hpp"

#if PARRAY_HAVE_CUDA
#include "harness/reference.hpp"
#include "parray/cuda_runtime.hpp"
#endif

namespace parray {

std::string GemmProblem::layouts() const {
  if (layout_a == layout_b && layout_b == layout_c) return layout_a;
  return layout_a + "/" + layout_b + "/" + layout_c;
}

namespace {

// splitmix64: a tiny, fast, reproducible generator (the same numbers on every
// platform, unlike std::uniform_real_distribution).
struct Random {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() {  // [-1, 1), 53 random bits
    return static_cast<double>(next() >> 11) * std::ldexp(1.0, -52) - 1.0;
  }
  int small_int() { return static_cast<int>(next() % 9); }  // 0..8, as in the CUDA lab report
};

// Above this many multiply-adds the element-wise bound is checked on a
// sample of elements instead of all (the bound costs as much as the product).
constexpr double kFullBoundWork = 2.2e9;
constexpr index_t kBoundSamples = 65536;

}  // namespace

struct GemmCase::Impl {
  virtual ~Impl() = default;
  virtual CheckResult run_and_check(const GemmImpl& impl, int threads) = 0;
  virtual void run(const GemmImpl& impl, int threads) = 0;
  virtual std::string print() const = 0;
  virtual void run_fresh(const GemmImpl& impl, int threads) = 0;
  virtual void restore(const GemmImpl& impl) = 0;
  virtual CheckResult check_result(const GemmImpl& impl) = 0;
  virtual const void* c_storage() const = 0;
  virtual std::size_t c_storage_bytes() const = 0;
  virtual CheckResult check_c(const void* storage) = 0;
};

namespace {

template <class T>
class TypedCase final : public GemmCase::Impl {
 public:
  explicit TypedCase(const GemmProblem& p)
      : p_(p),
        ta_(make_matrix_type(p.layout_a, p.m, p.k)),
        tb_(make_matrix_type(p.layout_b, p.k, p.n)),
        tc_(make_matrix_type(p.layout_c, p.m, p.n)),
        a_(ta_.storage),
        b_(tb_.storage),
        c_(tc_.storage),
        c_init_(tc_.storage) {
    const T nan = std::numeric_limits<T>::quiet_NaN();
    // Poison every storage element first: padding stays NaN, so an
    // implementation that reads outside the logical matrix gets NaN.
    for (Array<T>* arr : {&a_, &b_, &c_init_})
      std::fill(arr->data(), arr->data() + arr->storage_elements(), nan);
    va_ = a_.view(ta_.view);
    vb_ = b_.view(tb_.view);
    vc_init_ = c_init_.view(tc_.view);
    vc_ = c_.view(tc_.view);
    Random rng{p.seed};
    auto fill = [&](MatrixView<T> v) {
      for (index_t i = 0; i < v.rows(); ++i)
        for (index_t j = 0; j < v.cols(); ++j)
          v(i, j) = p.int_inputs ? static_cast<T>(rng.small_int()) : static_cast<T>(rng.uniform());
    };
    fill(va_);
    fill(vb_);
    if (p.beta != 0.0) fill(vc_init_);  // else C stays NaN: beta == 0 must not read it
    std::memcpy(c_.data(), c_init_.data(), bytes(c_));
    if (!p.skip_reference) compute_reference();
  }

  void run(const GemmImpl& impl, int threads) override {
    delivered_ = impl.delivers(dtype_of<T>(), p_.precision);  // the check's tolerance follows it
    const T alpha = static_cast<T>(p_.alpha), beta = static_cast<T>(p_.beta);
    if (impl.operand_memory == Memory::device) {
      ensure_device_copies();
      gemm<T>(impl, alpha, dva_, dvb_, beta, dvc_, threads, p_.precision);
    } else {
      gemm<T>(impl, alpha, va_, vb_, beta, vc_, threads, p_.precision);
    }
  }

  CheckResult run_and_check(const GemmImpl& impl, int threads) override {
    run_fresh(impl, threads);
    return check();
  }

  void run_fresh(const GemmImpl& impl, int threads) override {
    restore_c(impl);
    run(impl, threads);
    fetch_c(impl);
  }

  void restore(const GemmImpl& impl) override { restore_c(impl); }

  CheckResult check_result(const GemmImpl& impl) override {
    fetch_c(impl);
    return check();
  }

  const void* c_storage() const override { return c_.data(); }
  std::size_t c_storage_bytes() const override { return bytes(c_); }

  CheckResult check_c(const void* storage) override {
    std::memcpy(c_.data(), storage, bytes(c_));
    return check();
  }

  std::string print() const override {
    std::ostringstream out;
    auto show = [&](const char* name, MatrixView<const T> v) {
      out << name << " (" << v.rows() << "x" << v.cols() << "):\n";
      for (index_t i = 0; i < v.rows(); ++i) {
        for (index_t j = 0; j < v.cols(); ++j) out << (j ? " " : "  ") << v(i, j);
        out << "\n";
      }
    };
    show("A", va_);
    show("B", vb_);
    if (p_.beta != 0.0) show("C (before)", vc_init_);
    show("C", vc_);
    return out.str();
  }

 private:
  static std::size_t bytes(const Array<T>& arr) {
    return static_cast<std::size_t>(arr.storage_elements()) * sizeof(T);
  }

  // C from the device into the host copy that check() reads (a blocking copy: it waits for the run).
  void fetch_c(const GemmImpl& impl) {
    if (impl.operand_memory == Memory::device)
      copy_bytes(c_.data(), Memory::paged, dc_->data(), Memory::device, bytes(c_));
  }

  void restore_c(const GemmImpl& impl) {
    std::memcpy(c_.data(), c_init_.data(), bytes(c_));
    if (impl.operand_memory == Memory::device) {
      ensure_device_copies();
      copy_bytes(dc_->data(), Memory::device, c_init_.data(), Memory::paged, bytes(c_));
    }
  }

  // Device copies of the same storage, made on first use by a GPU implementation.
  void ensure_device_copies() {
    if (da_) return;
    da_ = std::make_unique<Array<T>>(ta_.storage, Memory::device);
    db_ = std::make_unique<Array<T>>(tb_.storage, Memory::device);
    dc_ = std::make_unique<Array<T>>(tc_.storage, Memory::device);
    copy_bytes(da_->data(), Memory::device, a_.data(), Memory::paged, bytes(a_));
    copy_bytes(db_->data(), Memory::device, b_.data(), Memory::paged, bytes(b_));
    copy_bytes(dc_->data(), Memory::device, c_init_.data(), Memory::paged, bytes(c_));
    dva_ = da_->view(ta_.view);
    dvb_ = db_->view(tb_.view);
    dvc_ = dc_->view(tc_.view);
    dc_init_ = std::make_unique<Array<T>>(tc_.storage, Memory::device);
    copy_bytes(dc_init_->data(), Memory::device, c_init_.data(), Memory::paged, bytes(c_));
    dvc_init_ = dc_init_->view(tc_.view);
  }

  // C_ref = alpha A B + beta C0 in FP64, row-major M x N, with OpenMP over
  // rows. For problems up to kFullBoundWork the same pass accumulates |A||B|
  // for the element-wise bound of every element; above it the bound is
  // computed for a sample of elements from |A| and |B|^T kept row-contiguous.
  void compute_reference() {
    const index_t m = p_.m, n = p_.n, k = p_.k;
    const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    const bool full_bound = work <= kFullBoundWork;
    (void)work;
#if PARRAY_HAVE_CUDA
    // Large problems on a machine with a GPU: the FP64 product on the device
    // (cuda::reference_gemm_f64), the bound data on the host as usual.
    const bool on_device = p_.reference_on_device && !full_bound && cuda_available();
#else
    constexpr bool on_device = false;  // no GPU reference without CUDA
    (void)on_device;
#endif
    ref_.assign(static_cast<std::size_t>(m * n), 0.0);
    if (full_bound) abs_ab_.assign(static_cast<std::size_t>(m * n), 0.0);
    std::vector<double> b(static_cast<std::size_t>(k * n));
    a64_.resize(static_cast<std::size_t>(m * k));
    for (index_t i = 0; i < m; ++i)
      for (index_t l = 0; l < k; ++l) a64_[static_cast<std::size_t>(i * k + l)] = va_(i, l);
    for (index_t l = 0; l < k; ++l)
      for (index_t j = 0; j < n; ++j) b[static_cast<std::size_t>(l * n + j)] = vb_(l, j);
    if (!full_bound) {
      bt_abs_.resize(static_cast<std::size_t>(n * k));
      for (index_t l = 0; l < k; ++l)
        for (index_t j = 0; j < n; ++j) bt_abs_[static_cast<std::size_t>(j * k + l)] = std::fabs(b[static_cast<std::size_t>(l * n + j)]);
    }
#if PARRAY_HAVE_CUDA
    if (on_device) {
      ensure_device_copies();
      Array<double> out(Layout::dense({m, n}), Memory::device);
      cuda::reference_gemm_f64<T>(p_.alpha, dva_, dvb_, p_.beta, dvc_init_, out.view());
      copy_bytes(ref_.data(), Memory::paged, out.data(), Memory::device, ref_.size() * sizeof(double));
      return;
    }
#endif
#pragma omp parallel for schedule(static)
    for (index_t i = 0; i < m; ++i) {
      double* row = &ref_[static_cast<std::size_t>(i * n)];
      double* abs_row = full_bound ? &abs_ab_[static_cast<std::size_t>(i * n)] : nullptr;
      for (index_t l = 0; l < k; ++l) {
        const double ail = a64_[static_cast<std::size_t>(i * k + l)];
        const double* brow = &b[static_cast<std::size_t>(l * n)];
        for (index_t j = 0; j < n; ++j) row[j] += ail * brow[j];
        if (abs_row) {
          const double abs_ail = std::fabs(ail);
          for (index_t j = 0; j < n; ++j) abs_row[j] += abs_ail * std::fabs(brow[j]);
        }
      }
      for (index_t j = 0; j < n; ++j) {
        row[j] *= p_.alpha;
        if (p_.beta != 0.0) row[j] += p_.beta * static_cast<double>(vc_init_(i, j));
      }
    }
  }

  // Forward-error bound of element (i, j): 2 (K + 4) u (|alpha| (|A||B|)_ij + |beta| |C0_ij|).
  double element_bound(index_t i, index_t j) const {
    const index_t n = p_.n, k = p_.k;
    double s = 0;
    if (!abs_ab_.empty()) {
      s = abs_ab_[static_cast<std::size_t>(i * n + j)];
    } else {
      const double* a = &a64_[static_cast<std::size_t>(i * k)];
      const double* bt = &bt_abs_[static_cast<std::size_t>(j * k)];
      for (index_t l = 0; l < k; ++l) s += std::fabs(a[l]) * bt[l];
    }
    double bound = std::fabs(p_.alpha) * s;
    if (p_.beta != 0.0) bound += std::fabs(p_.beta) * std::fabs(static_cast<double>(vc_init_(i, j)));
    return gemm_element_factor(dtype_of<T>(), k, delivered_) * bound + std::numeric_limits<T>::denorm_min();
  }

  CheckResult check() const {
    if (p_.skip_reference) throw Error("gemm case: no reference to check against (skip_reference)");
    const index_t m = p_.m, n = p_.n;
    CheckResult r;
    r.tolerance = gemm_tolerance(dtype_of<T>(), p_.k, delivered_);
    double err2 = 0, ref2 = 0;
    index_t bad_i = -1, bad_j = -1;
    for (index_t i = 0; i < m; ++i) {
      for (index_t j = 0; j < n; ++j) {
        const double got = static_cast<double>(vc_(i, j));
        const double want = ref_[static_cast<std::size_t>(i * n + j)];
        if (!std::isfinite(got)) {
          if (bad_i < 0) bad_i = i, bad_j = j;
          continue;
        }
        const double d = std::fabs(got - want);
        err2 += d * d;
        ref2 += want * want;
        r.max_abs_err = std::max(r.max_abs_err, d);
        r.sum_abs_err += d;
      }
    }
    r.rel_err = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
    if (bad_i >= 0) {
      r.reason = "C(" + std::to_string(bad_i) + "," + std::to_string(bad_j) + ") is " +
                 std::to_string(static_cast<double>(vc_(bad_i, bad_j))) + " (NaN/Inf never passes)";
      r.rel_err = std::numeric_limits<double>::infinity();
      return r;
    }
    if (r.rel_err > r.tolerance) {
      r.reason = "relative error " + std::to_string(r.rel_err) + " above tolerance " + std::to_string(r.tolerance);
      return r;
    }
    // Element-wise bound: all elements for small problems, a reproducible sample otherwise.
    const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(p_.k);
    auto check_element = [&](index_t i, index_t j) {
      const double d = std::fabs(static_cast<double>(vc_(i, j)) - ref_[static_cast<std::size_t>(i * n + j)]);
      if (d > element_bound(i, j)) {
        r.reason = "C(" + std::to_string(i) + "," + std::to_string(j) + ") is off by " + std::to_string(d) +
                   ", above its forward-error bound " + std::to_string(element_bound(i, j));
        return false;
      }
      return true;
    };
    if (!abs_ab_.empty() || work == 0) {
      for (index_t i = 0; i < m; ++i)
        for (index_t j = 0; j < n; ++j)
          if (!check_element(i, j)) return r;
    } else {
      Random rng{p_.seed ^ 0x5eedULL};
      for (index_t s = 0; s < kBoundSamples; ++s)
        if (!check_element(static_cast<index_t>(rng.next() % static_cast<std::uint64_t>(m)),
                           static_cast<index_t>(rng.next() % static_cast<std::uint64_t>(n))))
          return r;
    }
    r.ok = true;
    return r;
  }

  GemmProblem p_;
  Precision delivered_ = precision_of(dtype_of<T>());  // by the implementation run last
  MatrixType ta_, tb_, tc_;
  Array<T> a_, b_, c_, c_init_;
  MatrixView<T> va_, vb_, vc_, vc_init_;
  std::vector<double> ref_, a64_, abs_ab_, bt_abs_;  // reference, A in FP64, bound data
  std::unique_ptr<Array<T>> da_, db_, dc_, dc_init_;
  MatrixView<T> dva_, dvb_, dvc_, dvc_init_;
};

}  // namespace

GemmCase::GemmCase(const GemmProblem& problem) : problem_(problem) {
  if (problem.m < 0 || problem.n < 0 || problem.k < 0)
    throw Error("gemm: negative size M=" + std::to_string(problem.m) + " N=" + std::to_string(problem.n) +
                " K=" + std::to_string(problem.k));
  if (problem.dtype == Dtype::f32) impl_ = std::make_unique<TypedCase<float>>(problem);
  else impl_ = std::make_unique<TypedCase<double>>(problem);
}

GemmCase::~GemmCase() = default;

CheckResult GemmCase::run_and_check(const GemmImpl& impl, int threads) {
  return impl_->run_and_check(impl, threads);
}

void GemmCase::run(const GemmImpl& impl, int threads) { impl_->run(impl, threads); }

Trial GemmCase::trial(const GemmImpl& impl, int threads, CheckResult* result) {
  Trial t;
  t.reset = [this, &impl] { impl_->restore(impl); };
  t.run = [this, &impl, threads] { impl_->run(impl, threads); };
  t.check = [this, &impl, result] {
    const CheckResult c = impl_->check_result(impl);
    if (result) *result = c;
    return Verdict{c.ok ? Outcome::passed : Outcome::failed, c.rel_err, c.ok ? "" : "FAILED: " + c.reason};
  };
#if PARRAY_HAVE_CUDA
  // GPU time from CUDA events around each call.
  if (impl.device == Device::gpu) t.time_one = [run = t.run] { return cuda::event_time_ms(run); };
#endif
  return t;
}

std::string GemmCase::print() const { return impl_->print(); }

const void* GemmCase::c_storage() const { return impl_->c_storage(); }

std::size_t GemmCase::c_storage_bytes() const { return impl_->c_storage_bytes(); }

void GemmCase::run_fresh(const GemmImpl& impl, int threads) { impl_->run_fresh(impl, threads); }

CheckResult GemmCase::check_c(const void* storage) { return impl_->check_c(storage); }

std::string GemmCase::why_not(const GemmImpl& impl) const {
  if (!impl.supports(problem_.dtype)) return std::string("no ") + dtype_name(problem_.dtype);
  if (std::string why = precision_shortfall(impl, problem_.dtype, problem_.precision); !why.empty()) return why;
  // GPU implementations need a GPU whether their operands start on the device
  // or in host memory (the end-to-end ones copy them over themselves).
  if ((impl.device == Device::gpu || impl.operand_memory == Memory::device) && !cuda_available())
    return "no CUDA device";
  const MatrixLayout a = MatrixLayout::from(make_matrix_type(problem_.layout_a, problem_.m, problem_.k).view);
  const MatrixLayout b = MatrixLayout::from(make_matrix_type(problem_.layout_b, problem_.k, problem_.n).view);
  const MatrixLayout c = MatrixLayout::from(make_matrix_type(problem_.layout_c, problem_.m, problem_.n).view);
  return impl.why_not(a, b, c);
}

}  // namespace parray
