# Test: the layers point down only.
#  1. Every library source (also those this configuration does not compile, such as the CUDA
#     backends without nvcc) includes library headers by their full name, tessera/<layer>/..., and
#     only from its own layer or a layer its layer links (the table cmake/TesseraLayers.cmake wrote);
#     programs, benchmarks and tests name library headers the same way, never as bare <layer>/....
#  2. The build enforces it: a probe in the runtime layer that includes a core header compiles, and
#     one that includes a sharding header fails with the header not found.
# Run by ctest as: cmake -DSOURCE_DIR=... -DBUILD_DIR=... -DLAYER_TABLE=... -P this file.
cmake_minimum_required(VERSION 3.25)  # policies of today (IN_LIST) in script mode
foreach(var SOURCE_DIR BUILD_DIR LAYER_TABLE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "layering_test: -D${var}=... is required")
  endif()
endforeach()
include(${LAYER_TABLE})

set(problems "")
set(checked 0)

# Checks the include lines of every C++/CUDA file under `folder`; `allowed` lists the layers its
# tessera/ includes may name (every layer for programs and tests).
function(check_folder folder allowed)
  file(GLOB_RECURSE files ${SOURCE_DIR}/${folder}/*.hpp ${SOURCE_DIR}/${folder}/*.cpp ${SOURCE_DIR}/${folder}/*.h
       ${SOURCE_DIR}/${folder}/*.cu ${SOURCE_DIR}/${folder}/*.cuh)
  foreach(file IN LISTS files)
    file(RELATIVE_PATH rel ${SOURCE_DIR} ${file})
    if(rel MATCHES "^tests/layers/probes/")
      continue()  # the probes include upward on purpose
    endif()
    math(EXPR n "${checked} + 1")
    set(checked ${n})
    file(STRINGS ${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[\"<]([^\">]+)[\">].*" "\\1" header "${line}")
      if(header MATCHES "^tessera/([a-z_]+)/")
        set(layer ${CMAKE_MATCH_1})
        if(NOT layer IN_LIST TESSERA_LAYERS)
          list(APPEND problems "${rel}: includes ${header}, but there is no layer '${layer}'")
        elseif(NOT layer IN_LIST allowed)
          string(REPLACE ";" ", " may "${allowed}")
          list(APPEND problems "${rel}: includes ${header} from the layer above it '${layer}' (this layer may use ${may})")
        endif()
      elseif(header MATCHES "^\\.\\./")
        list(APPEND problems "${rel}: includes ${header} by a relative path: name it tessera/<layer>/... (or tests/... in a test)")
      elseif(header MATCHES "^([a-z_]+)/")
        if(CMAKE_MATCH_1 IN_LIST TESSERA_LAYERS)
          list(APPEND problems "${rel}: includes ${header}: name it tessera/${header}")
        endif()
      endif()
    endforeach()
  endforeach()
  set(problems "${problems}" PARENT_SCOPE)
  set(checked ${checked} PARENT_SCOPE)
endfunction()

foreach(layer IN LISTS TESSERA_LAYERS)
  check_folder(${layer} "${TESSERA_LAYER_USES_${layer}}")
endforeach()
foreach(folder examples bench tests include)
  check_folder(${folder} "${TESSERA_LAYERS}")
endforeach()

# The build refuses an upward include.
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target tessera_layering_probe_runtime_includes_core
  RESULT_VARIABLE down_code OUTPUT_VARIABLE down_out ERROR_VARIABLE down_err)
if(NOT down_code EQUAL 0)
  list(APPEND problems "the runtime layer's probe that includes a core header did not compile:\n${down_out}${down_err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target tessera_layering_probe_runtime_includes_sharding
  RESULT_VARIABLE up_code OUTPUT_VARIABLE up_out ERROR_VARIABLE up_err)
if(up_code EQUAL 0)
  list(APPEND problems "the runtime layer's probe that includes a sharding header compiled: the build does not refuse upward includes")
elseif(NOT "${up_out}${up_err}" MATCHES "tessera/sharding/sharded_engine.hpp: No such file")
  list(APPEND problems "the upward probe failed, but not for the missing header:\n${up_out}${up_err}")
endif()

if(problems)
  list(LENGTH problems count)
  string(REPLACE ";" "\n  " text "${problems}")
  message(FATAL_ERROR "${count} layering problem(s):\n  ${text}")
endif()
message(STATUS "layering: ${checked} files include only downward; the build refused the upward probe")
