# The start-up binding check (train/binding_check.hpp) on real ranks: two ranks pinned to one core
# are warned about with their masks, two ranks on separate cores are not, and a rank running more
# compute threads than its cores is named. taskset sets each rank's mask, so the tests do not depend
# on mpirun's binding policy. Label: binding.
if(TARGET scaletrain)
  set(_bind_mpirun ${MPIEXEC_EXECUTABLE} ${_mpi_flags} --bind-to none)
  set(_bind_expect ${CMAKE_CURRENT_SOURCE_DIR}/support/expect_output.sh 120)
  set(_bind_run $<TARGET_FILE:scaletrain> --config ${PROJECT_SOURCE_DIR}/jobs/configs/lenet_synthetic.toml
                --train.max_steps 4 --train.evaluate false)

  add_test(NAME binding_two_ranks_on_one_core_warn
           COMMAND ${_bind_expect} --has "warning: ranks 0 and 1 on host .* share cores \\(rank 0: 0, rank 1: 0\\)"
                   --has "bind each rank to cores of its own: srun --cpu-bind=cores"
                   -- ${_bind_mpirun} -np 2 taskset -c 0 ${_bind_run})
  add_test(NAME binding_too_many_threads_warn
           COMMAND ${_bind_expect} --has "warning: rank 0 on host .* runs 3 compute threads on 1 core \\(mask 0\\)"
                   --lacks "share cores" -- taskset -c 0 ${_bind_run} --run.threads 3)
  set_tests_properties(binding_two_ranks_on_one_core_warn binding_too_many_threads_warn PROPERTIES
                       LABELS "binding;app" PROCESSORS 1 TIMEOUT 150)

  cmake_host_system_information(RESULT _bind_cpus QUERY NUMBER_OF_LOGICAL_CORES)
  if(_bind_cpus GREATER_EQUAL 2)
    # Rank r on CPU r.
    add_test(NAME binding_two_ranks_on_separate_cores_quiet
             COMMAND ${_bind_expect} --lacks "warning" --has "summary: .* samples/s"
                     -- ${_bind_mpirun} -np 2 sh -c "exec taskset -c \"\$OMPI_COMM_WORLD_RANK\" \"\$@\"" taskset_rank
                        ${_bind_run})
    set_tests_properties(binding_two_ranks_on_separate_cores_quiet PROPERTIES LABELS "binding;app" PROCESSORS 2
                         TIMEOUT 150)
  endif()
endif()
