# Test: a program with its own element-wise op builds against the installed package and runs it.
# Configures examples/custom_op against the prefix the examples/install_package fixture installed, with
# find_package(tessera) (its CUDA source too when the package has CUDA and nvcc is found), builds it,
# and runs it:
#   MODE=cpu    "custom_op cpu": the model with the custom op, forward and backward on the CPU;
#   MODE=check  "custom_op check": on the CPU, then on the GPU against the CPU result (the op bit for
#               bit). Without a usable GPU the program says "no GPU", which ctest reports as skipped.
# Run by ctest as: cmake -DSOURCE_DIR=... -DPREFIX=... -DWORK_DIR=... -DCXX_COMPILER=... -DMODE=... -P this file.
include(${CMAKE_CURRENT_LIST_DIR}/outside_program.cmake)
outside_program_setup(custom_op_install SOURCE_DIR PREFIX WORK_DIR CXX_COMPILER MODE)
build_outside_program(${SOURCE_DIR}/examples/custom_op)
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
