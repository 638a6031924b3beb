# Node-shared staging (data/shared_split.hpp, data/node_local_share.hpp) end to end: the split read
# once per job (the kernel's rchar) with 4 ranks as two virtual nodes; a shared-window directory or
# a stage_dir too small, a read-only stage_dir and a rank hanging in the exchange each end the job
# with one clear message; the equivalence test's node cases and the sharding contract at 4 ranks.
if(NOT TARGET scaletrain OR NOT TARGET st-synth)
  return()
endif()
set(_stg ${CMAKE_CURRENT_BINARY_DIR}/staging)
add_test(NAME staging_make_data
         COMMAND $<TARGET_FILE:st-synth> --shape 32,32,3 --train 16384 --test 512 -o ${_stg}-data.h5)
set_tests_properties(staging_make_data PROPERTIES FIXTURES_SETUP staging_data)
foreach(mode read_once shm_small dir_full dir_readonly hang)
  add_test(NAME staging_${mode}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/support/staging_check.sh ${mode} $<TARGET_FILE:scaletrain> ${_stg}-data.h5
                   ${_stg}/${mode} ${MPIEXEC_EXECUTABLE} ${_mpi_flags})
  set_tests_properties(staging_${mode} PROPERTIES FIXTURES_REQUIRED staging_data PROCESSORS 2 LABELS "data;mpi"
                       TIMEOUT 300 SKIP_RETURN_CODE 77)
endforeach()
set_tests_properties(staging_read_once PROPERTIES PASS_REGULAR_EXPRESSION "OK: the split was read once")

foreach(name mpitest_data_sharding mpitest_train_equivalence)
  if(TARGET ${name})
    set(_filter "*")
    if(name STREQUAL mpitest_train_equivalence)
      set(_filter "*node_ranks*:*/cpu_thread_lenet")
    endif()
    add_test(NAME ${name}_np4
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 4 ${_mpi_flags} $<TARGET_FILE:${name}>
                     --gtest_filter=${_filter})
    set_tests_properties(${name}_np4 PROPERTIES LABELS "data;mpi" TIMEOUT 600 PROCESSORS 2)
  endif()
endforeach()
