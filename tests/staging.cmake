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

# Through the app: data.shuffle = node trains from each node's share (two virtual nodes) and says
# what it changes; the keys' misuse and a split over the node's budget are refused before reading.
set(_st $<TARGET_FILE:scaletrain>)
set(_st_run ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${_mpi_flags} ${_st} --data.path ${_stg}-data.h5
            --train.batch 64 --train.max_steps 4 --run.threads 1)
set(_stg_fail ${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.sh 120)
add_test(NAME staging_node_shuffle_trains_np2
         COMMAND ${_st_run} --data.node_ranks 1
                 --data.stage_dir ${CMAKE_CURRENT_BINARY_DIR} --data.shuffle node --train.epochs 1)
set_tests_properties(staging_node_shuffle_trains_np2 PROPERTIES
  PASS_REGULAR_EXPRESSION "data.shuffle = node: each node shuffles only its own share.*epoch 1 done in .*eval loss")
add_test(NAME staging_node_shuffle_needs_stage_dir
         COMMAND ${_stg_fail} "data.shuffle = node stages each node's share in data.stage_dir: set data.stage_dir"
                 -- ${_st_run} --data.shuffle node)
add_test(NAME staging_stage_dir_needs_node_shuffle
         COMMAND ${_stg_fail} "data.stage_dir holds each node's share, shuffled within the node: set data.shuffle = node"
                 -- ${_st_run} --data.stage_dir ${CMAKE_CURRENT_BINARY_DIR})
add_test(NAME staging_split_over_budget
         COMMAND ${_stg_fail} "(16384 samples, 50.4 MB) does not fit the node's staging budget of 10.0 MB (data.stage_memory_gb): stage each node's share on local disk with data.stage_dir = DIR and data.shuffle = node"
                 -- ${_st_run} --data.stage_memory_gb 0.01)
set_tests_properties(staging_node_shuffle_trains_np2 staging_node_shuffle_needs_stage_dir
                     staging_stage_dir_needs_node_shuffle staging_split_over_budget
                     PROPERTIES FIXTURES_REQUIRED staging_data PROCESSORS 2 LABELS "data;mpi;app" TIMEOUT 180)
