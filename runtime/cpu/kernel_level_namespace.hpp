// TESSERA_CPU_LEVEL_NS: the namespace, inside tessera, of the CPU kernel code that the build
// compiles once per instruction-set level (cmake/TesseraLayers.cmake, PER_LEVEL sources): the
// build defines it as cpu_avx512, cpu_avx2 or cpu_portable for each copy, so the copies' symbols
// never collide. Everything else sees the portable copy. The headers of that code open it as an
// inline namespace (tessera::inline TESSERA_CPU_LEVEL_NS), so their names read as tessera::...
#pragma once

#ifndef TESSERA_CPU_LEVEL_NS
#define TESSERA_CPU_LEVEL_NS cpu_portable
#endif
