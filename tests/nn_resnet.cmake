# The ResNets' parity with PyTorch (tests/test_nn_resnet_parity.cpp). Its references are made at test time,
# never committed (resnet50's weights are 100 MB): one setup test per model runs
# tests/reference/make_resnet_reference.py into the build tree. Without torch or torchvision the setup
# fails, and with it the suite (CI installs python3-torch and python3-torchvision): no skip.
if(TARGET test_nn_resnet_parity)
  set(_resnet_ref ${CMAKE_CURRENT_BINARY_DIR}/resnet_reference)
  target_compile_definitions(test_nn_resnet_parity PRIVATE SCALETRAIN_RESNET_REFERENCE_DIR="${_resnet_ref}")
  foreach(model resnet20 resnet18 resnet50)
    add_test(NAME nn_resnet_reference_${model}
             COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/reference/make_resnet_reference.py
                     --model ${model} --out ${_resnet_ref}/${model}.h5)
    set_tests_properties(nn_resnet_reference_${model} PROPERTIES FIXTURES_SETUP nn_resnet_reference
                         LABELS "nn;pytorch" TIMEOUT 300)
  endforeach()
  gtest_discover_tests(test_nn_resnet_parity DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS nn FIXTURES_REQUIRED nn_resnet_reference TIMEOUT 600
                                  ENVIRONMENT "OMPI_MCA_rmaps_base_oversubscribe=1")
endif()
