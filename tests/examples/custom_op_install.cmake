# Test: a program with its own element-wise op builds against the installed package and runs it.
# Configures examples/custom_op against the prefix the examples/install_package fixture installed, with
# find_package(tessera) (its CUDA source too when the package has CUDA and nvcc is found), builds it,
# and runs it:
#   MODE=cpu    "custom_op cpu": the model with the custom op, forward and backward on the CPU;
#   MODE=check  "custom_op check": on the CPU, then on the GPU against the CPU result (the op bit for
#               bit). Without a usable GPU the program says "no GPU", which ctest reports as skipped.
# Run by ctest as: cmake -DSOURCE_DIR=... -DPREFIX=... -DWORK_DIR=... -DCXX_COMPILER=... -DMODE=... -P this file.
foreach(var SOURCE_DIR PREFIX WORK_DIR CXX_COMPILER MODE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "custom_op_install: -D${var}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${PREFIX})
set(build ${WORK_DIR}/build)

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${what} failed (exit ${code}):\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

run_step("configuring custom_op" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/custom_op -B ${build}
  -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=Release)
set(configured "${step_output}")
run_step("building custom_op" ${CMAKE_COMMAND} --build ${build} -j2)
run_step("custom_op ${MODE}" ${build}/custom_op ${MODE})
set(output "${step_output}")
if(NOT output MATCHES "custom_op: CPU output sum -?[0-9.]+ input gradient sum -?[0-9.]+")
  message(FATAL_ERROR "custom_op ${MODE} printed no CPU result:\n${output}")
endif()
if(MODE STREQUAL "check")
  if(output MATCHES "no GPU")
    message(STATUS "custom_op: SKIPPED: no usable GPU\n${output}")
    return()
  endif()
  if(NOT configured MATCHES "with the GPU kernels")
    message(FATAL_ERROR "custom_op was configured without its GPU kernels although a GPU ran it:\n${configured}")
  endif()
  if(NOT output MATCHES "the GPU result matches the CPU's")
    message(FATAL_ERROR "custom_op check: the GPU result does not match the CPU's:\n${output}")
  endif()
endif()
message(STATUS "custom_op ${MODE}:\n${output}")
