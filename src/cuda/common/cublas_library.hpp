// cuBLAS, opened on first use (dlopen) instead of linked into libparray.
// Linking it makes every process that loads libparray spend ~0.7 s before
// main relocating cuBLAS and cuBLASLt (600 MB of code), GPU or not: the CLI,
// every CPU test, every MPI rank. Opened here, only a process that calls
// cuBLAS (the baselines, step 13's splits, cublasXt) pays it, once. Each
// member has the type of the cuBLAS function it names (cublas().Sgemm is
// cublasSgemm), so calls are checked against cublas_v2.h / cublasXt.h at
// compile time.
#pragma once

#include <cublasLt.h>
#include <cublasXt.h>
#include <cublas_v2.h>

#include <string_view>

namespace parray::cuda {

// cublas_api.h overloads these two in C++ (a compute type given as
// cudaDataType, converted inline); the library exports the form below.
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                    const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
using GemmStridedBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                                  const void*, const void*, cudaDataType, int, long long, const void*,
                                                  cudaDataType, int, long long, const void*, void*, cudaDataType, int,
                                                  long long, int, cublasComputeType_t, cublasGemmAlgo_t);

struct CublasLibrary {
  decltype(&::cublasCreate) Create;
  decltype(&::cublasDestroy) Destroy;
  decltype(&::cublasSetStream) SetStream;
  decltype(&::cublasSetMathMode) SetMathMode;
  decltype(&::cublasGetStatusString) GetStatusString;
  decltype(&::cublasSgemm) Sgemm;
  decltype(&::cublasDgemm) Dgemm;
  GemmExFn GemmEx;
  decltype(&::cublasSgemmStridedBatched) SgemmStridedBatched;
  decltype(&::cublasDgemmStridedBatched) DgemmStridedBatched;
  GemmStridedBatchedExFn GemmStridedBatchedEx;
  decltype(&::cublasSgemv) Sgemv;
  decltype(&::cublasDgemv) Dgemv;
  decltype(&::cublasXtCreate) XtCreate;
  decltype(&::cublasXtDeviceSelect) XtDeviceSelect;
  decltype(&::cublasXtSetBlockDim) XtSetBlockDim;
  decltype(&::cublasXtGetBlockDim) XtGetBlockDim;
  decltype(&::cublasXtSgemm) XtSgemm;

  // Throws parray::Error "WHO: CALL: <cuBLAS's text for status>" (or
  // "WHO: <text>" without CALL) unless status is CUBLAS_STATUS_SUCCESS: every
  // caller's check of a cuBLAS call. Builds the message only on failure.
  void check(cublasStatus_t status, std::string_view who, std::string_view call = {}) const;
};

// The library, opened by the first call (thread-safe); throws parray::Error
// naming the file where it cannot be opened or lacks a function.
const CublasLibrary& cublas();

// cuBLASLt (libcublasLt), opened the same way: the FP8 GEMM's baseline.
struct CublasLtLibrary {
  decltype(&::cublasLtCreate) Create;
  decltype(&::cublasLtGetStatusString) GetStatusString;
  decltype(&::cublasLtMatmulDescCreate) MatmulDescCreate;
  decltype(&::cublasLtMatmulDescDestroy) MatmulDescDestroy;
  decltype(&::cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute;
  decltype(&::cublasLtMatrixLayoutCreate) MatrixLayoutCreate;
  decltype(&::cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy;
  decltype(&::cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate;
  decltype(&::cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic;
  decltype(&::cublasLtMatmul) Matmul;

  void check(cublasStatus_t status, std::string_view who, std::string_view call = {}) const;
};

const CublasLtLibrary& cublaslt();

}  // namespace parray::cuda
