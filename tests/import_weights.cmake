# Other people's weights (tests/support/check_torch_import.py): data-tools/st-import-torch from torch.save
# state_dicts, run.init_from and run.evaluate_only, against PyTorch on Fashion-MNIST (data_pack_fmnist's file,
# tests/data.cmake). resnet18: torchvision's random weights imported and evaluated on the test split, PyTorch's
# accuracy exactly and its logits; refusals: a renamed, reshaped or missing tensor and files that are no
# state_dict, each one error; finetune: PyTorch's trained lenet imported, fine-tuned on 5 classes with the
# classifier re-initialized, resumed, and its checkpoint evaluated alike at 1, 2 and 3 ranks.
if(TARGET scaletrain AND TARGET scaletrain-checkpoint AND EXISTS /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz)
  list(JOIN _mpi_flags " " _mpi_flags_text)
  foreach(mode resnet18 refusals finetune)
    add_test(NAME import_torch_${mode}
             COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/support/check_torch_import.py ${mode}
                     --scaletrain $<TARGET_FILE:scaletrain> --tool $<TARGET_FILE:scaletrain-checkpoint>
                     --importer ${PROJECT_SOURCE_DIR}/data-tools/st-import-torch
                     --mpirun "${MPIEXEC_EXECUTABLE} ${_mpi_flags_text}"
                     --data ${CMAKE_CURRENT_BINARY_DIR}/fmnist-roundtrip.h5
                     --out ${CMAKE_CURRENT_BINARY_DIR}/import_torch/${mode})
    set_tests_properties(import_torch_${mode} PROPERTIES FIXTURES_REQUIRED fmnist_h5 PROCESSORS 2
                         LABELS "checkpoint;mpi;pytorch" TIMEOUT 300 PASS_REGULAR_EXPRESSION "\nOK: ")
  endforeach()
endif()
