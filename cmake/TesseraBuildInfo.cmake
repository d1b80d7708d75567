# build_info_values.cpp (core/build_info.hpp): the build's options, known when it is configured, and
# the git revision, looked up again at every build so a rebuild after a commit reports the new one.
#
# Included from CMakeLists.txt after the layers: tessera_add_build_info() adds the generated source
# to tessera_core. Run as a script (cmake -P) it writes the source: -DSOURCE_DIR, -DTEMPLATE,
# -DOUTPUT and the configure-time values as -D definitions.
if(CMAKE_SCRIPT_MODE_FILE)
  find_package(Git QUIET)
  set(TESSERA_GIT_REVISION "unknown (not built from a git checkout)")
  if(GIT_FOUND)
    execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} rev-parse --short=12 HEAD
                    OUTPUT_VARIABLE revision RESULT_VARIABLE failed OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(NOT failed AND revision)
      set(TESSERA_GIT_REVISION "${revision}")
      execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} status --porcelain --untracked-files=no
                      OUTPUT_VARIABLE changes ERROR_QUIET)
      if(changes)
        string(APPEND TESSERA_GIT_REVISION " (modified)")
      endif()
    endif()
  else()
    set(TESSERA_GIT_REVISION "unknown (git was not found when it was built)")
  endif()
  configure_file(${TEMPLATE} ${OUTPUT}.new @ONLY)
  file(COPY_FILE ${OUTPUT}.new ${OUTPUT} ONLY_IF_DIFFERENT)
  file(REMOVE ${OUTPUT}.new)
  return()
endif()

function(tessera_add_build_info)
  set(output ${PROJECT_BINARY_DIR}/generated/build_info_values.cpp)
  string(TOUPPER "${CMAKE_BUILD_TYPE}" type)
  set(flags "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${type}}")
  if(TESSERA_NATIVE)
    string(APPEND flags " -march=native")
  endif()
  string(STRIP "${flags}" flags)
  string(REGEX REPLACE "  +" " " flags "${flags}")
  set(cuda false)
  set(toolkit "")
  set(nccl "")
  if(TESSERA_HAVE_CUDA)
    set(cuda true)
    set(toolkit "${CUDAToolkit_VERSION}")
    if(TESSERA_NCCL_INCLUDE_DIR AND EXISTS ${TESSERA_NCCL_INCLUDE_DIR}/nccl.h)
      file(STRINGS ${TESSERA_NCCL_INCLUDE_DIR}/nccl.h nccl_lines REGEX "#define NCCL_(MAJOR|MINOR|PATCH) ")
      foreach(part MAJOR MINOR PATCH)
        string(REGEX REPLACE ".*#define NCCL_${part} ([0-9]+).*" "\\1" nccl_${part} "${nccl_lines}")
      endforeach()
      set(nccl "${nccl_MAJOR}.${nccl_MINOR}.${nccl_PATCH}")
    endif()
  endif()
  set(cudnn "")
  if(TESSERA_HAVE_CUDNN AND EXISTS ${TESSERA_CUDNN_INCLUDE_DIR}/cudnn_version.h)
    file(STRINGS ${TESSERA_CUDNN_INCLUDE_DIR}/cudnn_version.h cudnn_lines REGEX "#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ")
    foreach(part MAJOR MINOR PATCHLEVEL)
      string(REGEX REPLACE ".*#define CUDNN_${part} ([0-9]+).*" "\\1" cudnn_${part} "${cudnn_lines}")
    endforeach()
    set(cudnn "${cudnn_MAJOR}.${cudnn_MINOR}.${cudnn_PATCHLEVEL}")
    if(EXISTS ${TESSERA_CUDNN_FRONTEND_INCLUDE_DIR}/../VERSION)
      file(STRINGS ${TESSERA_CUDNN_FRONTEND_INCLUDE_DIR}/../VERSION frontend_version LIMIT_COUNT 1)
      string(APPEND cudnn ", frontend ${frontend_version}")
    endif()
  endif()
  add_custom_target(tessera_build_info
    COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
            -DTEMPLATE=${PROJECT_SOURCE_DIR}/cmake/build_info_values.cpp.in -DOUTPUT=${output}
            "-DTESSERA_VERSION_TEXT=${PROJECT_VERSION}" "-DTESSERA_BUILD_TYPE_TEXT=${CMAKE_BUILD_TYPE}"
            "-DTESSERA_COMPILER_TEXT=${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}"
            "-DTESSERA_CXX_FLAGS_TEXT=${flags}" -DTESSERA_CUDA_BUILT=${cuda}
            "-DTESSERA_CUDA_TOOLKIT_TEXT=${toolkit}" "-DTESSERA_NCCL_TEXT=${nccl}" "-DTESSERA_CUDNN_TEXT=${cudnn}"
            -P ${PROJECT_SOURCE_DIR}/cmake/TesseraBuildInfo.cmake
    BYPRODUCTS ${output}
    COMMENT "Recording the git revision"
    VERBATIM)
  target_sources(tessera_core PRIVATE ${output})
  add_dependencies(tessera_core tessera_build_info)
endfunction()
