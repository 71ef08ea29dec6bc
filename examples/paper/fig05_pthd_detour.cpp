// Figs 5-6: the main host detours to a Pthread array [2][2]; each thread
// prints its $tid$ and $tid_0$.
//
//   #mainhost {
//     #parray {pthd [2][2]} MY_TA
//     #detour MY_TA() { printf("myta %d %d\n", $tid$, $tid_0$); }
//   }
//
// The threads run at once, so their lines would come in any order; each
// thread writes its line into its own slot and the main thread prints them
// in tid order, which is fig 6.
#include <cstdio>
#include <string>
#include <vector>

#include "parray/thread_array.hpp"

int main() {
  try {
    const parray::CpuThreadArray MY_TA({2, 2});
    std::vector<std::string> lines(std::size_t(MY_TA.size()));
    MY_TA.detour([&](const parray::ThreadCoord& t) {
      lines[std::size_t(t.tid())] = "myta " + std::to_string(t.tid()) + " " + std::to_string(t.tid(0));
    });
    for (const std::string& l : lines) std::printf("%s\n", l.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fig 5: %s\n", e.what());
    return 2;
  }
}
