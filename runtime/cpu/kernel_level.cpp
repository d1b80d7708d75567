// The CPU kernel level: which levels this binary holds (TESSERA_CPU_X86_LEVELS, set by the build on
// x86-64), which of them this CPU runs (__builtin_cpu_supports), and the one the process uses.
#include "tessera/runtime/cpu/kernel_level.hpp"

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tessera {

// Each level's table, defined by that level's copy of level_functions.cpp.
namespace cpu_portable {
const CpuLevelFunctions& level_functions();
}  // namespace cpu_portable
#if defined(TESSERA_CPU_X86_LEVELS)
namespace cpu_avx2 {
const CpuLevelFunctions& level_functions();
}  // namespace cpu_avx2
namespace cpu_avx512 {
const CpuLevelFunctions& level_functions();
}  // namespace cpu_avx512
#endif

namespace {

struct LevelEntry {
  CpuKernelLevel level;
  const CpuLevelFunctions& (*functions)();
  bool (*cpu_runs)();
};

#if defined(TESSERA_CPU_X86_LEVELS)
// The features the compiler may use under -march=x86-64-v4 -mavx512vbmi and -march=x86-64-v3.
bool cpu_runs_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("x86-64-v4") && __builtin_cpu_supports("avx512vbmi");
}
bool cpu_runs_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("x86-64-v3");
}
#endif
bool cpu_runs_portable() { return true; }

// Best first.
const LevelEntry kLevels[] = {
#if defined(TESSERA_CPU_X86_LEVELS)
    {CpuKernelLevel::kAvx512, &cpu_avx512::level_functions, &cpu_runs_avx512},
    {CpuKernelLevel::kAvx2, &cpu_avx2::level_functions, &cpu_runs_avx2},
#endif
    {CpuKernelLevel::kPortable, &cpu_portable::level_functions, &cpu_runs_portable},
};

const LevelEntry* find_level(CpuKernelLevel level) {
  for (const LevelEntry& e : kLevels) {
    if (e.level == level) return &e;
  }
  return nullptr;
}

std::string level_list(const std::vector<CpuKernelLevel>& levels) {
  std::string out;
  for (CpuKernelLevel level : levels) {
    if (!out.empty()) out += ", ";
    out += cpu_kernel_level_name(level);
  }
  return out;
}

// The level, or the message that says why it cannot be had.
struct Choice {
  CpuKernelLevel level = CpuKernelLevel::kPortable;
  std::string error;
};

Choice choose(const char* requested) {
  const std::vector<CpuKernelLevel> supported = supported_cpu_kernel_levels();
  if (requested == nullptr || requested[0] == '\0') return {supported.front(), ""};
  for (CpuKernelLevel level : {CpuKernelLevel::kAvx512, CpuKernelLevel::kAvx2, CpuKernelLevel::kPortable}) {
    if (std::strcmp(requested, cpu_kernel_level_name(level)) != 0) continue;
    for (CpuKernelLevel s : supported) {
      if (s == level) return {level, ""};
    }
    std::string why = find_level(level) == nullptr ? " is not built into this binary" : " is not supported by this CPU";
    return {level, std::string(kCpuKernelsEnv) + "=" + requested + ": the level" + why +
                       "; this CPU runs: " + level_list(supported) + " (unset it for the best one)"};
  }
  return {CpuKernelLevel::kPortable, std::string(kCpuKernelsEnv) + "=" + requested +
                                         ": unknown level; use one of avx512, avx2, portable (this CPU runs: " +
                                         level_list(supported) + "), or unset it for the best one"};
}

}  // namespace

const char* cpu_kernel_level_name(CpuKernelLevel level) {
  switch (level) {
    case CpuKernelLevel::kPortable: return "portable";
    case CpuKernelLevel::kAvx2: return "avx2";
    case CpuKernelLevel::kAvx512: return "avx512";
  }
  return "unknown";
}

std::vector<CpuKernelLevel> built_cpu_kernel_levels() {
  std::vector<CpuKernelLevel> out;
  for (const LevelEntry& e : kLevels) out.push_back(e.level);
  return out;
}

std::vector<CpuKernelLevel> supported_cpu_kernel_levels() {
  std::vector<CpuKernelLevel> out;
  for (const LevelEntry& e : kLevels) {
    if (e.cpu_runs()) out.push_back(e.level);
  }
  return out;
}

CpuKernelLevel choose_cpu_kernel_level(const char* requested) {
  Choice c = choose(requested);
  if (!c.error.empty()) throw std::invalid_argument(c.error);
  return c.level;
}

CpuKernelLevel cpu_kernel_level() {
  static const Choice chosen = choose(std::getenv(kCpuKernelsEnv));
  if (!chosen.error.empty()) throw std::invalid_argument(chosen.error);
  return chosen.level;
}

std::string kernel_level_name() { return cpu_kernel_level_name(cpu_kernel_level()); }

const CpuLevelFunctions& cpu_level_functions(CpuKernelLevel level) {
  const LevelEntry* e = find_level(level);
  if (e == nullptr) {
    throw std::invalid_argument(std::string("CPU kernel level ") + cpu_kernel_level_name(level) +
                                " is not built into this binary (built: " + level_list(built_cpu_kernel_levels()) +
                                ")");
  }
  return e->functions();
}

}  // namespace tessera
