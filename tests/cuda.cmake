# The CUDA backend's tests, registered in the cuda build only (SCALETRAIN_ENABLE_CUDA):
#   tests/cuda/cudatest_*.cpp  one binary (scaletrain_cudatests), one test per file (its suites). The GPU
#       tests (labels cuda, gpu) skip every test when cudaGetDeviceCount finds no device, and CTest
#       reports them Skipped, not Passed.
#       cudatest_versions and cudatest_startup need no GPU: they run everywhere (label cuda).
#   cuda_elf_sm80_sm90         scaletrain carries SASS for sm_80 and sm_90 (cuobjdump --list-elf).
#   cuda_ldd_resolves          ldd -r resolves every symbol of scaletrain and of every libcudnn*.so.9.
#   cuda_vs_cpu_<model>_<prec> a 1-rank run on cuda against cpu, per-step losses within a tolerance
#       (support/cuda_vs_cpu_losses.sh; labels cuda, gpu: Skipped without a device).
# cuda_test_targets builds all of them (the cuda-ci build preset).
if(SCALETRAIN_ENABLE_CUDA)
  # One binary holds every suite (the GPU kit packs it); each source file stays one CTest test, which
  # runs that file's suites through --gtest_filter.
  file(GLOB _cuda_test_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cuda/cudatest_*.cpp)
  add_executable(scaletrain_cudatests ${_cuda_test_srcs})
  target_link_libraries(scaletrain_cudatests PRIVATE scaletrain_nn scaletrain_data scaletrain_backend
                                                     scaletrain_test_main scaletrain_warnings)
  target_include_directories(scaletrain_cudatests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  set(_cuda_test_targets scaletrain_cudatests)
  foreach(src IN LISTS _cuda_test_srcs)
    get_filename_component(name ${src} NAME_WE)
    file(STRINGS ${src} _test_lines REGEX "^(TEST|TEST_F|TYPED_TEST|TEST_P)\\([A-Za-z0-9_]+,")
    set(_suites "")
    foreach(line IN LISTS _test_lines)
      string(REGEX REPLACE "^[A-Z_]+\\(([A-Za-z0-9_]+),.*$" "\\1" suite "${line}")
      # Typed suites run as Suite/0.Test, value-parameterized ones as Prefix/Suite.Test/0.
      list(APPEND _suites "${suite}.*" "${suite}/*" "*/${suite}.*")
    endforeach()
    list(REMOVE_DUPLICATES _suites)
    list(JOIN _suites ":" _filter)
    add_test(NAME ${name} COMMAND scaletrain_cudatests --gtest_filter=${_filter})
    # A filter that matches nothing would pass without running anything.
    set_tests_properties(${name} PROPERTIES FAIL_REGULAR_EXPRESSION "Running 0 tests from")
    if(name MATCHES "^cudatest_(versions|startup)$")
      set_tests_properties(${name} PROPERTIES LABELS cuda TIMEOUT 60)
    else()
      # The fixture's skip message (tests/cuda/cuda_test_support.hpp): only a test binary that found
      # no device reports Skipped; on a GPU a failure is a failure, whatever else skipped.
      set_tests_properties(${name} PROPERTIES LABELS "cuda;gpu" TIMEOUT 300
                           SKIP_REGULAR_EXPRESSION "no CUDA device on this machine \\(cudaGetDeviceCount\\)")
      # A node that refuses profiling (CUPTI's privileges, another profiler attached) skips too.
      if(name STREQUAL "cudatest_cupti_kernel_trace")
        set_property(TEST ${name} APPEND PROPERTY SKIP_REGULAR_EXPRESSION "CUPTI unavailable: ")
      endif()
    endif()
  endforeach()
  add_custom_target(cuda_test_targets DEPENDS ${_cuda_test_targets})

  if(TARGET scaletrain)
    get_filename_component(_nvcc_dir "${CMAKE_CUDA_COMPILER}" DIRECTORY)
    add_test(NAME cuda_elf_sm80_sm90
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/support/check_cuda_elf.sh ${_nvcc_dir}/cuobjdump
                     $<TARGET_FILE:scaletrain> 80 90)
    get_filename_component(_cudnn_dir "${SCALETRAIN_CUDNN_LIBRARY}" DIRECTORY)
    add_test(NAME cuda_ldd_resolves
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/support/check_ldd.sh ${_cudnn_dir} $<TARGET_FILE:scaletrain>)
    set_tests_properties(cuda_elf_sm80_sm90 cuda_ldd_resolves PROPERTIES LABELS cuda TIMEOUT 120)

    # A 1-rank training run end to end on cuda against cpu: per-step losses of lenet, fmnist_sepcnn and
    # mobilenet_v2 (its stem at stride 1 on the 28x28 data) over 50 steps within a tolerance, in fp32
    # (TF32 off) and bf16.
    foreach(model lenet fmnist_sepcnn mobilenet_v2)
      set(_extra)
      if(model STREQUAL mobilenet_v2)
        set(_extra --model.stem_stride 1)
      endif()
      foreach(prec_tol fp32:1e-3 bf16:3e-2)
        string(REPLACE ":" ";" _pt ${prec_tol})
        list(GET _pt 0 _prec)
        list(GET _pt 1 _tol)
        add_test(NAME cuda_vs_cpu_${model}_${_prec}
                 COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/support/cuda_vs_cpu_losses.sh $<TARGET_FILE:scaletrain>
                         ${MPIEXEC_EXECUTABLE} ${_mpi_flags} -- ${CMAKE_CURRENT_BINARY_DIR}/cuda_vs_cpu/${model}_${_prec}
                         ${model} ${_prec} ${_tol} ${_extra})
        set_tests_properties(cuda_vs_cpu_${model}_${_prec} PROPERTIES LABELS "cuda;gpu" TIMEOUT 600
                             SKIP_REGULAR_EXPRESSION "no CUDA device on this machine \\(cudaGetDeviceCount\\)")
      endforeach()
    endforeach()
  endif()
endif()
