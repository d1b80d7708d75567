# Optional CUDA backend (cuBLAS, NCCL): TESSERA_CUDA=AUTO builds it when nvcc is found.
# Sources under */cuda/ and */nccl/ are compiled only here; a backend that is not built is not registered.
# NCCL is found in the CUDA toolkit, NVIDIA's packages (/usr), $NCCL_HOME and Python's nvidia-nccl-cu*
# wheel (whose library is libnccl.so.2 alone); without it the CUDA device is built without the NCCL
# communicator (TESSERA_HAVE_NCCL OFF), and says so.
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

# Where an NVIDIA library NAME may be: the CUDA toolkit, /usr (NVIDIA's packages), $HOME_VARIABLE and
# Python's wheel PYTHON_MODULE (nvidia.nccl, nvidia.cudnn). Sets NAME_library_dirs and NAME_include_dirs.
function(tessera_nvidia_search_dirs name home_variable python_module)
  set(roots ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR} /usr $ENV{${home_variable}})
  if(Python3_Interpreter_FOUND)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c "import ${python_module} as m; print(';'.join(m.__path__))"
      OUTPUT_VARIABLE wheel OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    list(APPEND roots ${wheel})
  endif()
  set(library_dirs ${CUDAToolkit_LIBRARY_DIR})
  set(include_dirs ${CUDAToolkit_INCLUDE_DIRS})
  foreach(root IN LISTS roots)
    list(APPEND library_dirs ${root}/lib64 ${root}/lib ${root}/lib/${CMAKE_LIBRARY_ARCHITECTURE})
    list(APPEND include_dirs ${root}/include ${root}/include/${CMAKE_LIBRARY_ARCHITECTURE})
  endforeach()
  set(${name}_library_dirs ${library_dirs} PARENT_SCOPE)
  set(${name}_include_dirs ${include_dirs} PARENT_SCOPE)
endfunction()

set(TESSERA_HAVE_NCCL OFF)
if(TESSERA_HAVE_CUDA)
  find_package(Python3 QUIET COMPONENTS Interpreter)
  tessera_nvidia_search_dirs(nccl NCCL_HOME nvidia.nccl)
  find_library(TESSERA_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${nccl_library_dirs})
  find_path(TESSERA_NCCL_INCLUDE_DIR nccl.h HINTS ${nccl_include_dirs})
  if(TESSERA_NCCL_LIBRARY AND TESSERA_NCCL_INCLUDE_DIR)
    set(TESSERA_HAVE_NCCL ON)
    message(STATUS "Tessera NCCL: ${TESSERA_NCCL_LIBRARY}")
  else()
    list(REMOVE_DUPLICATES nccl_library_dirs)
    message(WARNING "NCCL not found (libnccl.so or libnccl.so.2 and nccl.h in ${nccl_library_dirs} and "
      "${nccl_include_dirs}): the CUDA backend is built without the NCCL communicator; GPU collectives then "
      "go through MPI on buffers staged in pinned host memory (--comm mpi), and --comm nccl is refused. Set "
      "TESSERA_NCCL_LIBRARY and TESSERA_NCCL_INCLUDE_DIR, or NCCL_HOME, to build it.")
  endif()
endif()

# cuDNN (fused attention): the library and cudnn.h from the CUDA toolkit, NVIDIA's packages (/usr) or
# Python's nvidia-cudnn-cu* wheel, and the header-only C++ frontend (cudnn_frontend.h) from the
# nvidia-cudnn-frontend wheel, which scripts/setup unpacks into .cache/cudnn-frontend. Without either,
# attention on the GPU runs the tiled kernel alone (TESSERA_HAVE_CUDNN OFF), and says so.
set(TESSERA_HAVE_CUDNN OFF)
if(TESSERA_HAVE_CUDA)
  tessera_nvidia_search_dirs(cudnn CUDNN_HOME nvidia.cudnn)
  find_library(TESSERA_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 HINTS ${cudnn_library_dirs})
  find_path(TESSERA_CUDNN_INCLUDE_DIR cudnn.h HINTS ${cudnn_include_dirs})
  find_path(TESSERA_CUDNN_FRONTEND_INCLUDE_DIR cudnn_frontend.h
    HINTS ${PROJECT_SOURCE_DIR}/.cache/cudnn-frontend/include $ENV{CUDNN_FRONTEND_HOME}/include)
  if(TESSERA_CUDNN_LIBRARY AND TESSERA_CUDNN_INCLUDE_DIR AND TESSERA_CUDNN_FRONTEND_INCLUDE_DIR)
    set(TESSERA_HAVE_CUDNN ON)
    message(STATUS "Tessera cuDNN: ${TESSERA_CUDNN_LIBRARY}, frontend ${TESSERA_CUDNN_FRONTEND_INCLUDE_DIR}")
  else()
    message(WARNING "cuDNN or its C++ frontend not found (library ${TESSERA_CUDNN_LIBRARY}, cudnn.h "
      "${TESSERA_CUDNN_INCLUDE_DIR}, cudnn_frontend.h ${TESSERA_CUDNN_FRONTEND_INCLUDE_DIR}): GPU attention "
      "runs the tiled kernel only. scripts/setup unpacks the frontend (scripts/fetch-cudnn-frontend); set "
      "CUDNN_HOME for the library.")
  endif()
endif()

# The backends' sources join their layers: runtime/cuda/ (device, kernels, cuBLAS) the runtime layer,
# comm/nccl/ (the NCCL communicator) the comm layer.
function(tessera_add_cuda_backend)
  if(NOT TESSERA_HAVE_CUDA)
    return()
  endif()
  set(layer_backends runtime:cuda)
  if(TESSERA_HAVE_NCCL)
    list(APPEND layer_backends comm:nccl)
  endif()
  foreach(layer_backend IN LISTS layer_backends)
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
    if(NOT TESSERA_HAVE_CUDNN)
      list(FILTER backend_sources EXCLUDE REGEX "/cuda/cudnn/")
    endif()
    target_sources(${target} PRIVATE ${backend_sources})
  endforeach()
  target_link_libraries(tessera_runtime PUBLIC CUDA::cudart CUDA::cublas CUDA::cublasLt)
  # Only the two files that register the backends see TESSERA_HAVE_CUDA, so turning the backend on or
  # off recompiles them and the CUDA sources, not every layer above the runtime.
  set_source_files_properties(${PROJECT_SOURCE_DIR}/runtime/device_registry.cpp PROPERTIES
    COMPILE_DEFINITIONS TESSERA_HAVE_CUDA=1)
  if(TESSERA_HAVE_CUDNN)
    # Only the CUDA kernels' table sees TESSERA_HAVE_CUDNN (and the cuDNN sources the frontend).
    set_source_files_properties(${PROJECT_SOURCE_DIR}/runtime/cuda/cuda_kernels.cpp PROPERTIES
      COMPILE_DEFINITIONS TESSERA_HAVE_CUDNN=1)
    target_include_directories(tessera_runtime PRIVATE ${TESSERA_CUDNN_INCLUDE_DIR})
    # The frontend as a system header: its own warnings are not ours.
    set_source_files_properties(${PROJECT_SOURCE_DIR}/runtime/cuda/cudnn/cudnn_attention.cpp PROPERTIES
      COMPILE_OPTIONS "-isystem;${TESSERA_CUDNN_FRONTEND_INCLUDE_DIR}")
    # NVRTC: the frontend compiles some of its engines at run time.
    target_link_libraries(tessera_runtime PUBLIC ${TESSERA_CUDNN_LIBRARY} CUDA::nvrtc)
  endif()
  set(comm_definitions TESSERA_HAVE_CUDA=1)
  if(TESSERA_HAVE_NCCL)
    list(APPEND comm_definitions TESSERA_HAVE_NCCL=1)
  endif()
  set_source_files_properties(${PROJECT_SOURCE_DIR}/comm/device_communicator.cpp PROPERTIES
    COMPILE_DEFINITIONS "${comm_definitions}")
  if(TESSERA_HAVE_NCCL)
    # PUBLIC: comm/nccl/nccl_communicator.hpp includes nccl.h.
    target_include_directories(tessera_comm PUBLIC ${TESSERA_NCCL_INCLUDE_DIR})
  endif()
endfunction()

# What the umbrella library carries for its users in a build with CUDA.
function(tessera_link_cuda_libraries target)
  if(NOT TESSERA_HAVE_CUDA)
    return()
  endif()
  target_link_libraries(${target} PUBLIC CUDA::cudart CUDA::cublas CUDA::cublasLt)
  target_compile_definitions(${target} PUBLIC TESSERA_HAVE_CUDA=1)
  if(TESSERA_HAVE_CUDNN)
    target_link_libraries(${target} PUBLIC ${TESSERA_CUDNN_LIBRARY} CUDA::nvrtc)
    target_compile_definitions(${target} PUBLIC TESSERA_HAVE_CUDNN=1)
  endif()
  if(TESSERA_HAVE_NCCL)
    target_include_directories(${target} PUBLIC ${TESSERA_NCCL_INCLUDE_DIR})
    target_link_libraries(${target} PUBLIC ${TESSERA_NCCL_LIBRARY})
    target_compile_definitions(${target} PUBLIC TESSERA_HAVE_NCCL=1)
  endif()
endfunction()
