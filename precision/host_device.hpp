// TESSERA_HD marks functions that a CUDA build compiles for both host and device, so the CPU
// kernels and the CUDA kernels share one formula (and the CPU tests check the CUDA math).
#pragma once

#if defined(__CUDACC__)
#define TESSERA_HD __host__ __device__ inline
#else
#define TESSERA_HD inline
#endif
