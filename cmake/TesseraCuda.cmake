# Optional CUDA backend (cuBLAS, NCCL): TESSERA_CUDA=AUTO builds it when nvcc is found.
# Sources under */cuda/ and */nccl/ are compiled only here; a backend that is not built is not registered.
include(CheckLanguage)

set(TESSERA_HAVE_CUDA OFF)
if(NOT TESSERA_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(TESSERA_HAVE_CUDA ON)
  elseif(TESSERA_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TESSERA_CUDA=ON but nvcc was not found; install the CUDA toolkit or use -DTESSERA_CUDA=AUTO")
  endif()
endif()
message(STATUS "Tessera CUDA backend: ${TESSERA_HAVE_CUDA}")

function(tessera_add_cuda_backend target)
  if(NOT TESSERA_HAVE_CUDA)
    return()
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "52")
    set(CMAKE_CUDA_ARCHITECTURES 80 90 PARENT_SCOPE)
    set_property(TARGET ${target} PROPERTY CUDA_ARCHITECTURES 80 90)
  endif()
  set_property(TARGET ${target} PROPERTY CUDA_STANDARD 20)
  file(GLOB_RECURSE cuda_sources CONFIGURE_DEPENDS
    ${PROJECT_SOURCE_DIR}/runtime/cuda/*.cpp ${PROJECT_SOURCE_DIR}/runtime/cuda/*.cu
    ${PROJECT_SOURCE_DIR}/comm/nccl/*.cpp ${PROJECT_SOURCE_DIR}/comm/nccl/*.cu)
  target_sources(${target} PRIVATE ${cuda_sources})
  find_library(TESSERA_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64
    /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu)
  find_path(TESSERA_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  if(NOT TESSERA_NCCL_LIBRARY OR NOT TESSERA_NCCL_INCLUDE_DIR)
    message(FATAL_ERROR "CUDA found but NCCL is missing (looked beside ${CUDAToolkit_LIBRARY_DIR})")
  endif()
  # PUBLIC: comm/nccl/nccl_communicator.hpp includes nccl.h.
  target_include_directories(${target} PUBLIC ${TESSERA_NCCL_INCLUDE_DIR})
  target_link_libraries(${target} PUBLIC CUDA::cudart CUDA::cublas CUDA::cublasLt ${TESSERA_NCCL_LIBRARY})
  target_compile_definitions(${target} PUBLIC TESSERA_HAVE_CUDA=1)
endfunction()
