# Test: an outside program with its own model and loss on the installed package. Configures
# examples/embed_regression against the prefix the examples/install_package fixture installed, builds
# it, and runs it (a regression network of Sequential modules, MeanSquaredError through TrainingRun,
# global batch 16 in micro-batches of 2: accumulation 4 on 2 ranks, 8 on 1):
#   * every run's plan of its own model equals the engine's measured step on the CPU, to the byte;
#   * ZeRO-0 and ZeRO-1 on 2 ranks log bit-identical losses, and ZeRO-3 the same to the rounding of
#     its summation order (stages 2-3 reduce each micro-batch, then add; 0-1 add, then reduce);
#   * the loss falls;
#   * a ZeRO-3 run of 6 steps on 2 ranks, resumed on 1 rank (ZeRO-0, the global batch kept), says
#     "resumed at step 6" and continues the 12-step curve.
# Run by ctest as: cmake -DSOURCE_DIR=... -DPREFIX=... -DWORK_DIR=... -DMPIEXEC=... -DCXX_COMPILER=... -P this file.
include(${CMAKE_CURRENT_LIST_DIR}/outside_program.cmake)
outside_program_setup(embed_regression_install SOURCE_DIR PREFIX WORK_DIR MPIEXEC CXX_COMPILER)
build_outside_program(${SOURCE_DIR}/examples/embed_regression)

# The losses "step S loss L" of `output`, S from `first` to `last`, as a list of L.
function(losses_of output first last result)
  set(values "")
  foreach(s RANGE ${first} ${last})
    if(NOT output MATCHES "step ${s} loss ([-0-9.e+]+)")
      message(FATAL_ERROR "no loss of step ${s} in:\n${output}")
    endif()
    list(APPEND values ${CMAKE_MATCH_1})
  endforeach()
  set(${result} "${values}" PARENT_SCOPE)
endfunction()

# Each |a - b| <= tolerance * |b| (CMake's math is integer: compared in millionths).
function(expect_close what a_list b_list tolerance_millionths)
  foreach(a b IN ZIP_LISTS a_list b_list)
    execute_process(COMMAND awk -v a=${a} -v b=${b} -v t=${tolerance_millionths}
                            "BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; exit (d * 1e6 <= t * m) ? 0 : 1 }"
                    RESULT_VARIABLE far)
    if(far)
      message(FATAL_ERROR "${what}: ${a} vs ${b} differ by more than ${tolerance_millionths}e-6 relative\n${a_list}\nvs\n${b_list}")
    endif()
  endforeach()
endfunction()

function(expect_plan_equal what output)
  if(NOT output MATCHES "plan equals the measured step")
    message(FATAL_ERROR "${what}: the plan of the program's model differs from its measured step:\n${output}")
  endif()
endfunction()

set(launch2 ${MPIEXEC} --oversubscribe -np 2 ${build}/embed_regression)
set(launch1 ${MPIEXEC} --oversubscribe -np 1 ${build}/embed_regression)
# Three independent runs at once (directories of their own): ZeRO-0, ZeRO-1 and the first half of the
# ZeRO-3 run; the first two write to files, the last to the pipe nobody reads.
execute_process(COMMAND sh -c "exec \"$@\" > '${WORK_DIR}/zero0.log' 2>&1" sh ${launch2} ${WORK_DIR}/zero0 12 0
                COMMAND sh -c "exec \"$@\" > '${WORK_DIR}/zero1.log' 2>&1" sh ${launch2} ${WORK_DIR}/zero1 12 1
                COMMAND ${launch2} ${WORK_DIR}/zero3 6 3
                RESULTS_VARIABLE codes OUTPUT_VARIABLE zero3 ERROR_VARIABLE err)
file(READ ${WORK_DIR}/zero0.log zero0)
file(READ ${WORK_DIR}/zero1.log zero1)
foreach(i name IN ZIP_LISTS "0;1;2" "zero0;zero1;zero3")
  list(GET codes ${i} code)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "the ${name} run failed (exit ${code}):\n${${name}}\n${err}")
  endif()
  expect_plan_equal(${name} "${${name}}")
endforeach()
run_step("the ZeRO-3 run resumed on 1 rank" ${launch1} ${WORK_DIR}/zero3 12 0)
set(resumed "${step_output}")
expect_plan_equal("the resumed run" "${resumed}")
if(NOT resumed MATCHES "resumed at step 6\nstep 6 loss" OR resumed MATCHES "step 5 loss")
  message(FATAL_ERROR "the 1-rank run did not continue from the step-6 checkpoint:\n${resumed}")
endif()

losses_of("${zero0}" 0 11 zero0_losses)
losses_of("${zero1}" 0 11 zero1_losses)
losses_of("${zero3}" 0 5 zero3_losses)
losses_of("${resumed}" 6 11 resumed_losses)
if(NOT zero0_losses STREQUAL zero1_losses)
  message(FATAL_ERROR "ZeRO-0 and ZeRO-1 logged other losses:\n${zero0_losses}\nvs\n${zero1_losses}")
endif()
list(SUBLIST zero0_losses 0 6 zero0_first)
list(SUBLIST zero0_losses 6 6 zero0_second)
expect_close("ZeRO-3 against ZeRO-0" "${zero3_losses}" "${zero0_first}" 10)
expect_close("the 1-rank resume against the 2-rank run" "${resumed_losses}" "${zero0_second}" 100)
list(GET zero0_losses 0 first_loss)
list(GET zero0_losses 11 last_loss)
execute_process(COMMAND awk -v a=${last_loss} -v b=${first_loss} "BEGIN { exit (a < 0.5 * b) ? 0 : 1 }"
                RESULT_VARIABLE not_fallen)
if(not_fallen)
  message(FATAL_ERROR "the loss did not halve over 12 steps (${first_loss} -> ${last_loss}):\n${zero0}")
endif()
message(STATUS "embed_regression: plan = measured step in every run; MSE ${first_loss} -> ${last_loss}; ZeRO-0 = ZeRO-1 bit for bit, ZeRO-3 within 1e-5; resumed on 1 rank within 1e-4")
