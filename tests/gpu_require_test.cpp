// With PARRAY_REQUIRE_GPU=1 (scripts/gpu-check sets it on the GPU machine) the
// GPU tests fail when no CUDA device can be used, instead of skipping every
// test: a broken driver or runtime must not look like a green run. Without it
// (a machine with no GPU, as CI) they skip, each with its reason.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "parray/array.hpp"

namespace {

class RequireGpu : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* required = std::getenv("PARRAY_REQUIRE_GPU");
    if (required && std::string(required) == "1" && !parray::cuda_available())
      FAIL() << "PARRAY_REQUIRE_GPU=1 but no CUDA device can be used (cudaGetDeviceCount failed or found none)";
  }
};

[[maybe_unused]] ::testing::Environment* const kRequireGpu = ::testing::AddGlobalTestEnvironment(new RequireGpu);

}  // namespace
