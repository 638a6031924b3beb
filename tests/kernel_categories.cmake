# The Python twin of the kernel-name categories (scripts/gpu-kit/kernel_categories.py, the GPU kit's)
# on the recorded name lists that test_train_kernel_category checks in C++: both read
# src/train/kernel_categories.tsv and must give every recorded name its expected category. Label: train.
file(GLOB _kernel_name_lists CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/data/kernel_names/*.tsv)
add_test(NAME kernel_categories_python
         COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/scripts/gpu-kit/kernel_categories.py --check ${_kernel_name_lists})
set_tests_properties(kernel_categories_python PROPERTIES LABELS train TIMEOUT 60)
