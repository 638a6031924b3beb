# data-tools end to end: st-pack-folder on generated JPEG/PNG folders at 1 and 2 ranks (checked
# with h5py + PIL, and 1 rank == 2 ranks), its bad-file handling (--on-error skip / fail, no hang)
# and clear errors; st-pack-cifar on tiny generated CIFAR-10/100 batches (labels, CHW -> HWC) and
# its rejection of a batch file of the wrong size.
set(_py /usr/bin/python3)
execute_process(COMMAND ${_py} -c "import PIL, h5py, numpy" RESULT_VARIABLE _dt_py_rc OUTPUT_QUIET ERROR_QUIET)
if(NOT TARGET st-pack-folder OR NOT TARGET st-pack-cifar)
  return()
endif()
if(NOT _dt_py_rc EQUAL 0)
  message(STATUS "python3 with PIL, h5py and numpy not found: data_tools tests not registered")
  return()
endif()

set(_dt ${CMAKE_CURRENT_BINARY_DIR}/data_tools)
set(_sup ${CMAKE_CURRENT_SOURCE_DIR}/support)
set(_fail ${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.sh 120)
set(_folder $<TARGET_FILE:st-pack-folder>)
set(_cifar $<TARGET_FILE:st-pack-cifar>)
set(_mpi1 ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 1 ${_mpi_flags})
set(_mpi2 ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${_mpi_flags})

# --- st-pack-folder ----------------------------------------------------------------------------
add_test(NAME data_tools_make_image_folders COMMAND ${_py} ${_sup}/make_image_folder.py ${_dt}/img)
set_tests_properties(data_tools_make_image_folders PROPERTIES FIXTURES_SETUP dt_images LABELS data_tools)

# (a) The good folder (11 images, 3 classes, JPEG/PNG of many kinds and sizes) at 1 and 2 ranks.
foreach(np 1 2)
  add_test(NAME data_tools_folder_pack_np${np}
           COMMAND ${_mpi${np}} ${_folder} --dir ${_dt}/img/good --size 24x32 -o ${_dt}/good_np${np}.h5)
  set_tests_properties(data_tools_folder_pack_np${np} PROPERTIES FIXTURES_REQUIRED dt_images
    FIXTURES_SETUP dt_good_np${np} PROCESSORS ${np} LABELS "data_tools;mpi" TIMEOUT 120
    PASS_REGULAR_EXPRESSION "decoded 11 / 11 files \\(0 bad\\).*train: 11 samples, val: 0 samples, 3 classes")
  add_test(NAME data_tools_folder_val_pack_np${np}
           COMMAND ${_mpi${np}} ${_folder} --dir ${_dt}/img/good --size 20 --channels 1 --val-fraction 0.34
                   --seed 7 --gzip 3 -o ${_dt}/val_np${np}.h5)
  set_tests_properties(data_tools_folder_val_pack_np${np} PROPERTIES FIXTURES_REQUIRED dt_images
    FIXTURES_SETUP dt_val_np${np} PROCESSORS ${np} LABELS "data_tools;mpi" TIMEOUT 120
    PASS_REGULAR_EXPRESSION "train: 8 samples, val: 3 samples, 3 classes, \\[20, 20, 1\\]")
endforeach()
add_test(NAME data_tools_folder_check_np1 COMMAND ${_py} ${_sup}/check_folder_pack.py pack ${_dt}/good_np1.h5
         ${_dt}/img/good 24 32 3)
add_test(NAME data_tools_folder_check_np2 COMMAND ${_py} ${_sup}/check_folder_pack.py pack ${_dt}/good_np2.h5
         ${_dt}/img/good 24 32 3)
add_test(NAME data_tools_folder_same_np1_np2 COMMAND ${_py} ${_sup}/check_folder_pack.py same ${_dt}/good_np1.h5
         ${_dt}/good_np2.h5)
add_test(NAME data_tools_folder_val_check_np2 COMMAND ${_py} ${_sup}/check_folder_pack.py pack ${_dt}/val_np2.h5
         ${_dt}/img/good 20 20 1 --val-fraction 0.34)
add_test(NAME data_tools_folder_val_same_np1_np2 COMMAND ${_py} ${_sup}/check_folder_pack.py same ${_dt}/val_np1.h5
         ${_dt}/val_np2.h5)
set_tests_properties(data_tools_folder_check_np1 PROPERTIES FIXTURES_REQUIRED "dt_images;dt_good_np1")
set_tests_properties(data_tools_folder_check_np2 PROPERTIES FIXTURES_REQUIRED "dt_images;dt_good_np2")
set_tests_properties(data_tools_folder_same_np1_np2 PROPERTIES FIXTURES_REQUIRED "dt_good_np1;dt_good_np2")
set_tests_properties(data_tools_folder_val_check_np2 PROPERTIES FIXTURES_REQUIRED "dt_images;dt_val_np2")
set_tests_properties(data_tools_folder_val_same_np1_np2 PROPERTIES FIXTURES_REQUIRED "dt_val_np1;dt_val_np2")
set_tests_properties(data_tools_folder_check_np1 data_tools_folder_check_np2 data_tools_folder_same_np1_np2
  data_tools_folder_val_check_np2 data_tools_folder_val_same_np1_np2 PROPERTIES LABELS data_tools TIMEOUT 120
  PASS_REGULAR_EXPRESSION "labels and pixels right|are identical")

# (b) The bad folder: a truncated JPEG, a zero-byte .jpg, a text file named .png, a cut PNG and a
# dangling symlink, beside 3 good images. skip: exit 0, each reported with a reason, 3 samples left.
add_test(NAME data_tools_folder_bad_skip_np2
         COMMAND ${_py} ${_sup}/check_folder_pack.py skip ${_dt}/bad_skip.h5 ${_dt}/img/bad 24 32 3
                 ${_dt}/img/bad_files.txt -- ${_mpi2} ${_folder} --dir ${_dt}/img/bad --size 24x32
                 -o ${_dt}/bad_skip.h5)
set_tests_properties(data_tools_folder_bad_skip_np2 PROPERTIES FIXTURES_REQUIRED dt_images PROCESSORS 2
  LABELS "data_tools;mpi" TIMEOUT 180 PASS_REGULAR_EXPRESSION "all 5 bad files reported.*'train': 3\\} samples")
# The same at 3 ranks and a large sample size: blocks of 2 files per rank, so the bad files and the
# gathered reasons fall into different blocks and ranks.
add_test(NAME data_tools_folder_bad_skip_np3_blocks
         COMMAND ${_py} ${_sup}/check_folder_pack.py skip ${_dt}/bad_skip3.h5 ${_dt}/img/bad 1100 1000 3
                 ${_dt}/img/bad_files.txt -- ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3 ${_mpi_flags}
                 ${_folder} --dir ${_dt}/img/bad --size 1100x1000 -o ${_dt}/bad_skip3.h5)
set_tests_properties(data_tools_folder_bad_skip_np3_blocks PROPERTIES FIXTURES_REQUIRED dt_images PROCESSORS 3
  LABELS "data_tools;mpi" TIMEOUT 180 PASS_REGULAR_EXPRESSION "all 5 bad files reported.*'train': 3\\} samples")
# fail: every rank exits non-zero (no hang), naming the first bad file exactly once.
foreach(np 1 2)
  add_test(NAME data_tools_folder_bad_fail_np${np}
           COMMAND ${_fail} "${_dt}/img/bad/ant/a00_truncated.jpg: corrupt JPEG: Premature end of JPEG file"
                   -- ${_mpi${np}} ${_folder} --dir ${_dt}/img/bad --size 24x32 --on-error fail
                   -o ${_dt}/bad_fail.h5)
  set_tests_properties(data_tools_folder_bad_fail_np${np} PROPERTIES FIXTURES_REQUIRED dt_images
    PROCESSORS ${np} LABELS "data_tools;mpi" TIMEOUT 180)
endforeach()
add_test(NAME data_tools_folder_empty
         COMMAND ${_fail} "img/empty: no class subfolders" -- ${_mpi2} ${_folder} --dir ${_dt}/img/empty --size 8
                 -o ${_dt}/empty.h5)
add_test(NAME data_tools_folder_no_images
         COMMAND ${_fail} "img/noimages: no .jpg/.jpeg/.png files in its 1 class subfolder"
                 -- ${_mpi2} ${_folder} --dir ${_dt}/img/noimages --size 8 -o ${_dt}/noimages.h5)
add_test(NAME data_tools_folder_bad_size
         COMMAND ${_fail} "--size must be HxW or N (square), e.g. 64x48, not '32x'"
                 -- ${_mpi2} ${_folder} --dir ${_dt}/img/good --size 32x -o ${_dt}/badsize.h5)
set_tests_properties(data_tools_folder_empty data_tools_folder_no_images data_tools_folder_bad_size PROPERTIES
  FIXTURES_REQUIRED dt_images PROCESSORS 2 LABELS "data_tools;mpi" TIMEOUT 180)

# --- st-pack-cifar -----------------------------------------------------------------------------
add_test(NAME data_tools_make_cifar
         COMMAND ${_py} ${_sup}/cifar_bins.py make10 ${_dt}/cifar10)
add_test(NAME data_tools_make_cifar100 COMMAND ${_py} ${_sup}/cifar_bins.py make100 ${_dt}/cifar100)
add_test(NAME data_tools_make_cifar_badsize COMMAND ${_py} ${_sup}/cifar_bins.py badsize ${_dt}/cifar10_badsize)
set_tests_properties(data_tools_make_cifar data_tools_make_cifar100 data_tools_make_cifar_badsize PROPERTIES
  FIXTURES_SETUP dt_cifar_bins LABELS data_tools)
add_test(NAME data_tools_cifar10_pack COMMAND ${_cifar} --dir ${_dt}/cifar10 -o ${_dt}/cifar10.h5)
add_test(NAME data_tools_cifar100_pack
         COMMAND ${_cifar} --dir ${_dt}/cifar100 --label coarse --gzip 4 -o ${_dt}/cifar100.h5)
set_tests_properties(data_tools_cifar10_pack data_tools_cifar100_pack PROPERTIES FIXTURES_REQUIRED dt_cifar_bins
  FIXTURES_SETUP dt_cifar_h5 LABELS data_tools PASS_REGULAR_EXPRESSION "test +test[._a-z]*bin +[23] records.*wrote")
add_test(NAME data_tools_cifar10_check
         COMMAND ${_py} ${_sup}/cifar_bins.py check ${_dt}/cifar10.h5 ${_dt}/cifar10 cifar10)
add_test(NAME data_tools_cifar100_check
         COMMAND ${_py} ${_sup}/cifar_bins.py check ${_dt}/cifar100.h5 ${_dt}/cifar100 cifar100 coarse)
set_tests_properties(data_tools_cifar10_check data_tools_cifar100_check PROPERTIES
  FIXTURES_REQUIRED "dt_cifar_bins;dt_cifar_h5" LABELS data_tools PASS_REGULAR_EXPRESSION "train mean/std right")
add_test(NAME data_tools_cifar10_wrong_size
         COMMAND ${_fail} "cifar10_badsize/data_batch_3.bin: 6151 bytes is not a multiple of the CIFAR-10 record size 3073"
                 -- ${_cifar} --dir ${_dt}/cifar10_badsize -o ${_dt}/cifar10_badsize.h5)
set_tests_properties(data_tools_cifar10_wrong_size PROPERTIES FIXTURES_REQUIRED dt_cifar_bins LABELS data_tools
  TIMEOUT 180)

# --- data sets without mean/std ----------------------------------------------------------------
# A file written with h5py from the documented format without the optional mean/std is refused by
# the trainer with the fix, flagged by st-info, trained with --data.normalize none on purpose;
# st-info --add-stats stores numpy's mean/std (also for values with a large offset); a file
# without a test split names --train.eval_split val.
if(TARGET scaletrain AND TARGET st-info)
  list(JOIN _mpi_flags " " _dt_mpi_flags_text)
  add_test(NAME data_tools_unnormalized_file_refused_until_add_stats
           COMMAND ${_py} ${_sup}/check_unnormalized_data.py --scaletrain $<TARGET_FILE:scaletrain>
                   --st-info $<TARGET_FILE:st-info> --mpirun "${MPIEXEC_EXECUTABLE} ${_dt_mpi_flags_text}"
                   --out ${_dt}/unnormalized)
  set_tests_properties(data_tools_unnormalized_file_refused_until_add_stats PROPERTIES PROCESSORS 2
                       LABELS "data_tools;mpi" TIMEOUT 300)
endif()

# --- NaN and inf in float samples ----------------------------------------------------------------
# Files written with h5py, one NaN in the f32 training split and one inf in the f16 evaluation split:
# refused at 2 ranks in stage mode before the first step and in stream mode at the step (or the
# evaluation) that meets them, with one message naming the file, split, sample and count; the clean
# copy trains; st-info counts them per split.
if(TARGET scaletrain AND TARGET st-info)
  add_test(NAME data_tools_nonfinite_samples_refused
           COMMAND ${_py} ${_sup}/check_nonfinite_samples.py --scaletrain $<TARGET_FILE:scaletrain>
                   --st-info $<TARGET_FILE:st-info> --mpirun "${MPIEXEC_EXECUTABLE} ${_dt_mpi_flags_text}"
                   --out ${_dt}/nonfinite)
  set_tests_properties(data_tools_nonfinite_samples_refused PROPERTIES PROCESSORS 2
                       LABELS "data_tools;mpi" TIMEOUT 300)
endif()
