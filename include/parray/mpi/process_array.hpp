// MPI process arrays: Parray's `mpi [P][Q]` beside `pthd [2][2]` (thread_array.hpp).
//
//   parray::mpi::Session session(&argc, &argv);        // MPI_Init / MPI_Finalize
//   parray::mpi::MpiThreadArray grid({2, 2});           // 2x2 grid over MPI_COMM_WORLD
//   grid.detour([&](const ProcCoord& p) { work(p.tid(0), p.tid(1)); p.sync(1); });
//
// Unlike a CPU thread array, every process already runs the program: detour
// runs the callable once, on this rank, with its coordinates (row-major over
// the grid, as BLACS's "Row" order, so a ScaLAPACK context on the same grid
// sees the same coordinates), communicators along each dimension (a 2-D
// array's process row and column), and barriers over the whole array and
// along a dimension (Parray's #sync). An exception on any
// rank cannot be rethrown in the others, so detour prints it with the rank's
// number and coordinates and aborts every rank (MPI_Abort).
#pragma once

#include <mpi.h>

#include <cstdio>
#include <exception>
#include <initializer_list>
#include <string>
#include <vector>

#include "parray/core.hpp"
#include "parray/thread_shape.hpp"

namespace parray::mpi {

// Initialises MPI when nobody has yet, and finalises it when it did.
class Session {
 public:
  Session(int* argc = nullptr, char*** argv = nullptr) {
    int done = 0;
    MPI_Initialized(&done);
    if (!done) {
      MPI_Init(argc, argv);
      owner_ = true;
    }
  }
  ~Session() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owner_ && !finalized) MPI_Finalize();
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

 private:
  bool owner_ = false;
};

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// One process of the array: its coordinates (thread_shape.hpp: tid(),
// tid(d), tid(d, e), dim(d) ...), communicators over the whole array and
// along each dimension, and Parray's #sync over either.
struct ProcCoord : ThreadIndex {
  using ThreadIndex::ThreadIndex;
  // A 2-D array's coordinates by name: row = tid(0), col = tid(1) (0 in a 1-D
  // array of P, seen as P x 1).
  int row = 0, col = 0;
  int rows = 1, cols = 1;
  int node_rank = 0;                  // rank among the array's processes on this host (which GPU to use)
  int node_size = 1;                  // the array's processes on this host
  MPI_Comm comm = MPI_COMM_NULL;      // the whole array
  MPI_Comm row_comm = MPI_COMM_NULL;  // my process row (rank there = col); along(1) of a 2-D array
  MPI_Comm col_comm = MPI_COMM_NULL;  // my process column (rank there = row); along(0)
  // The processes that differ from this one only in dimension d (rank there = tid(d)).
  MPI_Comm along[ThreadShape::kMaxRank] = {MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL};

  void sync() const { MPI_Barrier(comm); }
  void sync(int d) const {
    if (d < 0 || d >= rank())
      throw Error("mpi thread array: sync(" + std::to_string(d) + ") in a " + std::to_string(rank()) + "-D array");
    MPI_Barrier(along[d]);
  }
};

class MpiThreadArray {
 public:
  // Parray's mpi [P][Q] is MpiThreadArray({P, Q}); any ThreadShape whose size
  // equals the communicator's.
  MpiThreadArray(std::initializer_list<int> dims, MPI_Comm comm = MPI_COMM_WORLD)
      : MpiThreadArray(ThreadShape(dims), comm) {}
  explicit MpiThreadArray(const std::vector<int>& dims, MPI_Comm comm = MPI_COMM_WORLD)
      : MpiThreadArray(ThreadShape(dims), comm) {}
  explicit MpiThreadArray(const ThreadShape& shape, MPI_Comm comm = MPI_COMM_WORLD) {
    int size = 0, rank = 0;
    MPI_Comm_size(comm, &size);
    if (shape.size() != size)
      throw Error("mpi thread array " + shape.str() + " needs " + std::to_string(shape.size()) +
                  " ranks, mpirun started " + std::to_string(size));
    MPI_Comm_dup(comm, &c_.comm);
    MPI_Comm_rank(c_.comm, &rank);
    static_cast<ThreadIndex&>(c_) = ThreadIndex(shape, rank);
    c_.rows = shape.dim(0);
    c_.cols = shape.rank() > 1 ? shape.size() / shape.dim(0) : 1;
    c_.row = c_.tid(0);
    c_.col = shape.rank() > 1 ? rank % c_.cols : 0;
    for (int d = 0; d < shape.rank(); ++d) MPI_Comm_split(c_.comm, shape.without(d, rank), c_.tid(d), &c_.along[d]);
    if (shape.rank() == 2) {
      c_.row_comm = c_.along[1];
      c_.col_comm = c_.along[0];
    } else {  // a 1-D array is a column of P rows
      MPI_Comm_split(c_.comm, c_.row, 0, &c_.row_comm);
      c_.col_comm = c_.along[0];
    }
    MPI_Comm node;  // the processes of this array that share this host's memory (and GPUs)
    MPI_Comm_split_type(c_.comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &c_.node_rank);
    MPI_Comm_size(node, &c_.node_size);
    MPI_Comm_free(&node);
  }
  ~MpiThreadArray() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (c_.rank() != 2 && c_.row_comm != MPI_COMM_NULL) MPI_Comm_free(&c_.row_comm);
    for (MPI_Comm& c : c_.along)
      if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
    if (c_.comm != MPI_COMM_NULL) MPI_Comm_free(&c_.comm);
  }
  MpiThreadArray(const MpiThreadArray&) = delete;
  MpiThreadArray& operator=(const MpiThreadArray&) = delete;

  int rows() const { return c_.rows; }
  int cols() const { return c_.cols; }
  int size() const { return c_.size(); }
  const ThreadShape& shape() const { return c_.shape(); }
  const ProcCoord& coord() const { return c_; }
  MPI_Comm comm() const { return c_.comm; }

  template <class F>
  void detour(F&& body) const {
    try {
      body(static_cast<const ProcCoord&>(c_));
    } catch (const std::exception& e) {
      abort_all(e.what());
    } catch (...) {
      abort_all("unknown exception");
    }
  }

  // One line naming this rank, then every rank of MPI_COMM_WORLD stops.
  [[noreturn]] void abort_all(const std::string& why) const {
    std::string at;
    for (int d = 0; d < c_.rank(); ++d) {
      if (d) at += ',';
      at += std::to_string(c_.tid(d));
    }
    std::fprintf(stderr, "parray mpi: rank %d (%s of %s) failed: %s\n", c_.tid(), at.c_str(), c_.shape().str().c_str(),
                 why.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::terminate();  // not reached
  }

 private:
  ProcCoord c_;
};

// "PxQ" -> {P, Q}, "PxQxC" -> {P, Q, C} (C layers, summa_25d.hpp); throws parray::Error on anything else.
std::vector<int> parse_grid(const std::string& text);
// The most square P x Q with P * Q = n and P <= Q.
std::vector<int> squarest_grid(int n);

template <class T>
inline MPI_Datatype mpi_type();
template <>
inline MPI_Datatype mpi_type<float>() { return MPI_FLOAT; }
template <>
inline MPI_Datatype mpi_type<double>() { return MPI_DOUBLE; }

}  // namespace parray::mpi
