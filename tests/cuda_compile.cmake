# CI step: every kernels/ functor must compile as CUDA device code (sm_80 and sm_90). Runs nvcc
# on tests/cuda/kernels_device_compile.cu; needs the CUDA toolkit, not a GPU.
find_program(SCALETRAIN_NVCC nvcc HINTS /usr/local/cuda/bin ENV CUDA_HOME PATH_SUFFIXES bin)
if(SCALETRAIN_NVCC)
  foreach(arch 80 90)
    add_test(NAME cuda_kernels_device_compile_sm${arch}
             COMMAND ${SCALETRAIN_NVCC} -std=c++20 -arch=sm_${arch} --expt-relaxed-constexpr -Werror all-warnings
                     -I${PROJECT_SOURCE_DIR}/include -c ${CMAKE_CURRENT_SOURCE_DIR}/cuda/kernels_device_compile.cu
                     -o ${CMAKE_CURRENT_BINARY_DIR}/kernels_device_compile_sm${arch}.o)
    set_tests_properties(cuda_kernels_device_compile_sm${arch} PROPERTIES LABELS "cuda;kernels" TIMEOUT 300)
  endforeach()
else()
  message(WARNING "nvcc not found: the device-compile check of kernels/ is not registered")
endif()
