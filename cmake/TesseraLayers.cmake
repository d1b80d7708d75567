# One build target per layer, so the build keeps the layers honest.
#
#   tessera_layer(<layer> [DEPS <lower layers>...] [PUBLIC <libraries>...] [PRIVATE <libraries>...]
#                 [PER_LEVEL <sources>...])
#
# makes tessera_<layer>, an object library of <layer>/**/*.cpp (the CUDA backends under */cuda/ and
# */nccl/ are added by TesseraCuda.cmake). PER_LEVEL sources (relative to the layer's folder) are the
# CPU kernels: compiled once per CPU kernel level of TESSERA_CPU_LEVELS (-march flags and the
# namespace TESSERA_CPU_LEVEL_NS, runtime/cpu/kernel_level_namespace.hpp) into object libraries
# tessera_<layer>_<level>, which the umbrella library collects from TESSERA_LEVEL_OBJECT_LIBRARIES. Its include root holds a single link, tessera/<layer> ->
# the layer's folder, and it links its DEPS PUBLIC: a source of the layer sees tessera/<layer>/... and
# tessera/<every layer below it>/..., and an include from a layer above fails to compile ("No such
# file"). Library code includes every header by its full name, "tessera/runtime/device.hpp", which is
# also how an installed header is named (<prefix>/include/tessera/runtime/device.hpp).
#
# The layers and what each may use are recorded in ${PROJECT_BINARY_DIR}/tessera_layers.cmake for the
# layering test (tests/build/layering_test.cmake), which also checks the sources this configuration
# does not compile (the CUDA backends without nvcc).
set(TESSERA_LAYERS "")
set(TESSERA_LAYER_TABLE "")

# The CPU kernel levels and each one's flags (runtime/cpu/kernel_level.hpp says what each level
# needs of the CPU at run time). TESSERA_NATIVE=ON compiles the portable level for the host too.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(TESSERA_CPU_X86_LEVELS ON)
  set(TESSERA_CPU_LEVELS avx512 avx2 portable)
else()
  set(TESSERA_CPU_X86_LEVELS OFF)
  set(TESSERA_CPU_LEVELS portable)
endif()
set(TESSERA_CPU_LEVEL_FLAGS_avx512 -march=x86-64-v4 -mavx512vbmi)
set(TESSERA_CPU_LEVEL_FLAGS_avx2 -march=x86-64-v3)
set(TESSERA_CPU_LEVEL_FLAGS_portable "")
if(TESSERA_NATIVE)
  set(TESSERA_CPU_LEVEL_FLAGS_portable -march=native)
endif()

function(tessera_layer name)
  cmake_parse_arguments(arg "" "" "DEPS;PUBLIC;PRIVATE;PER_LEVEL" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${name}/*.cpp)
  list(FILTER sources EXCLUDE REGEX "/(cuda|nccl)/")
  list(TRANSFORM arg_PER_LEVEL PREPEND ${PROJECT_SOURCE_DIR}/${name}/)
  list(REMOVE_ITEM sources ${arg_PER_LEVEL})
  set(target tessera_${name})
  add_library(${target} OBJECT ${sources})
  set_target_properties(${target} PROPERTIES UNITY_BUILD ${TESSERA_UNITY_BUILD} UNITY_BUILD_BATCH_SIZE 16)

  # The include root: tessera/<layer> -> <source>/<layer>. Its folder name holds no layer name, so a
  # __FILE__ seen through it still reads ".../tessera/runtime/..." from the first layer folder on.
  set(root ${PROJECT_BINARY_DIR}/include_roots/${name}_headers)
  file(MAKE_DIRECTORY ${root}/tessera)
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${name} ${root}/tessera/${name} SYMBOLIC)
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${root}>)

  set(allowed ${name})
  foreach(dep IN LISTS arg_DEPS)
    if(NOT TARGET tessera_${dep})
      message(FATAL_ERROR "layer ${name}: DEPS names ${dep}, which is not a layer declared before it")
    endif()
    target_link_libraries(${target} PUBLIC tessera_${dep})
    get_property(below GLOBAL PROPERTY TESSERA_LAYER_USES_${dep})
    list(APPEND allowed ${below})
  endforeach()
  list(REMOVE_DUPLICATES allowed)
  set_property(GLOBAL PROPERTY TESSERA_LAYER_USES_${name} ${allowed})

  target_link_libraries(${target} PUBLIC ${arg_PUBLIC} PRIVATE ${arg_PRIVATE} OpenMP::OpenMP_CXX)
  target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra>")
  if(TESSERA_NATIVE)
    # PRIVATE: the flag tunes the library's own code; the installed package never carries it.
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
  endif()

  if(TESSERA_CPU_X86_LEVELS)
    target_compile_definitions(${target} PRIVATE TESSERA_CPU_X86_LEVELS=1)
  endif()

  foreach(level IN LISTS TESSERA_CPU_LEVELS)
    if(NOT arg_PER_LEVEL)
      break()
    endif()
    set(level_target ${target}_${level})
    add_library(${level_target} OBJECT ${arg_PER_LEVEL})
    # The layer's include roots and libraries, for their usage requirements only.
    target_link_libraries(${level_target} PRIVATE ${target} ${arg_PUBLIC} ${arg_PRIVATE} OpenMP::OpenMP_CXX)
    target_compile_definitions(${level_target} PRIVATE TESSERA_CPU_LEVEL_NS=cpu_${level})
    target_compile_options(${level_target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;${TESSERA_CPU_LEVEL_FLAGS_${level}}>")
    set_property(GLOBAL APPEND PROPERTY TESSERA_LEVEL_OBJECT_LIBRARIES ${level_target})
  endforeach()
  tessera_precompile_standard_headers(${target})

  list(APPEND TESSERA_LAYERS ${name})
  set(TESSERA_LAYERS ${TESSERA_LAYERS} PARENT_SCOPE)
  string(REPLACE ";" " " allowed_text "${allowed}")
  string(APPEND TESSERA_LAYER_TABLE "set(TESSERA_LAYER_USES_${name} ${allowed_text})\n")
  set(TESSERA_LAYER_TABLE "${TESSERA_LAYER_TABLE}" PARENT_SCOPE)
endfunction()

# The layer table for the layering test, written once every layer is declared.
function(tessera_write_layer_table)
  string(REPLACE ";" " " layers "${TESSERA_LAYERS}")
  file(WRITE ${PROJECT_BINARY_DIR}/tessera_layers.cmake
    "# Written by cmake/TesseraLayers.cmake: each layer and the layers its sources may include.\n"
    "set(TESSERA_LAYERS ${layers})\n${TESSERA_LAYER_TABLE}")
endfunction()

# The standard headers most sources include, parsed once per build instead of once per source
# (TESSERA_PRECOMPILED_HEADERS): the first layer makes the precompiled header, the others reuse it
# (their compile options are the same). A source sees nothing it did not include itself beyond these.
function(tessera_precompile_standard_headers target)
  if(NOT TESSERA_PRECOMPILED_HEADERS)
    return()
  endif()
  if(NOT TARGET tessera_pch_owner)
    add_library(tessera_pch_owner INTERFACE)  # marks that the header exists; its maker is recorded below
    set_property(GLOBAL PROPERTY TESSERA_PCH_TARGET ${target})
    set(headers algorithm array chrono cmath cstddef cstdint cstdio cstring filesystem functional map
        memory mutex optional span stdexcept string string_view utility vector)
    list(TRANSFORM headers REPLACE "(.+)" "$<$<COMPILE_LANGUAGE:CXX>:<\\1>>")  # not for nvcc
    target_precompile_headers(${target} PRIVATE ${headers})
  else()
    get_property(maker GLOBAL PROPERTY TESSERA_PCH_TARGET)
    target_precompile_headers(${target} REUSE_FROM ${maker})
  endif()
endfunction()
