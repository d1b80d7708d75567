// CPU kernel levels: the CPU kernels are compiled once per instruction-set level (x86-64: avx512 =
// x86-64-v4 with AVX-512 VBMI, avx2 = x86-64-v3 (AVX2 + FMA), portable = baseline x86-64; other
// architectures: portable only), and one binary picks a level at run time, once: the best level
// this CPU runs, or the one the environment variable TESSERA_CPU_KERNELS names (avx512, avx2,
// portable). A level gives the same bits in every run; levels differ from one another only in the
// last bits of results whose rounding depends on FMA or on the vector width (tests/runtime/cpu/
// kernel_level_test.cpp lists which). GEMMs go through OpenBLAS, which picks its own kernels.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tessera {

class Kernels;

enum class CpuKernelLevel { kPortable, kAvx2, kAvx512 };

inline constexpr const char* kCpuKernelsEnv = "TESSERA_CPU_KERNELS";

// "portable", "avx2", "avx512".
const char* cpu_kernel_level_name(CpuKernelLevel level);

// The levels this binary holds, and those of them this CPU runs; best first.
std::vector<CpuKernelLevel> built_cpu_kernel_levels();
std::vector<CpuKernelLevel> supported_cpu_kernel_levels();

// The level for a value of TESSERA_CPU_KERNELS (null or empty: the best level this CPU runs). An
// unknown name, or a level this CPU cannot run or this binary lacks, throws std::invalid_argument
// naming the variable, the value and the levels this CPU has.
CpuKernelLevel choose_cpu_kernel_level(const char* requested);

// The level the process runs, chosen once from TESSERA_CPU_KERNELS and the CPU on first use (the
// first CpuDevice); throws as choose_cpu_kernel_level, on every call, when the variable is wrong.
CpuKernelLevel cpu_kernel_level();
// Its name, for reports.
std::string kernel_level_name();

// What one level compiles: the Kernels table and the host copies (host_copy.hpp). Static; a level
// this binary lacks throws std::invalid_argument.
struct CpuLevelFunctions {
  const Kernels* kernels;
  void (*stream_copy)(void* dst, const void* src, std::size_t bytes);
  void (*parallel_stream_copy)(void* dst, const void* src, std::size_t bytes);
  void (*stream_zero)(void* dst, std::size_t bytes);
  void (*parallel_stream_zero)(void* dst, std::size_t bytes);
};
const CpuLevelFunctions& cpu_level_functions(CpuKernelLevel level);

}  // namespace tessera
