# The per-level CPU kernels (cmake/TesseraLayers.cmake, PER_LEVEL sources) define code only inside
# their own namespace, tessera::cpu_<level>. A function they define outside it — an inline function
# of a shared header, a std:: template instance, a string built for an error message — is one copy
# for the whole program, and the linker may keep the copy compiled for AVX-512: code that runs on
# any CPU would then stop with "Illegal instruction" on one without it. Run as
#   cmake -DNM=<nm> -DOBJECT_LIST=<file of "level object" lines> -P kernel_level_symbols_test.cmake
if(NOT EXISTS "${OBJECT_LIST}")
  message(FATAL_ERROR "no object list ${OBJECT_LIST}")
endif()
file(STRINGS "${OBJECT_LIST}" entries)
set(checked 0)
set(offenders "")
foreach(entry IN LISTS entries)
  string(REGEX MATCH "^([a-z0-9]+) (.+)$" matched "${entry}")
  if(NOT matched)
    continue()
  endif()
  set(level ${CMAKE_MATCH_1})
  set(object ${CMAKE_MATCH_2})
  execute_process(COMMAND ${NM} -C --defined-only "${object}" OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${object} (run the build first)")
  endif()
  string(REPLACE "\n" ";" lines "${symbols}")
  foreach(line IN LISTS lines)
    # Global and weak code: T and W. Local code (t: anonymous namespaces, statics) cannot be shared.
    if(line MATCHES "^[0-9a-f]+ [TW] (.*)$" AND NOT CMAKE_MATCH_1 MATCHES "tessera::cpu_${level}::")
      string(APPEND offenders "  ${object}: ${CMAKE_MATCH_1}\n")
    endif()
  endforeach()
  math(EXPR checked "${checked} + 1")
endforeach()
if(checked EQUAL 0)
  message(FATAL_ERROR "no per-level objects listed in ${OBJECT_LIST}")
endif()
if(offenders)
  message(FATAL_ERROR "per-level objects define code outside tessera::cpu_<level> (move it out of the "
                      "per-level sources, or into the level's namespace):\n${offenders}")
endif()
message(STATUS "${checked} per-level objects define code only in their level's namespace")
