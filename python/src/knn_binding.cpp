// parray.knn's compiled part (exact k-NN, knn.hpp) on host buffers and on
// DLPack capsules, and the TEXMEX vector files (vecs_io.hpp) as NumPy arrays.
#include <pybind11/stl.h>

#include <cmath>
#include <cstring>

#include "bindings.hpp"
#include "dlpack.hpp"
#include "parray/knn.hpp"
#include "parray/vecs_io.hpp"
#include "stream_order.hpp"

namespace parray::python {

namespace {

KnnOptions knn_options(index_t k, const std::string& metric, int threads) {
  KnnOptions o;
  o.k = k;
  try {
    o.metric = parse_metric(metric);
  } catch (const Error& e) {
    value_error("metric", e.what());
  }
  if (threads < 0) value_error("threads", std::to_string(threads).append(" is negative"));
  o.threads = threads;
  return o;
}

// A row-major, contiguous host matrix of finite values (the search's contract).
template <class T>
const T* finite_rows(const HostBuffer& buffer, const Operand& op) {
  if (!PyBuffer_IsContiguous(&buffer.view(), 'C')) value_error(op.name, "must be C-contiguous");
  const T* x = static_cast<const T*>(op.data);
  for (index_t i = 0; i < op.rows() * op.cols(); ++i)
    if (!std::isfinite(x[i])) value_error(op.name, "holds NaN or infinity (exact k-NN needs finite data)");
  return x;
}

void check_pair(const Operand& base, const Operand& queries) {
  if (queries.dtype != base.dtype) type_error("queries", "dtype differs from base's");
  if (queries.cols() != base.cols())
    value_error("queries", std::string("have dimension ")
                               .append(std::to_string(queries.cols()))
                               .append(", base has ")
                               .append(std::to_string(base.cols())));
}

template <class T>
py::tuple knn_host_typed(const HostBuffer& hb, const Operand& base, const HostBuffer& hq, const Operand& queries,
                         const KnnOptions& options) {
  const T* x = finite_rows<T>(hb, base);
  const T* q = finite_rows<T>(hq, queries);
  check_knn_problem(base.rows(), queries.rows(), base.cols(), options);
  const NewArray distances(queries.rows(), options.k, base.dtype == Dtype::f32 ? "float32" : "float64");
  const NewArray indices(queries.rows(), options.k, "int64");
  T* d = static_cast<T*>(distances.data());
  auto* i = static_cast<index_t*>(indices.data());
  {
    py::gil_scoped_release release;
    knn_cpu<T>(x, base.rows(), q, queries.rows(), base.cols(), options, d, i);
  }
  return py::make_tuple(distances.object(), indices.object());
}

py::tuple knn_host(py::handle base, py::handle queries, index_t k, const std::string& metric, int threads) {
  const HostBuffer hb(base, "base", false), hq(queries, "queries", false);
  const Operand ob = hb.matrix(), oq = hq.matrix();
  check_pair(ob, oq);
  const KnnOptions options = knn_options(k, metric, threads);
  if (ob.dtype == Dtype::f32) return knn_host_typed<float>(hb, ob, hq, oq, options);
  return knn_host_typed<double>(hb, ob, hq, oq, options);
}

// GPU k-NN into the caller's distances (float32) and indices (int64) arrays.
void knn_dlpack(py::handle base, py::handle queries, py::handle distances, py::handle indices, index_t k,
                const std::string& metric, std::uintptr_t stream) {
  const DlpackArray db(base, "base"), dq(queries, "queries");
  const Operand ob = db.matrix(), oq = dq.matrix();
  check_pair(ob, oq);
  if (ob.dtype != Dtype::f32) type_error("base", "the GPU k-NN takes float32");
  if (ob.memory != Memory::device || oq.memory != Memory::device)
    value_error(ob.memory != Memory::device ? "base" : "queries", "is not in CUDA memory");
  if (oq.device_id != ob.device_id)
    value_error("queries", std::string("is in ").append(oq.where()).append(", base in ").append(ob.where()));
  KnnOptions options = knn_options(k, metric, 0);
  check_knn_problem(ob.rows(), oq.rows(), ob.cols(), options);
  auto* x = static_cast<const float*>(db.compact(TypeCode::kFloat, 32, ob.rows(), ob.cols(), ob));
  auto* q = static_cast<const float*>(dq.compact(TypeCode::kFloat, 32, oq.rows(), oq.cols(), ob));
  auto* d = static_cast<float*>(DlpackArray(distances, "distances").compact(TypeCode::kFloat, 32, oq.rows(), k, ob));
  auto* i = static_cast<index_t*>(DlpackArray(indices, "indices").compact(TypeCode::kInt, 64, oq.rows(), k, ob));
  py::gil_scoped_release release;
#if PARRAY_PYTHON_CUDA
  options.stream = caller_stream(stream);
  on_device(ob.device_id, [&] { cuda::knn_device(x, ob.rows(), q, oq.rows(), ob.cols(), options, d, i); });
#else
  (void)x, (void)q, (void)d, (void)i, (void)stream;
  throw Error("base: is in CUDA memory but parray was built without CUDA");
#endif
}

template <class T>
py::object to_array(const Vectors<T>& v, const char* dtype) {
  const NewArray out(v.n, v.d, dtype);
  if (!v.data.empty()) std::memcpy(out.data(), v.data.data(), v.data.size() * sizeof(T));
  return out.object();
}

// A C-contiguous 2-D buffer of elements of format `code` as Vectors.
template <class T>
Vectors<T> from_buffer(py::handle x, char code, const char* dtype) {
  const HostBuffer buffer(x, "vectors", false);
  const Py_buffer& b = buffer.view();
  if (!buffer.holds(code, sizeof(T))) type_error("vectors", std::string("elements are not ").append(dtype));
  if (b.ndim != 2)
    value_error("vectors", std::string("has ").append(std::to_string(b.ndim)).append(" dimensions, expected 2"));
  if (!PyBuffer_IsContiguous(&b, 'C')) value_error("vectors", "must be C-contiguous");
  Vectors<T> v;
  v.n = b.shape[0];
  v.d = b.shape[1];
  v.data.assign(static_cast<const T*>(b.buf), static_cast<const T*>(b.buf) + v.n * v.d);
  return v;
}

}  // namespace

void bind_knn(py::module_& m) {
  using namespace pybind11::literals;
  m.def("knn_host", &knn_host, "base"_a, "queries"_a, "k"_a, "metric"_a, "threads"_a,
        "Exact k-NN of host float32/float64 arrays: (distances, indices int64), q x k.");
  m.def("knn_dlpack", &knn_dlpack, "base"_a, "queries"_a, "distances"_a, "indices"_a, "k"_a, "metric"_a, "stream"_a,
        "Exact k-NN of CUDA float32 capsules into the caller's distances and indices, on its stream.");
  m.def(
      "read_fvecs", [](const std::string& path, index_t max_n) { return to_array(read_fvecs(path, max_n), "float32"); },
      "path"_a, "max_n"_a = 0, "A .fvecs file as an (n, d) float32 array (max_n > 0: its first max_n vectors).");
  m.def(
      "read_ivecs", [](const std::string& path, index_t max_n) { return to_array(read_ivecs(path, max_n), "int32"); },
      "path"_a, "max_n"_a = 0, "A .ivecs file as an (n, d) int32 array.");
  m.def(
      "read_bvecs", [](const std::string& path, index_t max_n) { return to_array(read_bvecs(path, max_n), "uint8"); },
      "path"_a, "max_n"_a = 0, "A .bvecs file as an (n, d) uint8 array.");
  m.def(
      "write_fvecs",
      [](const std::string& path, py::handle x) { write_fvecs(path, from_buffer<float>(x, 'f', "float32")); }, "path"_a,
      "vectors"_a, "An (n, d) C-contiguous float32 array as a .fvecs file.");
  m.def(
      "write_ivecs",
      [](const std::string& path, py::handle x) { write_ivecs(path, from_buffer<std::int32_t>(x, 'i', "int32")); },
      "path"_a, "vectors"_a, "An (n, d) C-contiguous int32 array as a .ivecs file.");
  m.def(
      "write_bvecs",
      [](const std::string& path, py::handle x) { write_bvecs(path, from_buffer<std::uint8_t>(x, 'B', "uint8")); },
      "path"_a, "vectors"_a, "An (n, d) C-contiguous uint8 array as a .bvecs file.");
}

}  // namespace parray::python
