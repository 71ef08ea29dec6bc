// The default GPU GEMM's choice: reading speed tables, and the fastest
// candidate at the nearest measured shape.
#include <gtest/gtest.h>

#include "parray/dispatch.hpp"

using namespace parray;

namespace {
const char* kCsv =
    "impl,device,dtype,m,n,k,layout,threads,ms,gflops,ok,note\n"
    "slow-small,gpu,f32,512,512,512,row,1,1,100,1,\"\"\n"
    "fast-small,gpu,f32,512,512,512,row,1,1,200,1,\"a, quoted note\"\n"
    "slow-small,gpu,f32,4096,4096,4096,row,1,1,900,1,\"\"\n"
    "fast-small,gpu,f32,4096,4096,4096,row,1,1,500,1,\"\"\n"
    "failed,gpu,f32,4096,4096,4096,row,1,1,99999,0,\"check failed\"\n"
    "blocked,gpu,f32,4096,4096,4096,fig17,1,1,99999,1,\"\"\n"
    "double,gpu,f64,4096,4096,4096,row,1,1,50,1,\"\"\n";
}

TEST(SpeedTable, FastestAtTheNearestMeasuredShape) {
  const SpeedTable t = SpeedTable::from_csv(kCsv, "test");
  ASSERT_EQ(t.points().size(), 5u);  // the failed and non-row-major rows are left out
  const std::vector<std::string> both = {"slow-small", "fast-small"};
  EXPECT_EQ(t.fastest(Dtype::f32, 512, 512, 512, both), "fast-small");
  EXPECT_EQ(t.fastest(Dtype::f32, 304, 704, 400, both), "fast-small");      // nearest: 512^3
  EXPECT_EQ(t.fastest(Dtype::f32, 4080, 4112, 4096, both), "slow-small");  // nearest: 4096^3
  EXPECT_EQ(t.fastest(Dtype::f32, 4097, 4095, 4099, both), "");            // no unaligned shape measured
  EXPECT_EQ(t.fastest(Dtype::f32, 100000, 100000, 100000, both), "slow-small");
  const SpeedTable odd = SpeedTable::from_csv(std::string(kCsv) + "fast-small,gpu,f32,1037,1055,1031,row,1,1,300,1,\"\"\n",
                                              "test");
  EXPECT_EQ(odd.fastest(Dtype::f32, 4097, 4095, 4099, both), "fast-small");  // the unaligned point, though farther
  EXPECT_EQ(odd.fastest(Dtype::f32, 4096, 4096, 4096, both), "slow-small");
  EXPECT_EQ(t.fastest(Dtype::f32, 4096, 4096, 4096, {"fast-small"}), "fast-small");  // only candidates count
  EXPECT_EQ(t.fastest(Dtype::f32, 4096, 4096, 4096, {"failed", "blocked"}), "");     // never measured usable
  EXPECT_EQ(t.fastest(Dtype::f64, 4096, 4096, 4096, {"double", "slow-small"}), "double");
}

TEST(SpeedTable, BadTablesAreErrors) {
  EXPECT_THROW(SpeedTable::from_csv("", "empty.csv"), Error);
  EXPECT_THROW(SpeedTable::from_csv("impl,m,n\nx,1,2\n", "short.csv"), Error);  // not a bench table
  EXPECT_THROW(SpeedTable::from_csv("impl,dtype,m,n,k,layout,gflops,ok\nx,f32,1,2\n", "cut.csv"), Error);
  EXPECT_THROW(SpeedTable::from_csv("impl,dtype,m,n,k,layout,gflops,ok\nx,f32,a,2,3,row,5,1\n", "nan.csv"), Error);
  EXPECT_THROW(SpeedTable::from_file("/nonexistent/speed.csv"), Error);
}

// The built-in tables are this repository's measurements: they parse, and
// each has both candidates of gpu-auto at the shapes it was measured at.
TEST(SpeedTable, BuiltInTablesHaveTheCandidates) {
  for (const char* gpu : {"NVIDIA H200", "NVIDIA H100 80GB HBM3"}) {
    const SpeedTable t = builtin_speed_table(gpu);
    ASSERT_FALSE(t.empty()) << gpu;
    int best = 0, tf32x3 = 0;
    for (const SpeedPoint& p : t.points()) {
      best += p.impl == "cuda-12-best";
      tf32x3 += p.impl == "cuda-13-3xtf32";
    }
    EXPECT_GE(best, 5) << t.source();
    EXPECT_GE(tf32x3, 5) << t.source();
    // At 8192^3 the split TF32 product is the faster FP32-accurate GEMM on
    // both; at 1037 x 1055 x 1031 the CUDA-core kernel.
    const std::vector<std::string> both = {"cuda-12-best", "cuda-13-3xtf32"};
    EXPECT_EQ(t.fastest(Dtype::f32, 8192, 8192, 8192, both), "cuda-13-3xtf32");
    EXPECT_EQ(t.fastest(Dtype::f32, 1037, 1055, 1031, both), "cuda-12-best");
  }
  EXPECT_TRUE(builtin_speed_table("NVIDIA A100-SXM4-80GB").empty());
  // The H200's thin C (N = 64), measured on its own: the CUDA-core kernel;
  // its thin K (8191 x 8193, K = 17): the split TF32 product.
  const SpeedTable h200 = builtin_speed_table("NVIDIA H200");
  const std::vector<std::string> both = {"cuda-12-best", "cuda-13-3xtf32"};
  EXPECT_EQ(h200.fastest(Dtype::f32, 4096, 64, 4096, both), "cuda-12-best");
  EXPECT_EQ(h200.fastest(Dtype::f32, 4097, 4099, 4095, both), "cuda-12-best");  // unaligned: not 4096^3's choice
  EXPECT_EQ(h200.fastest(Dtype::f32, 8191, 8193, 17, both), "cuda-13-3xtf32");
  // Both GPUs with parray's own tensor-core kernel (step 14) among the
  // candidates: it from 1037 x 1055 x 1031 up, aligned or not; the CUDA-core
  // kernel for the thin C, the split cuBLAS product for the thin K.
  for (const char* gpu : {"NVIDIA H200", "NVIDIA H100 80GB HBM3"}) {
    const SpeedTable t = builtin_speed_table(gpu);
    const std::vector<std::string> three = {"cuda-12-best", "cuda-13-3xtf32", "cuda-14-3xtf32"};
    EXPECT_EQ(t.fastest(Dtype::f32, 4096, 4096, 4096, three), "cuda-14-3xtf32") << gpu;
    EXPECT_EQ(t.fastest(Dtype::f32, 4097, 4099, 4095, three), "cuda-14-3xtf32") << gpu;
    EXPECT_EQ(t.fastest(Dtype::f32, 1037, 1031, 1055, three), "cuda-14-3xtf32") << gpu;
    EXPECT_EQ(t.fastest(Dtype::f32, 4096, 64, 4096, three), "cuda-12-best") << gpu;
    EXPECT_EQ(t.fastest(Dtype::f32, 8191, 8193, 17, three), "cuda-13-3xtf32") << gpu;
  }
  // The H200 with step 15 too: the thin C and the thin A (N or M = 64: the
  // 4096 x 4096 operand split in registers, K split into 4 parts), its C
  // staged in shared memory for the thin K, and one of the two wgmma kernels
  // where they run within a few percent of each other.
  const std::vector<std::string> four = {"cuda-12-best", "cuda-13-3xtf32", "cuda-14-3xtf32", "cuda-15-3xtf32"};
  EXPECT_EQ(h200.fastest(Dtype::f32, 4096, 64, 4096, four), "cuda-15-3xtf32");
  EXPECT_EQ(h200.fastest(Dtype::f32, 64, 4096, 4096, four), "cuda-15-3xtf32");
  EXPECT_EQ(h200.fastest(Dtype::f32, 8191, 8193, 17, four), "cuda-15-3xtf32");
  for (index_t n : {2048, 4096, 8192}) {
    const std::string pick = h200.fastest(Dtype::f32, n, n, n, four);
    EXPECT_TRUE(pick == "cuda-14-3xtf32" || pick == "cuda-15-3xtf32") << n << ": " << pick;
  }
}
