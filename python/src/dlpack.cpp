#include "dlpack.hpp"

namespace parray::python {

namespace {

std::string dlpack_dtype_text(const dlpack::DataType& t) {
  const char* kind = t.code == dlpack::kFloat    ? "float"
                     : t.code == dlpack::kBfloat ? "bfloat"
                     : t.code == dlpack::kInt    ? "int"
                     : t.code == dlpack::kUInt   ? "uint"
                                                 : "code ";
  std::string s(kind);
  if (t.code > dlpack::kFloat && t.code != dlpack::kBfloat) s.append(std::to_string(t.code)).append(" of ");
  s.append(std::to_string(t.bits));
  if (t.lanes != 1) s.append("x").append(std::to_string(t.lanes));
  return s;
}

}  // namespace

DlpackArray::DlpackArray(py::handle capsule, const std::string& name) : name_(name) {
  if (!PyCapsule_CheckExact(capsule.ptr()) || !PyCapsule_IsValid(capsule.ptr(), "dltensor"))
    type_error(name, "is not an unconsumed DLPack capsule ('dltensor')");
  auto* managed = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  tensor_ = &managed->dl_tensor;
}

void DlpackArray::locate(Operand& op) const {
  const dlpack::Tensor& t = *tensor_;
  op.data = static_cast<char*>(t.data) + t.byte_offset;
  switch (t.device.device_type) {
    case dlpack::kCpu:
      op.memory = Memory::paged;
      break;
    case dlpack::kCudaHost:
      op.memory = Memory::pinned;
      break;
    case dlpack::kCuda:
      op.memory = Memory::device;
      op.device_id = t.device.device_id;
      break;
    default:
      type_error(name_, std::string("is on DLPack device type ")
                            .append(std::to_string(t.device.device_type))
                            .append(" (host or CUDA memory expected)"));
  }
}

Operand DlpackArray::matrix() const {
  const dlpack::Tensor& t = *tensor_;
  if (t.dtype.code != dlpack::kFloat || t.dtype.lanes != 1 || (t.dtype.bits != 32 && t.dtype.bits != 64))
    type_error(name_, std::string("dtype ").append(dlpack_dtype_text(t.dtype)).append(" is not float32 or float64"));
  if (t.ndim != 2)
    value_error(name_, std::string("has ").append(std::to_string(t.ndim)).append(" dimensions, a matrix has 2"));
  Operand op = strided_operand(name_, nullptr, t.dtype.bits == 32 ? Dtype::f32 : Dtype::f64, t.shape[0], t.shape[1],
                               t.strides ? t.strides[0] : t.shape[1], t.strides ? t.strides[1] : 1);
  locate(op);
  if (reinterpret_cast<std::uintptr_t>(op.data) % op.item_size() != 0)
    value_error(name_, "its data is not aligned to its element size");
  return op;
}

dlpack::DataType DlpackArray::matrix16(Operand& op, bool allow_f32) const {
  const dlpack::Tensor& t = *tensor_;
  const bool half = t.dtype.bits == 16 && (t.dtype.code == dlpack::kFloat || t.dtype.code == dlpack::kBfloat);
  const bool f32 = allow_f32 && t.dtype.bits == 32 && t.dtype.code == dlpack::kFloat;
  if (t.dtype.lanes != 1 || !(half || f32))
    type_error(name_, std::string("dtype ")
                          .append(dlpack_dtype_text(t.dtype))
                          .append(allow_f32 ? " is not bfloat16, float16 or float32" : " is not bfloat16 or float16"));
  if (t.ndim != 2)
    value_error(name_, std::string("has ").append(std::to_string(t.ndim)).append(" dimensions, a matrix has 2"));
  op = strided_operand(name_, nullptr, Dtype::f32, t.shape[0], t.shape[1], t.strides ? t.strides[0] : t.shape[1],
                       t.strides ? t.strides[1] : 1);
  op.item_bytes = t.dtype.bits / 8;
  locate(op);
  if (reinterpret_cast<std::uintptr_t>(op.data) % op.item_size() != 0)
    value_error(name_, "its data is not aligned to its element size");
  return t.dtype;
}

void* DlpackArray::compact(TypeCode code, int bits, index_t rows, index_t cols, const Operand& like) const {
  const dlpack::Tensor& t = *tensor_;
  const dlpack::DataType want{code, static_cast<std::uint8_t>(bits), 1};
  if (t.dtype.code != want.code || t.dtype.bits != want.bits || t.dtype.lanes != 1)
    type_error(name_, std::string("dtype ").append(dlpack_dtype_text(t.dtype)).append(", expected ").append(dlpack_dtype_text(want)));
  if (t.ndim != 2 || t.shape[0] != rows || t.shape[1] != cols)
    value_error(name_, std::string("shape must be (")
                           .append(std::to_string(rows))
                           .append(", ")
                           .append(std::to_string(cols))
                           .append(")"));
  if (t.strides && rows * cols > 0 && ((rows > 1 && t.strides[0] != cols) || (cols > 1 && t.strides[1] != 1)))
    value_error(name_, "must be C-contiguous");
  Operand op;
  locate(op);
  if (op.memory != like.memory || op.device_id != like.device_id)
    value_error(
        name_,
        std::string("is in ").append(op.where()).append(", ").append(like.name).append(" in ").append(like.where()));
  return op.data;
}

}  // namespace parray::python
