// GPU teams (team.hpp), device binding, plan validation.
#include "team.hpp"

#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

namespace parray::multigpu {

void bind_device(int device) { PARRAY_CUDA_CHECK(cudaSetDevice(device)); }

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // no driver or no GPU: not an error here, just none
    return 0;
  }
  return n;
}

bool variant_built(Variant v) { return v == Variant::out_of_core || PARRAY_HAVE_NCCL; }

void validate(const Plan& plan, index_t m, index_t n, index_t k) {
  const std::string v = variant_name(plan.variant);
  if (m < 1 || n < 1 || k < 1)
    throw Error("multigpu: M, N and K must be >= 1 (got " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                std::to_string(k) + ")");
  if (!variant_built(plan.variant))
    throw Error("multigpu: variant " + v + " needs NCCL, and parray was built without it");
  const int present = device_count();
  if (plan.devices.empty()) throw Error("multigpu: no GPUs given");
  std::set<int> seen;
  for (int d : plan.devices) {
    if (d < 0 || d >= present)
      throw Error("multigpu: GPU " + std::to_string(d) + " asked for, " + std::to_string(present) +
                  (present == 1 ? " GPU is" : " GPUs are") + " present");
    if (!seen.insert(d).second) throw Error("multigpu: GPU " + std::to_string(d) + " is listed twice");
  }
  if (plan.grid_rows < 1 || plan.grid_cols < 1 || plan.grid_rows * plan.grid_cols != plan.gpus())
    throw Error("multigpu: grid " + plan.grid() + " does not match " + std::to_string(plan.gpus()) + " GPUs");
  if (plan.variant != Variant::summa_2d && plan.grid_cols != 1)
    throw Error("multigpu: variant " + v + " takes the GPUs as a " + std::to_string(plan.gpus()) +
                "x1 array (a P x Q grid is for 2d)");
  if (plan.variant == Variant::summa_2d && (m < plan.grid_rows || n < plan.grid_cols))
    throw Error("multigpu: grid " + plan.grid() + " has more GPU rows than M or more GPU columns than N");
  if (plan.panel < 0) throw Error("multigpu: the panel width must be >= 0");
  if (plan.chunks < 0) throw Error("multigpu: the chunk count must be >= 0");
  if (plan.tile_m < 0 || plan.tile_n < 0 || plan.tile_k < 0) throw Error("multigpu: tile sizes must be >= 0");
  for (index_t x : {m, n, k})
    if (x > 0x7fffffff) throw Error("multigpu: M, N and K must each be below 2^31");
}

namespace detail {

void nccl_safe_environment() { setenv("NCCL_NVLS_ENABLE", "0", 0); }

Team& team(const std::vector<int>& devices, int P, int Q, bool nccl) {
  static std::mutex mu;
  static auto* teams = new std::map<std::tuple<std::vector<int>, int, int>, std::unique_ptr<Team>>;  // never
  // destroyed: the CUDA runtime may be torn down before static destructors run
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = (*teams)[{devices, P, Q}];
  if (!slot) {
    auto t = std::make_unique<Team>();
    t->devices = devices, t->P = P, t->Q = Q;
    t->gpu.resize(devices.size());
    int cur = 0;
    PARRAY_CUDA_CHECK(cudaGetDevice(&cur));
    for (std::size_t g = 0; g < devices.size(); ++g) {
      GpuSlot& s = t->gpu[g];
      s.device = devices[g];
      bind_device(s.device);
      s.compute = std::make_unique<Stream>();
      s.in = std::make_unique<Stream>(true);
      s.out = std::make_unique<Stream>();
    }
    // Peer access between the team's GPUs, where the hardware has it: the
    // operands of `--operands gpu0` then go GPU to GPU (NVLink), not through
    // host memory. NCCL does not need it.
    for (int d : devices)
      for (int e : devices) {
        int can = 0;
        if (d == e || cudaDeviceCanAccessPeer(&can, d, e) != cudaSuccess || !can) continue;
        bind_device(d);
        const cudaError_t r = cudaDeviceEnablePeerAccess(e, 0);
        if (r == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();  // enabled before: fine
        else PARRAY_CUDA_CHECK(r);
      }
    bind_device(cur);
    slot = std::move(t);
  }
#if PARRAY_HAVE_NCCL
  Team& t = *slot;
  if (nccl && !t.gpu[0].world) {
    nccl_safe_environment();
    const int G = int(devices.size());
    std::vector<ncclComm_t> comms(static_cast<std::size_t>(G));
    PARRAY_NCCL_CHECK(ncclCommInitAll(comms.data(), G, devices.data()));
    for (int g = 0; g < G; ++g) t.gpu[std::size_t(g)].world = comms[std::size_t(g)];
    // Row p: GPUs (p, 0..Q-1); column q: GPUs (0..P-1, q). Rank in a row comm
    // is q, in a column comm p (ncclCommInitAll ranks follow the list order).
    // A row or column of one GPU moves nothing and gets no communicator.
    for (int p = 0; p < P && Q > 1; ++p) {
      std::vector<int> devs;
      for (int q = 0; q < Q; ++q) devs.push_back(devices[std::size_t(p * Q + q)]);
      std::vector<ncclComm_t> c(static_cast<std::size_t>(Q));
      PARRAY_NCCL_CHECK(ncclCommInitAll(c.data(), Q, devs.data()));
      for (int q = 0; q < Q; ++q) t.gpu[std::size_t(p * Q + q)].row = c[std::size_t(q)];
    }
    for (int q = 0; q < Q && P > 1; ++q) {
      std::vector<int> devs;
      for (int p = 0; p < P; ++p) devs.push_back(devices[std::size_t(p * Q + q)]);
      std::vector<ncclComm_t> c(static_cast<std::size_t>(P));
      PARRAY_NCCL_CHECK(ncclCommInitAll(c.data(), P, devs.data()));
      for (int p = 0; p < P; ++p) t.gpu[std::size_t(p * Q + q)].col = c[std::size_t(p)];
    }
  }
#else
  if (nccl) throw Error("multigpu: this variant needs NCCL, and parray was built without it");
#endif
  return *slot;
}

}  // namespace detail
}  // namespace parray::multigpu
