# Finds every third-party dependency Tessera links: MPI, OpenMP, OpenBLAS (CBLAS), HDF5,
# Boost.Program_options and Boost.CRC, nlohmann-json, xxHash, liburing, ICU, Protocol Buffers (protoc and
# libprotobuf: TensorBoard's event files) and (for tests) GoogleTest. Each is a Debian package; scripts/setup installs them.
find_package(MPI REQUIRED COMPONENTS CXX)
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(Boost REQUIRED COMPONENTS program_options)  # and header-only Boost.CRC (Boost::headers)
find_package(PkgConfig REQUIRED)
# xxHash: the checkpoint's per-chunk checksums.
pkg_check_modules(TESSERA_XXHASH REQUIRED IMPORTED_TARGET libxxhash)
# liburing: asynchronous reads and writes of NVMe-offloaded state.
pkg_check_modules(TESSERA_URING REQUIRED IMPORTED_TARGET liburing)
# nlohmann-json: safetensors headers, config.json, vocab.json of BPE tokenizers.
find_package(nlohmann_json 3 REQUIRED)
# ICU: Unicode letter and number classes of GPT-2's pre-tokenization.
pkg_check_modules(TESSERA_ICU REQUIRED IMPORTED_TARGET icu-uc)
# Protocol Buffers: the TensorBoard event records (training/tensorboard_event.proto), compiled by protoc.
find_package(Protobuf REQUIRED)
if(NOT Protobuf_PROTOC_EXECUTABLE)
  message(FATAL_ERROR "protoc not found: install protobuf-compiler (scripts/setup does)")
endif()

# OpenBLAS: prefer the OpenMP build, so a GEMM called inside an OpenMP region runs on the calling
# thread instead of starting its own pool (attention issues one small GEMM per head in parallel).
find_path(TESSERA_CBLAS_INCLUDE_DIR cblas.h
  HINTS /usr/include/x86_64-linux-gnu/openblas-openmp /usr/include/aarch64-linux-gnu/openblas-openmp
        /usr/include/openblas
  NO_DEFAULT_PATH)
find_path(TESSERA_CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas)
find_library(TESSERA_OPENBLAS_LIBRARY openblas
  HINTS /usr/lib/x86_64-linux-gnu/openblas-openmp /usr/lib/aarch64-linux-gnu/openblas-openmp
  NO_DEFAULT_PATH)
find_library(TESSERA_OPENBLAS_LIBRARY openblas)
if(NOT TESSERA_CBLAS_INCLUDE_DIR OR NOT TESSERA_OPENBLAS_LIBRARY)
  message(FATAL_ERROR "OpenBLAS with cblas.h not found: install libopenblas-openmp-dev (scripts/setup does)")
endif()
message(STATUS "OpenBLAS: ${TESSERA_OPENBLAS_LIBRARY} (cblas.h in ${TESSERA_CBLAS_INCLUDE_DIR})")
add_library(tessera_openblas INTERFACE)
target_include_directories(tessera_openblas INTERFACE ${TESSERA_CBLAS_INCLUDE_DIR})
target_link_libraries(tessera_openblas INTERFACE ${TESSERA_OPENBLAS_LIBRARY})
get_filename_component(TESSERA_OPENBLAS_DIR ${TESSERA_OPENBLAS_LIBRARY} DIRECTORY)
# The OpenMP build shares its soname with the default pthread build: pin it by rpath.
set(CMAKE_BUILD_RPATH ${TESSERA_OPENBLAS_DIR})
set(CMAKE_INSTALL_RPATH ${TESSERA_OPENBLAS_DIR})

if(TESSERA_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
