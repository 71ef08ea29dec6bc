// The shape of a thread array and one thread's place in it, the same for
// every kind of thread (CPU threads, CUDA threads, MPI processes).
//
// A shape is Parray's bracket notation without strides: `[2][2]`, `[4]`,
// `[[8][8]][[16][16]]` — up to kMaxRank top-level dimensions, each a single
// extent or up to kMaxSub nested extents. Coordinates follow the paper
// (section 2.4): for a thread of `[[8][8]][[16][16]]`
//
//   $tid$      t.tid()       flat id, row-major over every extent
//   $tid_0$    t.tid(0)      index in top-level dimension 0 (row-major over
//                            its sub-dimensions: here the CUDA block's index)
//   $tid_1_0$  t.tid(1, 0)   index in sub-dimension 0 of dimension 1
//   $dim_1$    t.dim(1)      extent of dimension 1 (256), t.dim(1, 0) = 16
//   $size$     t.size()      number of threads (16384)
//
// ThreadIndex computes these from the flat id, in host and device code; the
// CPU's and MPI's thread coordinates are ThreadIndex plus their barriers, and
// CUDA's reads them from blockIdx and threadIdx with the same names
// (cuda/thread_array.cuh), so one body template runs on all three.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "parray/core.hpp"
#include "parray/layout.hpp"

namespace parray {

class ThreadShape {
 public:
  static constexpr int kMaxRank = 4;
  static constexpr int kMaxSub = 3;

  ThreadShape() = default;  // one thread, [1]
  // Flat dimensions: {2, 2} is Parray's [2][2].
  ThreadShape(std::initializer_list<int> dims) : ThreadShape(std::vector<int>(dims)) {}
  explicit ThreadShape(const std::vector<int>& dims) {
    std::vector<std::vector<int>> leaves;
    for (int d : dims) leaves.push_back({d});
    set(leaves, std::vector<bool>(dims.size(), false));
  }
  // Nested dimensions: {{8, 8}, {16, 16}} is [[8][8]][[16][16]], {{64}, {256}}
  // is [[64]][[256]].
  static ThreadShape nested(const std::vector<std::vector<int>>& dims) {
    ThreadShape s;
    s.set(dims, std::vector<bool>(dims.size(), true));
    return s;
  }
  // Parray's notation, sizes may be expressions over named constants:
  // parse("[[N/16][N/256]][[4][32]]", {{"N", 4096}}).
  static ThreadShape parse(std::string_view text, const Layout::Constants& constants = {}) {
    const Layout l = Layout::parse(text, {}, constants);
    std::vector<std::vector<int>> dims;
    std::vector<bool> nested_flags;
    for (int d = 0; d < l.rank(); ++d) {
      const Layout& top = l.dim(d);
      nested_flags.push_back(!top.is_leaf());
      std::vector<int> sub;
      for (int e = 0; e < top.rank(); ++e) {
        const Layout& leaf = top.dim(e);
        if (!leaf.is_leaf())
          throw Error("thread array " + std::string(text) + ": at most two levels of dimensions");
        sub.push_back(static_cast<int>(leaf.size()));
      }
      dims.push_back(sub);
    }
    ThreadShape s;
    s.set(dims, nested_flags);
    return s;
  }

  PARRAY_HD int rank() const { return rank_; }
  PARRAY_HD int sub_rank(int d) const { return sub_[d]; }
  PARRAY_HD bool is_nested(int d) const { return nested_[d]; }
  PARRAY_HD int dim(int d) const {
    int n = 1;
    for (int e = 0; e < sub_[d]; ++e) n *= ext_[d][e];
    return n;
  }
  PARRAY_HD int dim(int d, int e) const { return ext_[d][e]; }
  PARRAY_HD int size() const {
    int n = 1;
    for (int d = 0; d < rank_; ++d) n *= dim(d);
    return n;
  }
  // [2][2], [[8][8]][[16][16]]: parses back to an equal shape.
  std::string str() const {
    std::string s;
    auto bracket = [&s](int x) {
      s += '[';
      s += std::to_string(x);
      s += ']';
    };
    for (int d = 0; d < rank_; ++d) {
      if (nested_[d]) s += '[';
      for (int e = 0; e < sub_[d]; ++e) bracket(ext_[d][e]);
      if (nested_[d]) s += ']';
    }
    return s;
  }
  bool operator==(const ThreadShape& o) const { return str() == o.str(); }

  // Digit e of index x of dimension d (row-major over its sub-dimensions).
  PARRAY_HD int sub_index(int d, int x, int e) const {
    for (int k = sub_[d] - 1; k > e; --k) x /= ext_[d][k];
    return x % ext_[d][e];
  }
  // The flat id with coordinate d taken out: equal for the threads that
  // differ only in dimension d (the sub-array #sync(d) waits for).
  PARRAY_HD int without(int d, int flat) const {
    int inner = 1;
    for (int k = d + 1; k < rank_; ++k) inner *= dim(k);
    return flat / (inner * dim(d)) * inner + flat % inner;
  }

 private:
  void set(const std::vector<std::vector<int>>& dims, const std::vector<bool>& nested_flags) {
    if (dims.empty() || dims.size() > kMaxRank)
      throw Error("thread array: 1 to " + std::to_string(kMaxRank) + " dimensions, got " +
                  std::to_string(dims.size()));
    long long total = 1;
    rank_ = static_cast<int>(dims.size());
    for (int d = 0; d < rank_; ++d) {
      const auto& sub = dims[static_cast<std::size_t>(d)];
      if (sub.empty() || sub.size() > kMaxSub)
        throw Error("thread array: dimension " + std::to_string(d) + " has " + std::to_string(sub.size()) +
                    " sub-dimensions (1 to " + std::to_string(kMaxSub) + ")");
      sub_[d] = static_cast<int>(sub.size());
      nested_[d] = nested_flags[static_cast<std::size_t>(d)];
      for (int e = 0; e < sub_[d]; ++e) {
        const int x = sub[static_cast<std::size_t>(e)];
        if (x < 1) throw Error("thread array: dimension " + std::to_string(d) + " is " + std::to_string(x));
        ext_[d][e] = x;
        total *= x;
        if (total > (1LL << 31) - 1) throw Error("thread array: more than 2^31 threads");
      }
    }
  }

 private:
  int rank_ = 1;
  int sub_[kMaxRank] = {1, 1, 1, 1};
  bool nested_[kMaxRank] = {};
  int ext_[kMaxRank][kMaxSub] = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}};
};

// One thread of an array, from its flat id: the coordinates of the header.
class ThreadIndex {
 public:
  ThreadIndex() = default;
  PARRAY_HD ThreadIndex(const ThreadShape& shape, int flat) : shape_(shape), flat_(flat) {}

  PARRAY_HD int tid() const { return flat_; }
  PARRAY_HD int tid(int d) const {
    int x = flat_;
    for (int k = shape_.rank() - 1; k > d; --k) x /= shape_.dim(k);
    return x % shape_.dim(d);
  }
  PARRAY_HD int tid(int d, int e) const { return shape_.sub_index(d, tid(d), e); }
  PARRAY_HD int operator[](int d) const { return tid(d); }
  PARRAY_HD int rank() const { return shape_.rank(); }
  PARRAY_HD int dim(int d) const { return shape_.dim(d); }
  PARRAY_HD int dim(int d, int e) const { return shape_.dim(d, e); }
  PARRAY_HD int size() const { return shape_.size(); }
  PARRAY_HD const ThreadShape& shape() const { return shape_; }

 protected:
  ThreadShape shape_;
  int flat_ = 0;
};

}  // namespace parray
