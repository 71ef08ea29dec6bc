// .fvecs / .ivecs / .bvecs reading and writing (include/parray/vecs_io.hpp).
#include "parray/vecs_io.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

namespace parray {

namespace {

struct File {
  std::FILE* f = nullptr;
  ~File() {
    if (f) std::fclose(f);
  }
};

template <class T>
const char* ext_name() {
  if constexpr (std::is_same_v<T, float>) return "fvecs";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "ivecs";
  else return "bvecs";
}

template <class T>
Vectors<T> read_vecs(const std::string& path, index_t max_n) {
  const std::string what = path + " (" + ext_name<T>() + ")";
  if (max_n < 0) throw Error("read " + what + ": negative vector limit " + std::to_string(max_n));
  File file;
  file.f = std::fopen(path.c_str(), "rb");
  if (!file.f) throw Error("cannot open " + path + ": " + std::strerror(errno));
  if (std::fseek(file.f, 0, SEEK_END) != 0) throw Error("cannot seek in " + path);
  const long long bytes = std::ftell(file.f);
  std::rewind(file.f);
  if (bytes <= 0) throw Error(what + " is empty");
  std::int32_t d = 0;
  if (bytes < 4 || std::fread(&d, 4, 1, file.f) != 1) throw Error(what + " is truncated: no dimension in the first record");
  if (d <= 0 || d > (1 << 24))
    throw Error(what + ": first record has dimension " + std::to_string(d) + " (corrupt file, or not " +
                ext_name<T>() + ")");
  const long long record = 4 + static_cast<long long>(d) * static_cast<long long>(sizeof(T));
  if (bytes % record != 0)
    throw Error(what + ": " + std::to_string(bytes) + " bytes is not a whole number of " + std::to_string(record) +
                "-byte records of dimension " + std::to_string(d) + " (truncated or inconsistent file)");
  index_t n = bytes / record;
  if (max_n > 0 && max_n < n) n = max_n;
  Vectors<T> v;
  v.n = n;
  v.d = d;
  v.data.resize(static_cast<std::size_t>(n * d));
  std::rewind(file.f);
  for (index_t i = 0; i < n; ++i) {
    std::int32_t di = 0;
    if (std::fread(&di, 4, 1, file.f) != 1) throw Error(what + ": read error at record " + std::to_string(i));
    if (di != d)
      throw Error(what + ": record " + std::to_string(i) + " has dimension " + std::to_string(di) + ", record 0 has " +
                  std::to_string(d) + " (inconsistent file)");
    T* row = v.data.data() + i * d;
    if (std::fread(row, sizeof(T), static_cast<std::size_t>(d), file.f) != static_cast<std::size_t>(d))
      throw Error(what + ": record " + std::to_string(i) + " is truncated");
    if constexpr (std::is_same_v<T, float>) {
      for (index_t j = 0; j < d; ++j)
        if (!std::isfinite(row[j]))
          throw Error(what + ": record " + std::to_string(i) + " component " + std::to_string(j) + " is " +
                      (std::isnan(row[j]) ? "NaN" : "infinite"));
    }
  }
  return v;
}

template <class T>
void write_vecs(const std::string& path, const Vectors<T>& v) {
  // (v.n < 0) in parentheses: GCC 12 reads `v.n < 0 || ... > (...)` as a template's arguments and warns.
  if ((v.n < 0) || v.d <= 0 || v.d > (1 << 24) || static_cast<index_t>(v.data.size()) != v.n * v.d)
    throw Error("write " + path + ": " + std::to_string(v.n) + " vectors of dimension " + std::to_string(v.d) +
                " do not match " + std::to_string(v.data.size()) + " values");
  File file;
  file.f = std::fopen(path.c_str(), "wb");
  if (!file.f) throw Error("cannot write " + path + ": " + std::strerror(errno));
  const std::int32_t d = static_cast<std::int32_t>(v.d);
  for (index_t i = 0; i < v.n; ++i) {
    if (std::fwrite(&d, 4, 1, file.f) != 1 ||
        std::fwrite(v.row(i), sizeof(T), static_cast<std::size_t>(d), file.f) != static_cast<std::size_t>(d))
      throw Error("write error on " + path);
  }
  if (std::fflush(file.f) != 0) throw Error("write error on " + path);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Vectors<float> read_fvecs(const std::string& path, index_t max_n) { return read_vecs<float>(path, max_n); }
Vectors<std::int32_t> read_ivecs(const std::string& path, index_t max_n) {
  return read_vecs<std::int32_t>(path, max_n);
}
Vectors<std::uint8_t> read_bvecs(const std::string& path, index_t max_n) {
  return read_vecs<std::uint8_t>(path, max_n);
}

Vectors<float> read_vectors_as_float(const std::string& path, index_t max_n) {
  if (ends_with(path, ".fvecs")) return read_fvecs(path, max_n);
  if (ends_with(path, ".bvecs")) {
    Vectors<std::uint8_t> b = read_bvecs(path, max_n);
    Vectors<float> f;
    f.n = b.n, f.d = b.d;
    f.data.assign(b.data.begin(), b.data.end());
    return f;
  }
  throw Error(path + ": unknown vector file type (use .fvecs or .bvecs)");
}

void write_fvecs(const std::string& path, const Vectors<float>& v) { write_vecs(path, v); }
void write_ivecs(const std::string& path, const Vectors<std::int32_t>& v) { write_vecs(path, v); }
void write_bvecs(const std::string& path, const Vectors<std::uint8_t>& v) { write_vecs(path, v); }

}  // namespace parray
