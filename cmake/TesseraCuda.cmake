# Optional CUDA backend (cuBLAS, NCCL): TESSERA_CUDA=AUTO builds it when nvcc is found.
# Sources under */cuda/ and */nccl/ are compiled only here; a backend that is not built is not registered.
include(CheckLanguage)

# GPU architectures: TESSERA_CUDA_ARCHITECTURES (A100 and H100 by default), unless the user sets
# CMAKE_CUDA_ARCHITECTURES (or the CUDAARCHS environment variable), which wins.
set(TESSERA_CUDA_ARCHITECTURES "80;90" CACHE STRING "CUDA architectures of the CUDA backend (CMAKE_CUDA_ARCHITECTURES, when given, wins)")

set(TESSERA_HAVE_CUDA OFF)
if(NOT TESSERA_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # enable_language caches the compiler's default architectures when none were given: remember
    # that value, so a later configure can tell it from one the user chose.
    set(tessera_arch_given_before OFF)
    if(DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(tessera_arch_given_before ON)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)  # CMake < 3.26 knows nvcc only up to C++17
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    if(NOT tessera_arch_given_before AND NOT DEFINED ENV{CUDAARCHS})
      set(TESSERA_CUDA_COMPILER_DEFAULT_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}" CACHE INTERNAL "")
    endif()
    if(NOT DEFINED ENV{CUDAARCHS} AND
       (NOT tessera_arch_given_before OR CMAKE_CUDA_ARCHITECTURES STREQUAL TESSERA_CUDA_COMPILER_DEFAULT_ARCHITECTURES))
      set(CMAKE_CUDA_ARCHITECTURES ${TESSERA_CUDA_ARCHITECTURES})  # targets created from here on
    endif()
    message(STATUS "Tessera CUDA architectures: ${CMAKE_CUDA_ARCHITECTURES}")
    set(TESSERA_HAVE_CUDA ON)
  elseif(TESSERA_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TESSERA_CUDA=ON but nvcc was not found; install the CUDA toolkit or use -DTESSERA_CUDA=AUTO")
  endif()
endif()
message(STATUS "Tessera CUDA backend: ${TESSERA_HAVE_CUDA}")

# The backends' sources join their layers: runtime/cuda/ (device, kernels, cuBLAS) the runtime layer,
# comm/nccl/ (the NCCL communicator) the comm layer.
function(tessera_add_cuda_backend)
  if(NOT TESSERA_HAVE_CUDA)
    return()
  endif()
  find_library(TESSERA_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64
    /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu)
  find_path(TESSERA_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  if(NOT TESSERA_NCCL_LIBRARY OR NOT TESSERA_NCCL_INCLUDE_DIR)
    message(FATAL_ERROR "CUDA found but NCCL is missing (looked beside ${CUDAToolkit_LIBRARY_DIR})")
  endif()
  foreach(layer_backend runtime:cuda comm:nccl)
    string(REPLACE ":" ";" pair ${layer_backend})
    list(GET pair 0 layer)
    list(GET pair 1 backend)
    set(target tessera_${layer})
    set_property(TARGET ${target} PROPERTY CUDA_ARCHITECTURES ${CMAKE_CUDA_ARCHITECTURES})
    set_property(TARGET ${target} PROPERTY CUDA_STANDARD 20)
    # Kernels: optimised in every build type, with line info for profilers and sanitizers; constexpr
    # host functions (std::array, std::bit_cast in runtime/math/*_math.hpp) callable on the device;
    # the host compiler's warnings as for the C++ sources.
    target_compile_options(${target} PRIVATE
      "$<$<COMPILE_LANGUAGE:CUDA>:-O3;-lineinfo;--expt-relaxed-constexpr;-Xcompiler=-Wall,-Wextra>")
    file(GLOB_RECURSE backend_sources CONFIGURE_DEPENDS
      ${PROJECT_SOURCE_DIR}/${layer}/${backend}/*.cpp ${PROJECT_SOURCE_DIR}/${layer}/${backend}/*.cu)
    target_sources(${target} PRIVATE ${backend_sources})
  endforeach()
  target_link_libraries(tessera_runtime PUBLIC CUDA::cudart CUDA::cublas CUDA::cublasLt)
  # Only the two files that register the backends see TESSERA_HAVE_CUDA, so turning the backend on or
  # off recompiles them and the CUDA sources, not every layer above the runtime.
  set_source_files_properties(${PROJECT_SOURCE_DIR}/runtime/device_registry.cpp
    ${PROJECT_SOURCE_DIR}/comm/device_communicator.cpp PROPERTIES COMPILE_DEFINITIONS TESSERA_HAVE_CUDA=1)
  # PUBLIC: comm/nccl/nccl_communicator.hpp includes nccl.h.
  target_include_directories(tessera_comm PUBLIC ${TESSERA_NCCL_INCLUDE_DIR})
endfunction()

# What the umbrella library carries for its users in a build with CUDA.
function(tessera_link_cuda_libraries target)
  if(NOT TESSERA_HAVE_CUDA)
    return()
  endif()
  target_include_directories(${target} PUBLIC ${TESSERA_NCCL_INCLUDE_DIR})
  target_link_libraries(${target} PUBLIC CUDA::cudart CUDA::cublas CUDA::cublasLt ${TESSERA_NCCL_LIBRARY})
  target_compile_definitions(${target} PUBLIC TESSERA_HAVE_CUDA=1)
endfunction()
