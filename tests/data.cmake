# data-tools end to end: pack Fashion-MNIST from Debian's dataset-fashion-mnist and check the
# round trip independently in Python; st-info on the packed file and on a bad one.
set(_fmnist_dir /usr/share/datasets/fashion-mnist)
set(_py /usr/bin/python3)
if(EXISTS ${_fmnist_dir}/train-images-idx3-ubyte.gz)
  add_test(NAME data_pack_fmnist
           COMMAND $<TARGET_FILE:st-pack-idx> --dir ${_fmnist_dir} --classes fashion-mnist
                   -o ${CMAKE_CURRENT_BINARY_DIR}/fmnist-roundtrip.h5)
  set_tests_properties(data_pack_fmnist PROPERTIES FIXTURES_SETUP fmnist_h5 LABELS data)
  add_test(NAME data_fmnist_roundtrip
           COMMAND ${_py} ${CMAKE_CURRENT_SOURCE_DIR}/support/check_idx_roundtrip.py
                   ${CMAKE_CURRENT_BINARY_DIR}/fmnist-roundtrip.h5 ${_fmnist_dir})
  set_tests_properties(data_fmnist_roundtrip PROPERTIES FIXTURES_REQUIRED fmnist_h5 LABELS data
                       PASS_REGULAR_EXPRESSION "test: 10000 samples and labels identical")
  add_test(NAME data_info_fmnist COMMAND $<TARGET_FILE:st-info> ${CMAKE_CURRENT_BINARY_DIR}/fmnist-roundtrip.h5)
  set_tests_properties(data_info_fmnist PROPERTIES FIXTURES_REQUIRED fmnist_h5 LABELS data
                       PASS_REGULAR_EXPRESSION "split train +60000 samples.*mean/std per channel: 72\\.9")
else()
  message(STATUS "dataset-fashion-mnist not installed: Fashion-MNIST round-trip test not registered")
endif()
add_test(NAME data_info_rejects_non_hdf5
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.sh 30 "not an HDF5 file" --
                 $<TARGET_FILE:st-info> ${CMAKE_CURRENT_SOURCE_DIR}/CMakeLists.txt)
set_tests_properties(data_info_rejects_non_hdf5 PROPERTIES LABELS data)
