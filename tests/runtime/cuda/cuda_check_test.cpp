// TESSERA_CUDA_CHECK / TESSERA_CUBLAS_CHECK: success passes; a failure throws std::runtime_error
// carrying the call text, the file from its layer folder on with the line, and the decoded error.
// (Runs without a GPU: the calls are error codes.)
#include "tessera/runtime/cuda/cuda_check.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tessera {
namespace {

cudaError_t fail_with(cudaError_t error) { return error; }
cublasStatus_t fail_with_status(cublasStatus_t status) { return status; }

std::string message_of(void (*body)()) {
  try {
    body();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST(CudaCheck, SuccessDoesNotThrow) {
  EXPECT_NO_THROW(TESSERA_CUDA_CHECK(fail_with(cudaSuccess)));
  EXPECT_NO_THROW(TESSERA_CUBLAS_CHECK(fail_with_status(CUBLAS_STATUS_SUCCESS)));
}

TEST(CudaCheck, CudaFailureNamesCallPlaceAndError) {
  const int line = __LINE__ + 1;
  const std::string message = message_of([] { TESSERA_CUDA_CHECK(fail_with(cudaErrorInvalidValue)); });
  EXPECT_NE(message.find("fail_with(cudaErrorInvalidValue) failed"), std::string::npos) << message;
  EXPECT_NE(message.find("tests/runtime/cuda/cuda_check_test.cpp:" + std::to_string(line)), std::string::npos)
      << message;
  EXPECT_NE(message.find("cudaErrorInvalidValue: "), std::string::npos) << message;
}

TEST(CudaCheck, CublasFailureNamesCallPlaceAndStatus) {
  const std::string message = message_of([] { TESSERA_CUBLAS_CHECK(fail_with_status(CUBLAS_STATUS_NOT_SUPPORTED)); });
  EXPECT_NE(message.find("fail_with_status(CUBLAS_STATUS_NOT_SUPPORTED) failed"), std::string::npos) << message;
  EXPECT_NE(message.find("tests/runtime/cuda/cuda_check_test.cpp:"), std::string::npos) << message;
  EXPECT_NE(message.find("CUBLAS_STATUS_NOT_SUPPORTED: "), std::string::npos) << message;
}

}  // namespace
}  // namespace tessera
