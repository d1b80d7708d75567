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

# "MAJOR.MINOR.PATCH" from the three #defines of a library's header into OUT ("" without the header).
function(tessera_header_version out header major minor patch)
  set(version "")
  if(EXISTS ${header})
    file(STRINGS ${header} lines REGEX "#define (${major}|${minor}|${patch}) ")
    foreach(part ${major} ${minor} ${patch})
      string(REGEX REPLACE ".*#define ${part} ([0-9]+).*" "\\1" number "${lines}")
      list(APPEND numbers ${number})
    endforeach()
    list(JOIN numbers "." version)
  endif()
  set(${out} "${version}" PARENT_SCOPE)
endfunction()

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
    if(TESSERA_NCCL_INCLUDE_DIR)
      tessera_header_version(nccl ${TESSERA_NCCL_INCLUDE_DIR}/nccl.h NCCL_MAJOR NCCL_MINOR NCCL_PATCH)
    endif()
  endif()
  set(cudnn "")
  if(TESSERA_HAVE_CUDNN)
    tessera_header_version(cudnn ${TESSERA_CUDNN_INCLUDE_DIR}/cudnn_version.h CUDNN_MAJOR CUDNN_MINOR
      CUDNN_PATCHLEVEL)
    if(cudnn AND EXISTS ${TESSERA_CUDNN_FRONTEND_INCLUDE_DIR}/../VERSION)
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
