// parray.matmul8 on float8 CUDA tensors (parray::gemm8, include/parray/gemm8.hpp).
// The Python side (python/parray/__init__.py) reads the tensors' shapes,
// strides and device pointers through PyTorch's own API, since DLPack's FP8
// codes are newer than some of the libraries that would export them; this
// binding takes the resulting plain arguments, and gemm8 checks them again.
#include <string>

#include "bindings.hpp"
#include "operand.hpp"
#if PARRAY_PYTHON_CUDA
#include "parray/gemm8.hpp"
#include "stream_order.hpp"
#endif

namespace parray::python {

namespace {

#if PARRAY_PYTHON_CUDA
Fp8 fp8_of(const std::string& name, const char* arg) {
  if (name == "e4m3") return Fp8::e4m3;
  if (name == "e5m2") return Fp8::e5m2;
  type_error(arg, "dtype is not float8_e4m3fn or float8_e5m2");
  return Fp8::e4m3;
}

Fp8Out out_of(const std::string& name) {
  if (name == "bfloat16") return Fp8Out::bf16;
  if (name == "float16") return Fp8Out::fp16;
  if (name == "float32") return Fp8Out::f32;
  type_error("out", "dtype " + name + " is not bfloat16, float16 or float32");
  return Fp8Out::bf16;
}
#endif

// The product's description, as matmul8 read it from the tensors.
struct Gemm8Call {
  std::string type_a, type_b, out_type;
  bool blockwise;
  index_t m, n, k;
  double alpha, beta;
  std::uintptr_t a, b, c, scale_a, scale_b;
  index_t lda, ldb, ldc;
};

void gemm8_pointers(const Gemm8Call& x, const std::string& impl, std::uintptr_t stream, int device) {
#if PARRAY_PYTHON_CUDA
  Gemm8Args g;
  g.type_a = fp8_of(x.type_a, "a"), g.type_b = fp8_of(x.type_b, "b"), g.out = out_of(x.out_type);
  g.scaling = x.blockwise ? Fp8Scaling::blockwise : Fp8Scaling::per_tensor;
  g.m = x.m, g.n = x.n, g.k = x.k, g.alpha = float(x.alpha), g.beta = float(x.beta);
  g.a = reinterpret_cast<const void*>(x.a), g.lda = x.lda;
  g.b = reinterpret_cast<const void*>(x.b), g.ldb = x.ldb;
  g.c = reinterpret_cast<void*>(x.c), g.ldc = x.ldc;
  g.scale_a = reinterpret_cast<const float*>(x.scale_a), g.scale_b = reinterpret_cast<const float*>(x.scale_b);
  py::gil_scoped_release release;
  g.stream = caller_stream(stream);
  on_device(device, [&] { gemm8(g, impl); });
#else
  (void)x, (void)impl, (void)stream, (void)device;
  throw Error("matmul8: parray was built without CUDA");
#endif
}

}  // namespace

void bind_gemm8(py::module_& m) {
  using namespace pybind11::literals;
  py::class_<Gemm8Call>(m, "Gemm8Call")
      .def(py::init<std::string, std::string, std::string, bool, index_t, index_t, index_t, double, double,
                    std::uintptr_t, std::uintptr_t, std::uintptr_t, std::uintptr_t, std::uintptr_t, index_t, index_t,
                    index_t>(),
           "type_a"_a, "type_b"_a, "out_type"_a, "blockwise"_a, "m"_a, "n"_a, "k"_a, "alpha"_a, "beta"_a, "a"_a,
           "b"_a, "c"_a, "scale_a"_a, "scale_b"_a, "lda"_a, "ldb"_a, "ldc"_a);
  m.def("gemm8_pointers", &gemm8_pointers, "call"_a, "impl"_a, "stream"_a, "device"_a,
        "C = alpha (sa A)(sb B)^T + beta C on device pointers (parray::gemm8): A M x K, B N x K, C M x N "
        "row-major with leading dimensions; the work ordered on the caller's stream (a DLPack stream number).");
}

}  // namespace parray::python
