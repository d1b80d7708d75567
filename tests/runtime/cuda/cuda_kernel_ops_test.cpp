// The CUDA table implements every op of the one list (runtime/kernel_ops.hpp): checked when the
// CUDA backend is built, by the compiler; the test itself needs no GPU.
#include <gtest/gtest.h>

#include <type_traits>

#include "tessera/runtime/cuda/cuda_kernels.hpp"

namespace tessera {
namespace {

static_assert(!std::is_abstract_v<CudaKernels>, "the CUDA table misses an op of kernel_ops.hpp");

TEST(CudaKernelOps, EveryOpOfTheListIsImplemented) { SUCCEED() << "checked at compile time"; }

}  // namespace
}  // namespace tessera
