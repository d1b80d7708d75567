# What the tests of outside programs (built against the installed package the examples/install_package
# fixture made) share; each includes this file.
#   outside_program_setup(TEST VAR...)  every -DVAR=... given (else fails naming TEST and VAR), WORK_DIR
#                                       emptied
#   run_step(WHAT COMMAND...)           runs COMMAND; fails naming WHAT with its output when it fails;
#                                       its standard output in `step_output`
#   build_outside_program(DIR)          configures DIR against PREFIX (with CXX_COMPILER, Release) into
#                                       WORK_DIR/build and builds it; `build` and `configured` (the
#                                       configure output) set in the caller

function(outside_program_setup test)
  foreach(var IN LISTS ARGN)
    if(NOT DEFINED ${var})
      message(FATAL_ERROR "${test}: -D${var}=... is required")
    endif()
  endforeach()
  file(REMOVE_RECURSE ${WORK_DIR})
endfunction()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${what} failed (exit ${code}):\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

function(build_outside_program dir)
  get_filename_component(name ${dir} NAME)
  set(build ${WORK_DIR}/build)
  run_step("configuring ${name}" ${CMAKE_COMMAND} -S ${dir} -B ${build} -DCMAKE_PREFIX_PATH=${PREFIX}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=Release)
  set(configured "${step_output}" PARENT_SCOPE)
  run_step("building ${name}" ${CMAKE_COMMAND} --build ${build} -j2)
  set(build ${build} PARENT_SCOPE)
endfunction()
