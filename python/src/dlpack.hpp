// Arrays handed over as DLPack capsules (the Python array API's interchange:
// x.__dlpack__(stream=...) returns a PyCapsule named "dltensor" holding a
// DLManagedTensor). The structures below are the DLPack ABI as its
// specification fixes it (dlpack.h, version 0.x, unversioned capsules), which
// every producer (PyTorch, CuPy, NumPy) writes; declared here because the
// machines that build the CUDA module have no dlpack header.
//
// The module only borrows a capsule for the length of one call: it neither
// renames it "used_dltensor" nor calls its deleter, so the producer's capsule
// destructor frees the tensor when Python drops the capsule.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "operand.hpp"

namespace parray::python {

namespace dlpack {

enum DeviceType : std::int32_t { kCpu = 1, kCuda = 2, kCudaHost = 3 };
enum TypeCode : std::uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kBfloat = 4 };

struct Device {
  std::int32_t device_type;
  std::int32_t device_id;
};
struct DataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct Tensor {
  void* data;
  Device device;
  std::int32_t ndim;
  DataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // in elements; null: compact row-major
  std::uint64_t byte_offset;
};
struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};

}  // namespace dlpack

using TypeCode = dlpack::TypeCode;

// One borrowed DLPack tensor.
class DlpackArray {
 public:
  // TypeError when capsule is not an unconsumed "dltensor" capsule.
  DlpackArray(py::handle capsule, const std::string& name);

  // As a matrix: 2-D, float32 or float64, host or CUDA memory.
  Operand matrix() const;
  // As a matrix of 16-bit floats (bfloat16 or float16) or, with allow_f32,
  // float32: bits and code of its type, and its data, shape and strides (in
  // elements) in `op` (whose dtype field is not used).
  dlpack::DataType matrix16(Operand& op, bool allow_f32) const;
  // Its data, checked to be a compact row-major rows x cols array of the
  // given element type (k-NN's inputs and outputs), in the same memory as
  // `like`.
  void* compact(TypeCode code, int bits, index_t rows, index_t cols, const Operand& like) const;

 private:
  const dlpack::Tensor* tensor_ = nullptr;
  std::string name_;
  void locate(Operand& op) const;  // data, memory and device
};

}  // namespace parray::python
