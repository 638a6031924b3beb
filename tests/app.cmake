# End-to-end tests of the scaletrain batch job: help, configuration errors that end every rank with
# one message and a non-zero exit (no hang), and short real training runs.
if(TARGET scaletrain)
  set(_st $<TARGET_FILE:scaletrain>)
  set(_mpirun ${MPIEXEC_EXECUTABLE} ${_mpi_flags})
  set(_fail ${CMAKE_CURRENT_SOURCE_DIR}/expect_failure.sh 120)

  add_test(NAME app_help_lists_every_key COMMAND ${_st} --help)
  set_tests_properties(app_help_lists_every_key PROPERTIES
    PASS_REGULAR_EXPRESSION "--train\\.batch INT.*default: 128.*--comm\\.bucket_mb")

  add_test(NAME app_print_config COMMAND ${_st} --train.batch 64 --optimizer.lr 0.1 --print-config)
  set_tests_properties(app_print_config PROPERTIES PASS_REGULAR_EXPRESSION "\\[train\\]\nepochs = 2\nbatch = 64")

  add_test(NAME app_summary_fmnist_sepcnn COMMAND ${_st} --model.name fmnist_sepcnn --summary)
  set_tests_properties(app_summary_fmnist_sepcnn PROPERTIES PASS_REGULAR_EXPRESSION "Total params: 2,887,306")

  add_test(NAME app_unknown_cli_key_suggests COMMAND ${_fail} "unknown option '--train.bacth' (did you mean '--train.batch'?"
           -- ${_mpirun} -np 2 ${_st} --train.bacth 64)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/bad_key.toml "[train]\nepoch = 3\n")
  add_test(NAME app_unknown_toml_key_suggests COMMAND ${_fail} "unknown configuration key 'train.epoch' (did you mean 'train.epochs'?"
           -- ${_mpirun} -np 2 ${_st} --config ${CMAKE_CURRENT_BINARY_DIR}/bad_key.toml)
  add_test(NAME app_unknown_model COMMAND ${_fail} "unknown model 'resnet' (the zoo has: mlp, lenet, lenet_dropout, fmnist_sepcnn, resmlp, branchnet, resnet20, resnet18, resnet50, mobilenet_v2, vgg16, inception_v3, vit, vit_tiny, vit_b_16)"
           -- ${_mpirun} -np 2 ${_st} --model.name resnet --train.max_steps 1)
  add_test(NAME app_zero_batch COMMAND ${_fail} "train.batch must be positive, got 0" -- ${_st} --train.batch 0)
  add_test(NAME app_negative_batch COMMAND ${_fail} "train.batch must be positive, got -8" -- ${_st} --train.batch -8)
  add_test(NAME app_batch_not_divisible COMMAND ${_fail} "train.batch = 9 is not divisible by the 2 ranks"
           -- ${_mpirun} -np 2 ${_st} --train.batch 9)
  add_test(NAME app_data_smaller_than_batch COMMAND ${_fail} "fewer than one global batch of 256"
           -- ${_mpirun} -np 2 ${_st} --data.synthetic_samples 100 --train.batch 256 --run.dir ${CMAKE_CURRENT_BINARY_DIR}/small_run)
  add_test(NAME app_mismatched_config COMMAND ${_fail} "the configuration differs between ranks (rank 1 differs from rank 0)"
           -- ${_mpirun} -np 1 ${_st} --train.seed 1 --train.max_steps 1 : -np 1 ${_st} --train.seed 2 --train.max_steps 1)
  add_test(NAME app_missing_data_file COMMAND ${_fail} "/nonexistent/fmnist.h5"
           -- ${_mpirun} -np 2 ${_st} --data.path /nonexistent/fmnist.h5)
  add_test(NAME app_nccl_on_cpu COMMAND ${_fail} "comm.backend = nccl needs a device (run.device = cuda, or sim"
           -- ${_mpirun} -np 2 ${_st} --run.device cpu --comm.backend nccl --train.max_steps 1)
  add_test(NAME app_unknown_comm_backend COMMAND ${_fail} "comm.backend = 'gloo' is not one of auto, nccl, mpi"
           -- ${_mpirun} -np 2 ${_st} --comm.backend gloo --train.max_steps 1)
  add_test(NAME app_unknown_profile COMMAND ${_fail} "run.profile = 'layer': 'layer' is not one of none, layers, kernels"
           -- ${_mpirun} -np 2 ${_st} --run.profile layer --train.max_steps 1)
  set_tests_properties(app_unknown_cli_key_suggests app_unknown_toml_key_suggests app_unknown_model app_batch_not_divisible
    app_data_smaller_than_batch app_mismatched_config app_missing_data_file app_nccl_on_cpu app_unknown_comm_backend
    app_unknown_profile PROPERTIES PROCESSORS 2 LABELS "app;mpi")

  # A short real run on synthetic data at 2 ranks: the loss must fall and rank 0 must report samples/s.
  add_test(NAME app_train_synthetic_2ranks
           COMMAND ${_fresh} ${CMAKE_CURRENT_BINARY_DIR}/synthetic_run ${_mpirun} -np 2 ${_st} --config ${PROJECT_SOURCE_DIR}/jobs/configs/lenet_synthetic.toml
                   --data.synthetic_samples 4096 --train.epochs 2 --run.dir ${CMAKE_CURRENT_BINARY_DIR}/synthetic_run)
  set_tests_properties(app_train_synthetic_2ranks PROPERTIES PROCESSORS 2 LABELS "app;mpi" TIMEOUT 300
    PASS_REGULAR_EXPRESSION "epoch 2 done.*eval loss [0-9.]+ acc (9[0-9]|100)\\.[0-9]+%.*summary: .* samples/s")

  # The opt-in timeline at 2 and 3 ranks, small buckets so that each step has several all-reduces:
  # every phase of every step on each rank, the buckets on their own track, clocks aligned across ranks.
  foreach(n 2 3)
    set(_tl ${CMAKE_CURRENT_BINARY_DIR}/timeline_np${n})
    add_test(NAME app_timeline_np${n}_run
             COMMAND ${_fresh} ${_tl} ${_mpirun} -np ${n} ${_st} --config ${PROJECT_SOURCE_DIR}/jobs/configs/lenet_synthetic.toml
                     --data.synthetic_samples 2048 --train.batch 96 --train.epochs 100 --train.max_steps 20
                     --train.evaluate false --comm.bucket_mb 0.05 --run.timeline true --run.dir ${_tl})
    add_test(NAME app_timeline_np${n}_check
             COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/support/check_timeline.py ${_tl} --ranks ${n}
                     --steps 20)
    set_tests_properties(app_timeline_np${n}_run PROPERTIES PROCESSORS ${n} LABELS "app;mpi" TIMEOUT 300
                         FIXTURES_SETUP app_timeline_np${n})
    set_tests_properties(app_timeline_np${n}_check PROPERTIES LABELS app TIMEOUT 60
                         FIXTURES_REQUIRED app_timeline_np${n})
  endforeach()
endif()

# comm.bucket_mb: auto (the default) or a positive number; bad values end every rank with one message
# naming the key and the value. A 2-rank run with auto and one with a fixed size: run.json records the
# choice (probe, fit, candidates) or "fixed" (tests/support/check_run_dirs.py).
if(TARGET scaletrain)
  add_test(NAME app_bucket_mb_default_auto COMMAND ${_st} --print-config)
  set_tests_properties(app_bucket_mb_default_auto PROPERTIES PASS_REGULAR_EXPRESSION "\\[comm\\]\nbucket_mb = \"auto\"\n")
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/bucket_mb_number.toml "[comm]\nbucket_mb = 4\n")
  add_test(NAME app_bucket_mb_toml_number COMMAND ${_st} --config ${CMAKE_CURRENT_BINARY_DIR}/bucket_mb_number.toml --print-config)
  set_tests_properties(app_bucket_mb_toml_number PROPERTIES PASS_REGULAR_EXPRESSION "\\[comm\\]\nbucket_mb = 4.0\n")
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/bucket_mb_auto.toml "[comm]\nbucket_mb = \"auto\"\n")
  add_test(NAME app_bucket_mb_toml_auto COMMAND ${_st} --config ${CMAKE_CURRENT_BINARY_DIR}/bucket_mb_auto.toml --comm.bucket_mb 0.5 --print-config)
  set_tests_properties(app_bucket_mb_toml_auto PROPERTIES PASS_REGULAR_EXPRESSION "\\[comm\\]\nbucket_mb = 0.5\n")
  foreach(bad fast 0 -1)
    add_test(NAME app_bucket_mb_rejects_${bad}
             COMMAND ${_fail} "comm.bucket_mb = '${bad}' is neither auto nor a positive size in MB"
                     -- ${_mpirun} -np 2 ${_st} --comm.bucket_mb ${bad} --train.max_steps 1)
    set_tests_properties(app_bucket_mb_rejects_${bad} PROPERTIES PROCESSORS 2 LABELS "app;mpi")
  endforeach()
  # check_run_dirs.py reads a sweep's directory: sweep.json (its kind) and ranks-<N>/.
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/bucket_sweep.json "{\"kind\": \"strong\"}\n")
  foreach(setting auto 4)
    set(_bk ${CMAKE_CURRENT_BINARY_DIR}/bucket_${setting})
    add_test(NAME app_bucket_${setting}_clean
             COMMAND /bin/sh -c "rm -rf ${_bk} && mkdir -p ${_bk} && cp ${CMAKE_CURRENT_BINARY_DIR}/bucket_sweep.json ${_bk}/sweep.json")
    add_test(NAME app_bucket_${setting}_run
             COMMAND ${_mpirun} -np 2 ${_st} --config ${PROJECT_SOURCE_DIR}/jobs/configs/lenet_synthetic.toml
                     --data.synthetic_samples 4096 --train.epochs 100 --train.max_steps 30 --train.log_every 10
                     --train.warmup_log_steps 10 --train.evaluate false --run.checkpoint_at_end false
                     --comm.bucket_mb ${setting} --run.dir ${_bk}/ranks-2)
    add_test(NAME app_bucket_${setting}_run_json
             COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/support/check_run_dirs.py ${_bk} --kind strong
                     --ranks 2)
    set_tests_properties(app_bucket_${setting}_clean PROPERTIES FIXTURES_SETUP app_bucket_${setting}_dir)
    set_tests_properties(app_bucket_${setting}_run PROPERTIES PROCESSORS 2 LABELS "app;mpi" TIMEOUT 300
      FIXTURES_REQUIRED app_bucket_${setting}_dir FIXTURES_SETUP app_bucket_${setting})
    set_tests_properties(app_bucket_${setting}_run_json PROPERTIES FIXTURES_REQUIRED app_bucket_${setting} LABELS app)
  endforeach()
  set_tests_properties(app_bucket_auto_run PROPERTIES
    PASS_REGULAR_EXPRESSION "buckets: comm.bucket_mb = auto -> [^\n]*MB \\([0-9]+ buckets\\), predicted exposed")
endif()

# A newcomer's first hour: what the start-up, --help, --version and a mistake print; run.dir
# protection; the figures of a short run; run.device = auto.
if(TARGET scaletrain)
  add_test(NAME app_version COMMAND ${_st} --version)
  set_tests_properties(app_version PROPERTIES LABELS app PASS_REGULAR_EXPRESSION
    "scaletrain +[0-9]+\\.[0-9]+\\.[0-9]+\ngit_commit +[0-9a-f]+[^\n]*\nmpi +Open MPI v4[^\n]*\nonednn +[0-9]+\\.[0-9]+\\.[0-9]+\nhdf5 +1\\.[0-9]+\\.[0-9]+\nkokkos +[0-9.]+\ncompiler +[^\n]+\ngpu +[^\n]+")
  # --help: every zoo model, no testing keys (--help-all shows them).
  add_test(NAME app_help_hides_testing_keys COMMAND ${_st} --help)
  set_tests_properties(app_help_hides_testing_keys PROPERTIES LABELS app
    PASS_REGULAR_EXPRESSION "--help-all.*zoo model: mlp, lenet, lenet_dropout, fmnist_sepcnn, resmlp, branchnet"
    FAIL_REGULAR_EXPRESSION "testing\\.|sim_delay_us|inject_")
  add_test(NAME app_help_all_shows_testing_keys COMMAND ${_st} --help-all)
  set_tests_properties(app_help_all_shows_testing_keys PROPERTIES LABELS app
    PASS_REGULAR_EXPRESSION "testing keys:.*--testing\\.inject_signal TEXT")
  # --print-config leaves the testing section out unless a key of it is set.
  add_test(NAME app_print_config_without_testing_section COMMAND ${_st} --print-config)
  set_tests_properties(app_print_config_without_testing_section PROPERTIES LABELS app
    PASS_REGULAR_EXPRESSION "\\[run\\]" FAIL_REGULAR_EXPRESSION "\\[testing\\]")
  add_test(NAME app_print_config_with_a_testing_key COMMAND ${_st} --testing.inject_signal USR1 --print-config)
  set_tests_properties(app_print_config_with_a_testing_key PROPERTIES LABELS app
    PASS_REGULAR_EXPRESSION "\\[testing\\]\n(.*\n)*inject_signal = \"USR1\"")
  # A user's mistake is one line: the key, the value and what was expected, no source file or rank.
  add_test(NAME app_user_error_is_one_line COMMAND ${_fail}
           "scaletrain: error: command line: configuration key 'train.batch' expects an integer, got 'abc'"
           -- ${_mpirun} -q -np 2 ${_st} --train.batch abc)
  set_tests_properties(app_user_error_is_one_line PROPERTIES PROCESSORS 2 LABELS "app;mpi"
    FAIL_REGULAR_EXPRESSION "\\.cpp:[0-9]+|\\[rank |exited with non-zero status")
  # optimizer.no_decay: an unknown category names the key and the allowed values; a TOML array prints
  # back in one canonical order.
  add_test(NAME app_no_decay_unknown_category COMMAND ${_fail}
           "scaletrain: error: command line: optimizer.no_decay: 'weights' is not one of bias, norm, embedding"
           -- ${_mpirun} -q -np 2 ${_st} --optimizer.no_decay bias,weights)
  set_tests_properties(app_no_decay_unknown_category PROPERTIES PROCESSORS 2 LABELS "app;mpi")
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/no_decay.toml "[optimizer]\nno_decay = [\"norm\", \"bias\"]\n")
  add_test(NAME app_no_decay_toml_array COMMAND ${_st} --config ${CMAKE_CURRENT_BINARY_DIR}/no_decay.toml --print-config)
  set_tests_properties(app_no_decay_toml_array PROPERTIES LABELS app
    PASS_REGULAR_EXPRESSION "\nno_decay = \\[\"bias\", \"norm\"\\]\n")
  # A graph model trains with no weight decay on its biases; its summary shows the graph.
  add_test(NAME app_no_decay_trains_resmlp
           COMMAND ${_mpirun} -q -np 2 ${_st} --model.name resmlp --optimizer.no_decay bias --optimizer.weight_decay 0.01
                   --train.max_steps 3 --train.evaluate false)
  set_tests_properties(app_no_decay_trains_resmlp PROPERTIES PROCESSORS 2 LABELS "app;mpi" TIMEOUT 120)
  add_test(NAME app_summary_of_a_graph COMMAND ${_st} --model.name branchnet --summary)
  set_tests_properties(app_summary_of_a_graph PROPERTIES LABELS app
    PASS_REGULAR_EXPRESSION "add \\(Add\\)[^\n]*stem\\[0\\]\\[0\\], cat\\[0\\]\\[0\\]")
  # model.input and model.classes: with both set, --summary builds the model without a data set; in
  # training they must match the data set's shape, and an error names both.
  add_test(NAME app_summary_resnet50_without_data
           COMMAND ${_st} --model.name resnet50 --model.input 224,224,3 --model.classes 1000 --summary
                   --data.path /nonexistent/imagenet.h5)
  set_tests_properties(app_summary_resnet50_without_data PROPERTIES LABELS app
    PASS_REGULAR_EXPRESSION "Total params: 25,557,032\n.*Buffers: 53,173 values in 159 tensors")
  add_test(NAME app_model_input_differs_from_data COMMAND ${_fail}
           "model.input is [32, 32, 3] but the samples of the data set (data.path = synthetic) are [28, 28, 1]"
           -- ${_mpirun} -q -np 2 ${_st} --model.input 32,32,3 --train.max_steps 1 --data.synthetic_samples 1024)
  add_test(NAME app_model_input_malformed COMMAND ${_fail}
           "command line: model.input expects H,W,C (three positive integers, as 224,224,3), got '224x224x3'"
           -- ${_mpirun} -q -np 2 ${_st} --model.input 224x224x3 --summary)
  add_test(NAME app_model_classes_differ_from_data COMMAND ${_fail}
           "model.classes is 100 but the data set (data.path = synthetic) has 10 classes"
           -- ${_mpirun} -q -np 2 ${_st} --model.name resnet20 --model.classes 100 --summary)
  set_tests_properties(app_model_input_differs_from_data app_model_input_malformed app_model_classes_differ_from_data
    PROPERTIES PROCESSORS 2 LABELS "app;mpi" TIMEOUT 120)
  # The start-up: the rank table, run.device = auto resolved, precision, only the changed keys.
  set(_quiet ${CMAKE_CURRENT_BINARY_DIR}/quiet_start)
  add_test(NAME app_quiet_start
           COMMAND ${_fresh} ${_quiet} ${CMAKE_CURRENT_SOURCE_DIR}/support/expect_output.sh 120
                   --has "^run\\.device = auto -> cpu \\((this build has no CUDA backend|no GPU visible)\\)$"
                   --has "^configuration: 3 key\\(s\\) differ from the defaults \\(all keys: ${_quiet}/config\\.toml\\):$"
                   --has "^  train\\.max_steps = 5$" --has "^  run\\.dir = \"${_quiet}\"$"
                   --lacks "^\\[[a-z]+\\]$" --lacks "^warmup_log_steps = "
                   --has "mean samples/s not measured \\(every step was warm-up: train\\.warmup_log_steps = 5\\)"
                   --has "all-reduce exposed [0-9.]+% of step time \\(the buckets' all-reduce times add up to [0-9.]+% of it: they overlap backward and each other\\)"
                   -- ${_mpirun} -np 2 ${_st} --train.max_steps 5 --data.synthetic_samples 1024 --run.dir ${_quiet})
  add_test(NAME app_quiet_start_files
           COMMAND /usr/bin/python3 -c "
import json, sys, tomllib
d = sys.argv[1]
cfg = tomllib.load(open(d + '/config.toml', 'rb'))
run = json.load(open(d + '/run.json'))
lines = [json.loads(l) for l in open(d + '/metrics.jsonl')]
ok = (cfg['train']['max_steps'] == 5 and cfg['run']['device'] == 'cpu' and 'testing' not in cfg
      and 'testing' not in run['config'] and run['version'] == 4
      and all(l['epoch'] == 1 for l in lines if 'epoch' in l) and run['epochs'][0]['epoch'] == 1)
print('config.toml', cfg['train'], 'run.json epochs', [e['epoch'] for e in run['epochs']], 'metrics epochs',
      sorted({l['epoch'] for l in lines if 'epoch' in l}))
sys.exit(0 if ok else 1)" ${_quiet})
  set_tests_properties(app_quiet_start PROPERTIES PROCESSORS 2 LABELS "app;mpi" TIMEOUT 120 FIXTURES_SETUP app_quiet)
  set_tests_properties(app_quiet_start_files PROPERTIES LABELS app FIXTURES_REQUIRED app_quiet)
  add_test(NAME app_run_dir_refused_overwritten_resumed
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/support/run_dir_check.sh ${_st} ${CMAKE_CURRENT_BINARY_DIR}/run_dir_guard
                   ${_mpirun})
  set_tests_properties(app_run_dir_refused_overwritten_resumed PROPERTIES PROCESSORS 2 LABELS "app;mpi" TIMEOUT 300)
endif()
