# The zoo's parity with PyTorch (tests/test_nn_zoo_parity.cpp). Its references are made at test time,
# never committed (resnet50's weights are 100 MB): one setup test per reference runs
# tests/reference/make_zoo_reference.py into the build tree. Without torch or torchvision the setup
# fails, and with it the suite (CI installs python3-torch and python3-torchvision): no skip.
if(TARGET test_nn_zoo_parity)
  set(_zoo_ref ${CMAKE_CURRENT_BINARY_DIR}/zoo_reference)
  target_compile_definitions(test_nn_zoo_parity PRIVATE SCALETRAIN_ZOO_REFERENCE_DIR="${_zoo_ref}")
  foreach(ref resnet20 resnet18 resnet50 mobilenet_v2 vgg16 inception_v3 inception_v3_75 vit vit_tiny)
    add_test(NAME nn_zoo_reference_${ref}
             COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/reference/make_zoo_reference.py
                     --model ${ref} --out ${_zoo_ref}/${ref}.h5)
    set_tests_properties(nn_zoo_reference_${ref} PROPERTIES FIXTURES_SETUP nn_zoo_reference
                         LABELS "nn;pytorch" TIMEOUT 300)
  endforeach()
  gtest_discover_tests(test_nn_zoo_parity DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS nn FIXTURES_REQUIRED nn_zoo_reference TIMEOUT 600
                                  ENVIRONMENT "OMPI_MCA_rmaps_base_oversubscribe=1")
endif()
