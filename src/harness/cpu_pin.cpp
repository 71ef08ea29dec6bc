// One-thread benchmark rows pinned to one CPU (ScopedCpuPin, harness.hpp).
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "harness/harness.hpp"

namespace parray {

int default_single_thread_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  for (int cpu = CPU_SETSIZE - 1; cpu >= 0; --cpu)
    if (CPU_ISSET(cpu, &set)) return cpu;
  return -1;
}

ScopedCpuPin::ScopedCpuPin(int cpu) {
  if (cpu < 0) return;
  cpu_set_t old;
  CPU_ZERO(&old);
  if (sched_getaffinity(0, sizeof old, &old) != 0)
    throw Error("cpu pin: cannot read this thread's CPU affinity: " + std::string(std::strerror(errno)));
  if (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &old))
    throw Error("cpu pin: CPU " + std::to_string(cpu) + " is not one this process may run on");
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0)
    throw Error("cpu pin: cannot pin to CPU " + std::to_string(cpu) + ": " + std::strerror(errno));
  saved_.resize(sizeof old);
  std::memcpy(saved_.data(), &old, sizeof old);
  active_ = true;
}

ScopedCpuPin::~ScopedCpuPin() {
  if (!active_) return;
  cpu_set_t old;
  std::memcpy(&old, saved_.data(), sizeof old);
  sched_setaffinity(0, sizeof old, &old);  // a destructor cannot throw; the old mask was valid
}

}  // namespace parray
