// cuBLAS opened on first use (src/cuda/common/cublas_library.hpp): the file
// the headers name opens and every function parray calls is bound. Needs no
// GPU: opening and binding a library runs no CUDA call.
#include <gtest/gtest.h>

#include <string>

#include "common/cublas_library.hpp"

TEST(CublasLibrary, OpensAndBindsEveryFunction) {
  const parray::cuda::CublasLibrary& lib = parray::cuda::cublas();
  const void* bound[] = {reinterpret_cast<const void*>(lib.Create), reinterpret_cast<const void*>(lib.Destroy),
                         reinterpret_cast<const void*>(lib.SetStream), reinterpret_cast<const void*>(lib.SetMathMode),
                         reinterpret_cast<const void*>(lib.GetStatusString), reinterpret_cast<const void*>(lib.Sgemm),
                         reinterpret_cast<const void*>(lib.Dgemm), reinterpret_cast<const void*>(lib.GemmEx),
                         reinterpret_cast<const void*>(lib.SgemmStridedBatched),
                         reinterpret_cast<const void*>(lib.DgemmStridedBatched),
                         reinterpret_cast<const void*>(lib.GemmStridedBatchedEx),
                         reinterpret_cast<const void*>(lib.Sgemv), reinterpret_cast<const void*>(lib.Dgemv),
                         reinterpret_cast<const void*>(lib.XtCreate), reinterpret_cast<const void*>(lib.XtDeviceSelect),
                         reinterpret_cast<const void*>(lib.XtSetBlockDim), reinterpret_cast<const void*>(lib.XtGetBlockDim),
                         reinterpret_cast<const void*>(lib.XtSgemm)};
  EXPECT_EQ(sizeof(bound), sizeof(parray::cuda::CublasLibrary)) << "a member of CublasLibrary is not checked here";
  for (const void* f : bound) EXPECT_NE(f, nullptr);
  const char* text = lib.GetStatusString(CUBLAS_STATUS_NOT_INITIALIZED);  // a call through the table
  ASSERT_NE(text, nullptr);
  EXPECT_GT(std::string(text).size(), 0u);
  EXPECT_EQ(&parray::cuda::cublas(), &lib);  // opened once
}
