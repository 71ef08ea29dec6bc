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
