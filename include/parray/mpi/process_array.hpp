// MPI process arrays: Parray's `mpi [P][Q]` beside `pthd [2][2]` (thread_array.hpp).
//
//   parray::mpi::Session session(&argc, &argv);        // MPI_Init / MPI_Finalize
//   parray::mpi::MpiThreadArray grid({2, 2});           // 2x2 grid over MPI_COMM_WORLD
//   grid.detour([&](const ProcCoord& p) { work(p[0], p[1]); p.sync(); });
//
// Unlike a CPU thread array, every process already runs the program: detour
// runs the callable once, on this rank, with its coordinates (row-major over
// the grid, as BLACS's "Row" order, so a ScaLAPACK context on the same grid
// sees the same coordinates), communicators along its process row and column,
// and a barrier over the whole array (Parray's #sync). An exception on any
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

// What one process of the array knows about itself ($tid$, $tid_0$, $tid_1$).
struct ProcCoord {
  int tid = 0;                // rank in the array's communicator
  int row = 0, col = 0;       // coordinates in the P x Q grid
  int rows = 1, cols = 1;     // P and Q (a 1-D array of P is P x 1)
  int node_rank = 0;          // rank among the array's processes on this host (which GPU to use)
  MPI_Comm comm = MPI_COMM_NULL;      // the whole array
  MPI_Comm row_comm = MPI_COMM_NULL;  // my process row (Q ranks, rank there = col)
  MPI_Comm col_comm = MPI_COMM_NULL;  // my process column (P ranks, rank there = row)

  int operator[](int d) const { return d == 0 ? row : col; }
  int size() const { return rows * cols; }
  void sync() const { MPI_Barrier(comm); }
};

class MpiThreadArray {
 public:
  // {P} or {P, Q}; the product must equal the communicator's size.
  explicit MpiThreadArray(std::initializer_list<int> dims, MPI_Comm comm = MPI_COMM_WORLD)
      : MpiThreadArray(std::vector<int>(dims), comm) {}
  explicit MpiThreadArray(const std::vector<int>& dims, MPI_Comm comm = MPI_COMM_WORLD) {
    if (dims.empty() || dims.size() > 2)
      throw Error("mpi thread array: 1 or 2 dimensions, got " + std::to_string(dims.size()));
    for (std::size_t d = 0; d < dims.size(); ++d)
      if (dims[d] < 1) throw Error("mpi thread array: dimension " + std::to_string(d) + " is " + std::to_string(dims[d]));
    const int p = dims[0], q = dims.size() == 2 ? dims[1] : 1;
    int size = 0;
    MPI_Comm_size(comm, &size);
    if (static_cast<long long>(p) * q != size)
      throw Error("grid " + std::to_string(p) + "x" + std::to_string(q) + " needs " + std::to_string(p * q) +
                  " ranks, mpirun started " + std::to_string(size));
    MPI_Comm_dup(comm, &c_.comm);
    MPI_Comm_rank(c_.comm, &c_.tid);
    c_.rows = p;
    c_.cols = q;
    c_.row = c_.tid / q;
    c_.col = c_.tid % q;
    MPI_Comm_split(c_.comm, c_.row, c_.col, &c_.row_comm);
    MPI_Comm_split(c_.comm, c_.col, c_.row, &c_.col_comm);
    MPI_Comm node;  // the processes of this array that share this host's memory (and GPUs)
    MPI_Comm_split_type(c_.comm, MPI_COMM_TYPE_SHARED, c_.tid, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &c_.node_rank);
    MPI_Comm_free(&node);
  }
  ~MpiThreadArray() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (MPI_Comm* c : {&c_.row_comm, &c_.col_comm, &c_.comm})
      if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
  }
  MpiThreadArray(const MpiThreadArray&) = delete;
  MpiThreadArray& operator=(const MpiThreadArray&) = delete;

  int rows() const { return c_.rows; }
  int cols() const { return c_.cols; }
  int size() const { return c_.rows * c_.cols; }
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
    std::fprintf(stderr, "parray mpi: rank %d (%d,%d of %dx%d) failed: %s\n", c_.tid, c_.row, c_.col, c_.rows,
                 c_.cols, why.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::terminate();  // not reached
  }

 private:
  ProcCoord c_;
};

// "PxQ" -> {P, Q}; throws parray::Error on anything else.
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
