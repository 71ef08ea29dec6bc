// parray.matmul16 on DLPack capsules of bfloat16 / float16 CUDA tensors
// (parray::gemm16, include/parray/gemm16.hpp): a and b each used where they lie,
// row-major or column-major (a transposed tensor becomes a transpose flag),
// out row-major in the inputs' type or float32, the work ordered on the
// caller's stream.
#include <algorithm>
#include <string>

#include "bindings.hpp"
#include "dlpack.hpp"
#if PARRAY_PYTHON_CUDA
#include "parray/gemm16.hpp"
#include "stream_order.hpp"
#endif

namespace parray::python {

namespace {

const char* type_name(const dlpack::DataType& t) {
  return t.bits == 32 ? "float32" : t.code == dlpack::kBfloat ? "bfloat16" : "float16";
}

// How an operand is stored: transposed (column-major) or not, and its leading
// dimension. A matrix whose rows and columns are both strided is refused.
struct Storage16 {
  bool transposed = false;
  index_t ld = 0;
};

Storage16 storage_of(const Operand& op) {
  const index_t rows = op.rows(), cols = op.cols(), rs = op.layout.rows.stride[0], cs = op.layout.cols.stride[0];
  if (cols <= 1 || cs == 1) {
    const index_t ld = rows <= 1 ? std::max<index_t>(cols, 1) : rs;
    if (ld < cols) value_error(op.name, "rows overlap in memory (row stride " + std::to_string(rs) + ")");
    return {false, ld};
  }
  if (rows <= 1 || rs == 1) {
    const index_t ld = cols <= 1 ? std::max<index_t>(rows, 1) : cs;
    if (ld < rows) value_error(op.name, "columns overlap in memory (column stride " + std::to_string(cs) + ")");
    return {true, ld};
  }
  value_error(op.name, "neither its rows nor its columns are contiguous (strides " + std::to_string(rs) + ", " +
                           std::to_string(cs) + "); pass a contiguous tensor or its transpose");
  return {};
}

void gemm16_dlpack(py::handle a, py::handle b, py::handle out, double alpha, double beta, const std::string& impl,
                   std::uintptr_t stream, index_t batch, index_t stride_a, index_t stride_b, index_t stride_c) {
  Operand oa, ob, oc;
  const dlpack::DataType ta = DlpackArray(a, "a").matrix16(oa, false), tb = DlpackArray(b, "b").matrix16(ob, false),
                         tc = DlpackArray(out, "out").matrix16(oc, true);
  if (tb.code != ta.code) type_error("b", std::string("dtype ") + type_name(tb) + " differs from a's " + type_name(ta));
  if (tc.bits == 16 && tc.code != ta.code)
    type_error("out", std::string("dtype ") + type_name(tc) + " is neither a's " + type_name(ta) + " nor float32");
  for (const Operand* x : {&oa, &ob, &oc})
    if (x->memory != Memory::device) value_error(x->name, "is in " + x->where() + "; matmul16 takes CUDA tensors");
  check_product(oa, ob, oc, false);  // their dtypes are checked above, in 16-bit terms
  const Storage16 sa = storage_of(oa), sb = storage_of(ob), sc = storage_of(oc);
  if (sc.transposed && oc.rows() > 1 && oc.cols() > 1) value_error("out", "must be row-major (C-contiguous rows)");
  if (batch < 0) value_error("batch", "is negative");
  if (std::min({stride_a, stride_b, stride_c}) < 0) value_error("stride", "a batch stride is negative");
  if (batch > 1 && stride_c < oc.rows() * sc.ld) value_error("out", "its matrices overlap (batch stride too small)");
#if PARRAY_PYTHON_CUDA
  Gemm16Args g;
  g.type = ta.code == dlpack::kBfloat ? Type16::bf16 : Type16::fp16;
  g.c_f32 = tc.bits == 32;
  g.trans_a = sa.transposed ? Trans::yes : Trans::no;
  g.trans_b = sb.transposed ? Trans::yes : Trans::no;
  g.m = oa.rows(), g.n = ob.cols(), g.k = oa.cols();
  g.alpha = float(alpha), g.beta = float(beta);
  g.a = oa.data, g.lda = sa.ld, g.b = ob.data, g.ldb = sb.ld, g.c = oc.data, g.ldc = sc.ld;
  g.batch = batch, g.stride_a = stride_a, g.stride_b = stride_b, g.stride_c = stride_c;
  py::gil_scoped_release release;
  g.stream = caller_stream(stream);
  on_device(oa.device_id, [&] { gemm16(g, impl); });
#else
  (void)alpha, (void)beta, (void)impl, (void)stream, (void)batch, (void)sa, (void)sb;
  throw Error(std::string("a: is in ").append(oa.where()).append(" but parray was built without CUDA"));
#endif
}

}  // namespace

void bind_gemm16(py::module_& m) {
  using namespace pybind11::literals;
  m.def("gemm16_dlpack", &gemm16_dlpack, "a"_a, "b"_a, "out"_a, "alpha"_a, "beta"_a, "impl"_a, "stream"_a,
        "batch"_a = 1, "stride_a"_a = 0, "stride_b"_a = 0, "stride_c"_a = 0,
        "out = alpha a b + beta out on DLPack capsules of bfloat16 / float16 CUDA tensors (out: the same type or "
        "float32); work ordered on the caller's stream (a DLPack stream number). batch > 1: a strided batch, the "
        "capsules the first matrices, each operand's next one stride elements on (0: the same matrix).");
}

}  // namespace parray::python
