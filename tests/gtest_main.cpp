// The main of parray's test binaries. ctest runs each binary in a few shards
// (GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX, tests/CMakeLists.txt) rather than
// one process per test case (tests/CMakeLists.txt says why). A shard's
// status says what its tests did: 1 if any failed; 77 (ctest's "skipped") if
// none failed and none passed, so a shard whose tests all skipped (no GPU) or
// that ran none is not reported as passing; else 0.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int status = RUN_ALL_TESTS();
  const ::testing::UnitTest& run = *::testing::UnitTest::GetInstance();
  if (status != 0 || run.failed_test_count() > 0) return 1;
  return run.successful_test_count() == 0 ? 77 : 0;
}
