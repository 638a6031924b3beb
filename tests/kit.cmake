# The GPU first-contact kit (scripts/gpu-kit.sh), cuda build only: packed from this build, its
# libraries checked with ldd against CUDA stand-ins, and both calls dry-run (run.device = sim,
# PyTorch on the CPU) from the unpacked archive under env -i (support/gpu_kit_dry.sh; label kit, in
# the cuda tier of .ci/run). gpu_kit_programs builds what the kit packs; gpu_kit_programs.txt in the
# build folder lists their files.
if(SCALETRAIN_ENABLE_CUDA AND TARGET scaletrain)
  set(_kit_programs scaletrain scaletrain-bench-allreduce scaletrain-checkpoint st-synth st-info st-pack-idx
                    scaletrain_cudatests)
  add_custom_target(gpu_kit_programs DEPENDS ${_kit_programs})
  # The programs' files, one per line, for scripts/gpu-kit/pack.sh.
  list(TRANSFORM _kit_programs REPLACE "^(.+)$" "$<TARGET_FILE:\\1>" OUTPUT_VARIABLE _kit_files)
  list(JOIN _kit_files "\n" _kit_lines)
  file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/gpu_kit_programs.txt CONTENT "${_kit_lines}\n")
  add_test(NAME gpu_kit_dry
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/support/gpu_kit_dry.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}
                   ${CMAKE_CURRENT_BINARY_DIR}/gpu_kit)
  set_tests_properties(gpu_kit_dry PROPERTIES LABELS kit TIMEOUT 400 PROCESSORS 2)
endif()
