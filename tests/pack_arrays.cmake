# st-pack-arrays end to end (tests/support/pack_arrays_cases.py makes the inputs with NumPy and h5py
# and checks the packed files independently): .npy and HDF5 inputs of several element types and
# byte orders at 1, 2 and 3 ranks (1 rank == 2 ranks), held-out splits, the training statistics
# against NumPy's float64 on data with a large offset (where E[x^2] - E[x]^2 is measurably off), and
# each bad input ending every rank with one message naming the file and the first bad index.
set(_py /usr/bin/python3)
execute_process(COMMAND ${_py} -c "import h5py, numpy" RESULT_VARIABLE _pa_py_rc OUTPUT_QUIET ERROR_QUIET)
if(NOT TARGET st-pack-arrays OR NOT _pa_py_rc EQUAL 0)
  message(STATUS "st-pack-arrays or python3 with h5py and numpy missing: pack_arrays tests not registered")
  return()
endif()

set(_pa ${CMAKE_CURRENT_BINARY_DIR}/pack_arrays)
set(_cases ${_py} ${CMAKE_CURRENT_SOURCE_DIR}/support/pack_arrays_cases.py)
set(_fail ${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.sh 120)
set(_tool $<TARGET_FILE:st-pack-arrays>)
foreach(np 1 2 3)
  set(_mpi${np} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${_mpi_flags})
endforeach()

add_test(NAME pack_arrays_make_inputs COMMAND ${_cases} make ${_pa})
set_tests_properties(pack_arrays_make_inputs PROPERTIES FIXTURES_SETUP pa_inputs LABELS data_tools)

# Good inputs. --block-rows 16 makes every rank read several blocks.
foreach(np 1 2)
  add_test(NAME pack_arrays_npy_np${np}
           COMMAND ${_mpi${np}} ${_tool} --train-samples ${_pa}/x.npy --train-labels ${_pa}/y.npy
                   --test-samples ${_pa}/xt.npy --test-labels ${_pa}/yt.npy --block-rows 16 -o ${_pa}/npy_np${np}.h5)
  set_tests_properties(pack_arrays_npy_np${np} PROPERTIES FIXTURES_REQUIRED pa_inputs FIXTURES_SETUP pa_npy_np${np}
    PROCESSORS ${np} LABELS "data_tools;mpi" TIMEOUT 120
    PASS_REGULAR_EXPRESSION "samples \\[8, 3\\] f32, 5 classes.*split train +203 samples.*split test +50 samples")
endforeach()
add_test(NAME pack_arrays_npy_check COMMAND ${_cases} check ${_pa}/npy_np2.h5 ${_pa}/x.npy ${_pa}/y.npy)
add_test(NAME pack_arrays_npy_check_test
         COMMAND ${_cases} check ${_pa}/npy_np2.h5 ${_pa}/xt.npy ${_pa}/yt.npy --split test)
add_test(NAME pack_arrays_npy_same_np1_np2 COMMAND ${_cases} same ${_pa}/npy_np1.h5 ${_pa}/npy_np2.h5)
set_tests_properties(pack_arrays_npy_check pack_arrays_npy_check_test pack_arrays_npy_same_np1_np2 PROPERTIES
  FIXTURES_REQUIRED "pa_npy_np1;pa_npy_np2" LABELS data_tools PASS_REGULAR_EXPRESSION "statistics right|identical")

# float64 big-endian samples and [N, 1] int32 labels: the same values, packed as f32.
add_test(NAME pack_arrays_f64_big_endian
         COMMAND ${_mpi2} ${_tool} --train-samples ${_pa}/x_f64_be.npy --train-labels ${_pa}/y_i32.npy
                 -o ${_pa}/f64.h5)
set_tests_properties(pack_arrays_f64_big_endian PROPERTIES FIXTURES_REQUIRED pa_inputs FIXTURES_SETUP pa_f64
  PROCESSORS 2 LABELS "data_tools;mpi" TIMEOUT 120)
add_test(NAME pack_arrays_f64_check COMMAND ${_cases} check ${_pa}/f64.h5 ${_pa}/x.npy ${_pa}/y.npy)
set_tests_properties(pack_arrays_f64_check PROPERTIES FIXTURES_REQUIRED pa_f64 LABELS data_tools
  PASS_REGULAR_EXPRESSION "statistics right")

# float16 and uint8 arrays keep their type (--dtype auto).
add_test(NAME pack_arrays_f16 COMMAND ${_tool} --train-samples ${_pa}/x_f16.npy --train-labels ${_pa}/y.npy
                                      -o ${_pa}/f16.h5)
add_test(NAME pack_arrays_u8 COMMAND ${_tool} --train-samples ${_pa}/x_u8.npy --train-labels ${_pa}/y.npy
                                     --sample-shape 24,1 --classes a,b,c,d,e,f -o ${_pa}/u8.h5)
set_tests_properties(pack_arrays_f16 PROPERTIES PASS_REGULAR_EXPRESSION "samples \\[8, 3\\] f16, 5 classes")
set_tests_properties(pack_arrays_u8 PROPERTIES PASS_REGULAR_EXPRESSION "samples \\[24, 1\\] u8, 6 classes")
set_tests_properties(pack_arrays_f16 pack_arrays_u8 PROPERTIES FIXTURES_REQUIRED pa_inputs LABELS data_tools)

# Datasets inside an HDF5 file, with val and test held out of the training input (203 rows: 41 + 20).
add_test(NAME pack_arrays_hdf5_held_out
         COMMAND ${_mpi3} ${_tool} --train-samples ${_pa}/arrays.h5:/group/x --train-labels ${_pa}/arrays.h5:/group/y
                 --val-fraction 0.2 --test-fraction 0.1 --seed 3 --block-rows 10 -o ${_pa}/held_out.h5)
set_tests_properties(pack_arrays_hdf5_held_out PROPERTIES FIXTURES_REQUIRED pa_inputs PROCESSORS 3
  LABELS "data_tools;mpi" TIMEOUT 120
  PASS_REGULAR_EXPRESSION "split train +142 samples.*split val +41 samples.*split test +20 samples")

# 2^21 float32 values around 1e4 with unit spread, merged over 3 ranks' blocks: mean/std within
# 1e-6 of NumPy's float64, where the old writer's formula is off by more.
add_test(NAME pack_arrays_large_offset
         COMMAND ${_mpi3} ${_tool} --train-samples ${_pa}/offset.h5:/sim/fields
                 --train-labels ${_pa}/offset.h5:/sim/labels --block-rows 5000 -o ${_pa}/offset_packed.h5)
set_tests_properties(pack_arrays_large_offset PROPERTIES FIXTURES_REQUIRED pa_inputs FIXTURES_SETUP pa_offset
  PROCESSORS 3 LABELS "data_tools;mpi" TIMEOUT 180)
add_test(NAME pack_arrays_large_offset_statistics
         COMMAND ${_cases} check ${_pa}/offset_packed.h5 ${_pa}/offset.h5:/sim/fields ${_pa}/offset.h5:/sim/labels
                 --old-formula-off)
set_tests_properties(pack_arrays_large_offset_statistics PROPERTIES FIXTURES_REQUIRED pa_offset LABELS data_tools
  TIMEOUT 120 PASS_REGULAR_EXPRESSION "old formula.*statistics right")

# Bad inputs: exit 1 on every rank, no hang, one message naming the file and the first bad index.
# The NaN rows 123 and 150 fall into different ranks' blocks (--block-rows 20); 123 is reported.
function(pa_bad name expected)
  add_test(NAME pack_arrays_bad_${name} COMMAND ${_fail} "${expected}" -- ${_mpi2} ${_tool} ${ARGN}
                                                -o ${_pa}/bad_${name}.h5)
  set_tests_properties(pack_arrays_bad_${name} PROPERTIES FIXTURES_REQUIRED pa_inputs PROCESSORS 2
    LABELS "data_tools;mpi" TIMEOUT 150)
endfunction()
set(_xy --train-samples ${_pa}/x.npy --train-labels)
pa_bad(lengths "${_pa}/x.npy has 203 samples but ${_pa}/y_short.npy has 202 labels" ${_xy} ${_pa}/y_short.npy)
pa_bad(nan "${_pa}/x_nan.npy: sample 123 holds NaN (nan, value 13 of the sample)"
       --train-samples ${_pa}/x_nan.npy --train-labels ${_pa}/y.npy --block-rows 20)
pa_bad(inf "${_pa}/x_inf.npy: sample 77 holds an infinite value"
       --train-samples ${_pa}/x_inf.npy --train-labels ${_pa}/y.npy --block-rows 20)
pa_bad(label_range "${_pa}/y_big.npy: the label of sample 42 is 5, outside the 5 classes [0, 5) of --classes"
       ${_xy} ${_pa}/y_big.npy --classes 5)
pa_bad(label_negative "${_pa}/y_neg.npy: the label of sample 17 is -1" ${_xy} ${_pa}/y_neg.npy)
pa_bad(label_float "${_pa}/y_float.npy holds float32 labels; labels must be integer class indices" ${_xy}
       ${_pa}/y_float.npy)
pa_bad(strings "${_pa}/x_str.npy holds values of NumPy dtype '<U1', which is not a real number type"
       --train-samples ${_pa}/x_str.npy --train-labels ${_pa}/y.npy)
pa_bad(objects "${_pa}/x_obj.npy holds values of NumPy dtype '|O', which is not a real number type"
       --train-samples ${_pa}/x_obj.npy --train-labels ${_pa}/y.npy)
pa_bad(hdf5_strings "${_pa}/arrays.h5:/names holds strings, not numbers"
       --train-samples ${_pa}/arrays.h5:/names --train-labels ${_pa}/y.npy)
pa_bad(hdf5_missing "${_pa}/arrays.h5 has no dataset /group/z"
       --train-samples ${_pa}/arrays.h5:/group/z --train-labels ${_pa}/y.npy)
pa_bad(fortran "${_pa}/x_fortran.npy stores its array in Fortran order"
       --train-samples ${_pa}/x_fortran.npy --train-labels ${_pa}/y.npy)
pa_bad(truncated "${_pa}/x_truncated.npy is truncated: its header promises 203 rows"
       --train-samples ${_pa}/x_truncated.npy --train-labels ${_pa}/y.npy)
pa_bad(u8_range "${_pa}/x.npy: sample 0 holds a value uint8 cannot hold" ${_xy} ${_pa}/y.npy --dtype u8)
pa_bad(shape "--sample-shape [5, 5] holds 25 values, but each sample of ${_pa}/x.npy ([8, 3]) holds 24"
       ${_xy} ${_pa}/y.npy --sample-shape 5,5)
