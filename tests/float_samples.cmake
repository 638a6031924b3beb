# Training on float samples (data/input_pipeline.hpp): a float32 copy of Fashion-MNIST packed by
# st-pack-arrays trains with per-step losses bitwise equal to the uint8 file's (cpu and sim, 2
# ranks); the mlp on f32 spectra [256] reaches a PyTorch MLP's accuracy within one point; f16
# volumes [D, H, W, C] train; data.augment on samples that are not images is refused with the fix.
set(_py /usr/bin/python3)
if(NOT TARGET scaletrain OR NOT TARGET st-pack-arrays)
  return()
endif()
set(_fs ${CMAKE_CURRENT_BINARY_DIR}/float_samples)
set(_st $<TARGET_FILE:scaletrain>)
set(_synth $<TARGET_FILE:st-synth>)
set(_mpi2 ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${_mpi_flags})

if(EXISTS /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz)
  add_test(NAME float_samples_fmnist_f32_copy
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/support/float_copy_losses.sh ${_st} $<TARGET_FILE:st-pack-arrays>
                   ${CMAKE_CURRENT_BINARY_DIR}/fmnist-roundtrip.h5 ${_fs}/fmnist_f32 ${_mpi2})
  set_tests_properties(float_samples_fmnist_f32_copy PROPERTIES FIXTURES_REQUIRED fmnist_h5 PROCESSORS 2
    LABELS "data_tools;mpi;train" TIMEOUT 600
    PASS_REGULAR_EXPRESSION "same values and statistics.*cpu: losses of the f32 copy identical.*sim: losses of the f32 copy identical")
endif()

execute_process(COMMAND ${_py} -c "import torch, h5py" RESULT_VARIABLE _fs_torch_rc OUTPUT_QUIET ERROR_QUIET)
if(_fs_torch_rc EQUAL 0)
  add_test(NAME float_samples_spectra_mlp_vs_pytorch
           COMMAND ${_py} ${CMAKE_CURRENT_SOURCE_DIR}/support/spectra_vs_pytorch.py ${_st} ${_synth} ${_fs}/spectra
                   -- ${_mpi2})
  set_tests_properties(float_samples_spectra_mlp_vs_pytorch PROPERTIES PROCESSORS 2 LABELS "mpi;train;pytorch"
    TIMEOUT 600 PASS_REGULAR_EXPRESSION "OK: within one point")
endif()

# f16 volumes [4, 6, 6, 2] through the mlp (Flatten first), 2 ranks, with evaluation.
add_test(NAME float_samples_make_volumes
         COMMAND ${_synth} --shape 4,6,6,2 --dtype f16 --train 512 --test 128 -o ${CMAKE_CURRENT_BINARY_DIR}/float_samples_volumes.h5)
set_tests_properties(float_samples_make_volumes PROPERTIES FIXTURES_SETUP fs_volumes)
add_test(NAME float_samples_f16_volumes_train
         COMMAND ${_mpi2} ${_st} --model.name mlp --data.path ${CMAKE_CURRENT_BINARY_DIR}/float_samples_volumes.h5 --train.epochs 2 --train.batch 64
                 --run.threads 1)
set_tests_properties(float_samples_f16_volumes_train PROPERTIES FIXTURES_REQUIRED fs_volumes PROCESSORS 2
  LABELS "mpi;train" TIMEOUT 120 PASS_REGULAR_EXPRESSION "epoch 2 done in .*eval loss [0-9.]+ acc")
add_test(NAME float_samples_augment_refused
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.sh 60
                 "data.augment crops and flips [H, W, C] images, but the samples of ${CMAKE_CURRENT_BINARY_DIR}/float_samples_volumes.h5 are [4, 6, 6, 2]: set data.augment = false"
                 -- ${_mpi2} ${_st} --model.name mlp --data.path ${CMAKE_CURRENT_BINARY_DIR}/float_samples_volumes.h5 --data.augment true)
set_tests_properties(float_samples_augment_refused PROPERTIES FIXTURES_REQUIRED fs_volumes PROCESSORS 2
  LABELS "mpi;train" TIMEOUT 120)
