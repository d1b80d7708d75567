# Test: the installed package works for an outside program. Configures examples/embed_minimal
# against the prefix the examples/install_package fixture installed, with find_package(tessera),
# builds it, and runs it at 2 ranks:
#   * a fresh 10-step run: its loss at step 9 is below its loss at step 0;
#   * the same directory started again for 15 steps: it says "resumed at step 10", runs steps
#     10..14 only, and logs exactly the losses of an uninterrupted 15-step run in another directory
#     (the checkpoint restored the parameters and optimizer state, not just the step counter);
#   * the metrics file the library's training loop writes in the run directory holds, after both
#     runs, one record of each of the 15 steps in order, beside its two plots.
# Run by ctest as: cmake -DSOURCE_DIR=... -DPREFIX=... -DWORK_DIR=... -DMPIEXEC=... -P this file.
include(${CMAKE_CURRENT_LIST_DIR}/outside_program.cmake)
outside_program_setup(embed_minimal_install SOURCE_DIR PREFIX WORK_DIR MPIEXEC CXX_COMPILER)
build_outside_program(${SOURCE_DIR}/examples/embed_minimal)

set(launch ${MPIEXEC} --oversubscribe -np 2 ${build}/embed_minimal)
# The uninterrupted run needs neither of the others (a directory of its own): it runs beside the
# fresh one. execute_process starts its two commands at once, joined by a pipe that the first
# writes nothing to (its output goes to a file) and the second does not read.
set(reference_log ${WORK_DIR}/reference.log)
execute_process(COMMAND sh -c "exec \"$@\" > '${reference_log}' 2>&1" sh ${launch} ${WORK_DIR}/reference 15
                COMMAND ${launch} ${WORK_DIR}/run 10
                RESULTS_VARIABLE codes OUTPUT_VARIABLE fresh ERROR_VARIABLE err)
list(GET codes 0 reference_code)
list(GET codes 1 fresh_code)
if(NOT fresh_code EQUAL 0)
  message(FATAL_ERROR "fresh run failed (exit ${fresh_code}):\n${fresh}\n${err}")
endif()
file(READ ${reference_log} reference)
if(NOT reference_code EQUAL 0)
  message(FATAL_ERROR "uninterrupted run failed (exit ${reference_code}):\n${reference}")
endif()
run_step("resumed run" ${launch} ${WORK_DIR}/run 15)
set(resumed "${step_output}")

string(REGEX MATCH "step 0 loss ([0-9.]+)" _ "${fresh}")
set(first_loss ${CMAKE_MATCH_1})
string(REGEX MATCH "step 9 loss ([0-9.]+)" _ "${fresh}")
set(last_loss ${CMAKE_MATCH_1})
if(first_loss STREQUAL "" OR last_loss STREQUAL "" OR NOT last_loss LESS first_loss)
  message(FATAL_ERROR "the loss did not fall over 10 steps (step 0: '${first_loss}', step 9: '${last_loss}'):\n${fresh}")
endif()
if(fresh MATCHES "resumed" OR NOT resumed MATCHES "^resumed at step 10\nstep 10 loss" OR resumed MATCHES "step 9 ")
  message(FATAL_ERROR "the second run did not continue from the step-10 checkpoint:\n${resumed}")
endif()
string(REGEX MATCHALL "step 1[0-4] loss [0-9.]+" resumed_losses "${resumed}")
string(REGEX MATCHALL "step 1[0-4] loss [0-9.]+" reference_losses "${reference}")
list(LENGTH resumed_losses count)
if(NOT count EQUAL 5 OR NOT resumed_losses STREQUAL reference_losses)
  message(FATAL_ERROR "resumed losses differ from the uninterrupted run's:\n${resumed_losses}\nvs\n${reference_losses}")
endif()
foreach(file metrics.jsonl metrics.loss.svg metrics.throughput.svg)
  if(NOT EXISTS ${WORK_DIR}/run/${file})
    message(FATAL_ERROR "the runs wrote no ${WORK_DIR}/run/${file}")
  endif()
endforeach()
file(STRINGS ${WORK_DIR}/run/metrics.jsonl records REGEX "\"kind\":\"train\"")
set(steps_recorded "")
foreach(record IN LISTS records)
  string(REGEX MATCH "\"step\":([0-9]+)" _ "${record}")
  list(APPEND steps_recorded ${CMAKE_MATCH_1})
endforeach()
if(NOT steps_recorded STREQUAL "1;2;3;4;5;6;7;8;9;10;11;12;13;14;15")
  message(FATAL_ERROR "the run's metrics file records the steps '${steps_recorded}', not 1..15 once each")
endif()
message(STATUS "embed_minimal: loss ${first_loss} -> ${last_loss}; resumed at step 10 with the uninterrupted run's losses; metrics of steps 1..15")
