// Registers the CPU GEMM ladder, in ladder order, and makes its fastest step
// the CPU default.
#include "common.hpp"

namespace parray {

void register_cpu_ladder(Registry& r) {
  r.add(ladder::gold());
  r.add(ladder::gold_omp());
  r.add(ladder::transpose());
  r.add(ladder::pack_single());
  r.add(ladder::pack_double());
  r.add(ladder::tile_4x4());
  r.add(ladder::parray_pthd_2x2());
  r.set_default(Device::cpu, "tile-4x4");
}

}  // namespace parray
