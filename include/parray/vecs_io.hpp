// The TEXMEX vector formats of SIFT1M / GIST1M (http://corpus-texmex.irisa.fr):
// every vector is stored as a little-endian int32 dimension d followed by d
// components: float32 (.fvecs), int32 (.ivecs) or uint8 (.bvecs).
//
// Readers check everything a corrupt file can get wrong and throw
// parray::Error naming the file and the record: a size that is not a whole
// number of records, a non-positive or changing dimension, a truncated last
// record, and (for .fvecs) NaN or infinite components.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parray/core.hpp"

namespace parray {

// n vectors of dimension d, row-major (vector i at data[i * d]).
template <class T>
struct Vectors {
  index_t n = 0, d = 0;
  std::vector<T> data;
  const T* row(index_t i) const { return data.data() + i * d; }
};

// max_n > 0 reads at most the first max_n vectors.
Vectors<float> read_fvecs(const std::string& path, index_t max_n = 0);
Vectors<std::int32_t> read_ivecs(const std::string& path, index_t max_n = 0);
Vectors<std::uint8_t> read_bvecs(const std::string& path, index_t max_n = 0);
// By extension: .fvecs as is, .bvecs converted to float; anything else is an error.
Vectors<float> read_vectors_as_float(const std::string& path, index_t max_n = 0);

void write_fvecs(const std::string& path, const Vectors<float>& v);
void write_ivecs(const std::string& path, const Vectors<std::int32_t>& v);
void write_bvecs(const std::string& path, const Vectors<std::uint8_t>& v);

}  // namespace parray
