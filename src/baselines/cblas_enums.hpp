// CBLAS's enumerations (fixed by the CBLAS standard), for the baselines that
// call OpenBLAS and BLIS through dlopen, without their cblas.h.
#pragma once

namespace parray::cblas {

constexpr int kRowMajor = 101, kColMajor = 102, kNoTrans = 111, kTrans = 112;

}  // namespace parray::cblas
