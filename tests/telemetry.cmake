# GPU telemetry (train/gpu_telemetry.hpp) without a GPU: the driver's NVML does not exist here, so
# tests/support/fake_nvml.c stands in for it, built as shared libraries in three variants (every entry
# point; the reasons only under NVML's older name; no nvmlDeviceGetTemperature) that
# test_train_gpu_telemetry dlopen()s by path and through SCALETRAIN_NVML_LIBRARY. End to end: a cpu run's
# metrics.jsonl has no `gpus` field and its start-up output no telemetry line. Label: train.
foreach(_variant "" _throttle_name _no_temperature)
  add_library(fake_nvml${_variant} SHARED ${CMAKE_CURRENT_SOURCE_DIR}/support/fake_nvml.c)
  target_compile_options(fake_nvml${_variant} PRIVATE -Wall -Wextra)
endforeach()
target_compile_definitions(fake_nvml_throttle_name PRIVATE FAKE_NVML_THROTTLE_NAME)
target_compile_definitions(fake_nvml_no_temperature PRIVATE FAKE_NVML_NO_TEMPERATURE)

if(TARGET test_train_gpu_telemetry)
  target_compile_definitions(test_train_gpu_telemetry PRIVATE
    FAKE_NVML="$<TARGET_FILE:fake_nvml>"
    FAKE_NVML_THROTTLE_NAME="$<TARGET_FILE:fake_nvml_throttle_name>"
    FAKE_NVML_NO_TEMPERATURE="$<TARGET_FILE:fake_nvml_no_temperature>")
  target_link_libraries(test_train_gpu_telemetry PRIVATE ${CMAKE_DL_LIBS})
  add_dependencies(test_train_gpu_telemetry fake_nvml fake_nvml_throttle_name fake_nvml_no_temperature)
endif()

if(TARGET scaletrain)
  # A cpu run (no GPU, so no telemetry whatever NVML the machine has): no `gpus` in any metrics line and
  # no start-up line about it. SCALETRAIN_NVML_LIBRARY points at the fake, which would answer for a GPU.
  set(_tm ${CMAKE_CURRENT_BINARY_DIR}/telemetry_cpu_run)
  add_test(NAME train_telemetry_cpu_run
           COMMAND sh -c "rm -rf \"$1\" && \"$0\" --config \"$2\" --train.max_steps 10 --train.log_every 5 --train.evaluate false --run.dir \"$1\""
                   $<TARGET_FILE:scaletrain> ${_tm} ${PROJECT_SOURCE_DIR}/jobs/configs/lenet_synthetic.toml)
  set_tests_properties(train_telemetry_cpu_run PROPERTIES LABELS "train;app" TIMEOUT 120
    ENVIRONMENT "SCALETRAIN_NVML_LIBRARY=$<TARGET_FILE:fake_nvml>"
    FIXTURES_SETUP train_telemetry_cpu PASS_REGULAR_EXPRESSION "summary: " FAIL_REGULAR_EXPRESSION "gpu telemetry")
  add_test(NAME train_telemetry_cpu_log_has_no_gpus
           COMMAND /usr/bin/python3 -c "import json,sys; lines=[json.loads(l) for l in open(sys.argv[1])]; iv=[l for l in lines if 'record' not in l]; assert len(iv) >= 2, iv; bad=[l for l in lines if 'gpus' in l]; assert not bad, bad; print('ok:', len(iv), 'intervals without gpus')"
                   ${_tm}/metrics.jsonl)
  set_tests_properties(train_telemetry_cpu_log_has_no_gpus PROPERTIES LABELS train TIMEOUT 60
    FIXTURES_REQUIRED train_telemetry_cpu PASS_REGULAR_EXPRESSION "ok: [0-9]+ intervals without gpus")
endif()
