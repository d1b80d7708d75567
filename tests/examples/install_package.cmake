# Test fixture: installs the build tree into a fresh prefix, once, for the tests of outside programs
# built against the installed package (embed_minimal, embed_regression, custom_op), and checks its
# layout: the installed headers are named tessera/<layer>/..., no bare layer folder (runtime/, core/)
# reaches a consumer's include path, and the exported target carries no -march flag.
# Run by ctest as: cmake -DBUILD_DIR=... -DPREFIX=... -P this file.
foreach(var BUILD_DIR PREFIX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_package: -D${var}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (exit ${code}):\n${out}\n${err}")
endif()
foreach(file include/tessera/tessera.hpp include/tessera/sharding/sharded_engine.hpp include/tessera/run/training_run.hpp
             include/tessera/runtime/elementwise_map.hpp include/tessera/model/modules/sequential.hpp
             include/tessera/training/losses/mean_squared_error.hpp include/tessera/planning/memory_plan.hpp
             lib/cmake/tessera/tesseraConfig.cmake lib/cmake/tessera/tesseraConfigVersion.cmake)
  if(NOT EXISTS ${PREFIX}/${file})
    message(FATAL_ERROR "cmake --install did not install ${file} under ${PREFIX}")
  endif()
endforeach()
foreach(bare core runtime sharding)
  if(EXISTS ${PREFIX}/include/${bare})
    message(FATAL_ERROR "cmake --install put a bare ${bare}/ folder under ${PREFIX}/include")
  endif()
endforeach()
file(READ ${PREFIX}/lib/cmake/tessera/tesseraTargets.cmake targets)
if(targets MATCHES "march=")
  message(FATAL_ERROR "the exported tessera::tessera carries a -march flag:\n${targets}")
endif()
if(targets MATCHES "include/tessera[;\"]")
  message(FATAL_ERROR "the exported tessera::tessera puts include/tessera itself on the include path:\n${targets}")
endif()
message(STATUS "installed into ${PREFIX}")
