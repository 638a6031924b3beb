# Checkpoint and restart end to end (tests/support/resume_check.sh against uninterrupted runs):
# bitwise resume mid-epoch at 2 ranks, 2 -> 1 and 2 -> 3 ranks within tolerance, a job killed
# between two checkpoint files, refusal of an incompatible resume, stream mode, the bf16 GEMM choice
# kept across a resume; diverged replicas caught by the checksum; run.resume = auto without run.dir;
# PyTorch loading a checkpoint (torchvision's resnet18 with its BatchNorm buffers, on Fashion-MNIST).
if(TARGET scaletrain)
  set(_st $<TARGET_FILE:scaletrain>)
  set(_rc ${CMAKE_CURRENT_SOURCE_DIR}/support/resume_check.sh ${_st} ${MPIEXEC_EXECUTABLE} ${_mpi_flags} --)
  set(_ck ${CMAKE_CURRENT_BINARY_DIR}/checkpoint)
  add_test(NAME checkpoint_resume_bitwise_np2 COMMAND ${_rc} ${_ck}/bitwise bitwise 2 25)
  # AdamW (its step count drives the bias correction) and fp16 (the loss scaler's scale and clean-step
  # count, growing every 10 steps here) must come back exactly too.
  add_test(NAME checkpoint_resume_bitwise_adamw_fp16_np2 COMMAND ${_rc} ${_ck}/bitwise_adamw_fp16 bitwise 2 25)
  set_tests_properties(checkpoint_resume_bitwise_adamw_fp16_np2 PROPERTIES ENVIRONMENT
                       "EXTRA=--optimizer.name adamw --train.precision fp16 --optimizer.loss_scale_interval 10;LR=0.001")
  # Graph models: summed gradients, Add and Concat, parameters by node name.
  foreach(model resmlp branchnet)
    add_test(NAME checkpoint_resume_bitwise_${model}_np2 COMMAND ${_rc} ${_ck}/bitwise_${model} bitwise 2 25)
    set_tests_properties(checkpoint_resume_bitwise_${model}_np2 PROPERTIES ENVIRONMENT "MODEL=${model}"
                         PROCESSORS 2 LABELS "checkpoint;mpi" TIMEOUT 300)
  endforeach()
  # BatchNorm: the running statistics and num_batches_tracked (buffers, rank 0's in a checkpoint) come
  # back too. No loss shows them (train.evaluate false), so the final checkpoints' model.h5, buffers
  # included, must be bitwise identical (REQUIRE_BUFFERS: the model has them and they were updated).
  # Global batch 12 over 480 samples keeps resume_check.sh's 40 steps per epoch at half the cost.
  add_test(NAME checkpoint_resume_bitwise_resnet20_np2 COMMAND ${_rc} ${_ck}/bitwise_resnet20 bitwise 2 25)
  set_tests_properties(checkpoint_resume_bitwise_resnet20_np2 PROPERTIES
                       ENVIRONMENT "MODEL=resnet20;BATCH=12;SAMPLES=480;REQUIRE_BUFFERS=1"
                       PROCESSORS 2 LABELS "checkpoint;mpi" TIMEOUT 300)
  # mobilenet_v2 (28x28x1: its last blocks on 1x1 grids): BatchNorm buffers, ReLU6, inverted residuals and
  # the classifier's dropout, whose masks must continue where they stopped.
  add_test(NAME checkpoint_resume_bitwise_mobilenet_v2_np2 COMMAND ${_rc} ${_ck}/bitwise_mobilenet_v2 bitwise 2 25)
  set_tests_properties(checkpoint_resume_bitwise_mobilenet_v2_np2 PROPERTIES
                       ENVIRONMENT "MODEL=mobilenet_v2;BATCH=12;SAMPLES=480;REQUIRE_BUFFERS=1"
                       PROCESSORS 2 LABELS "checkpoint;mpi" TIMEOUT 300)
  # A small ViT (16 patches of 7x7, 2 blocks of 2 heads) with dropout: class token, position embedding,
  # LayerNorm, attention and GELU parameters by torchvision's names, the dropout masks continuing.
  add_test(NAME checkpoint_resume_bitwise_vit_np2 COMMAND ${_rc} ${_ck}/bitwise_vit bitwise 2 25)
  set_tests_properties(checkpoint_resume_bitwise_vit_np2 PROPERTIES
                       ENVIRONMENT "MODEL=vit;BATCH=12;SAMPLES=480;EXTRA=--model.vit.patch_size 7 --model.vit.num_layers 2 --model.vit.num_heads 2 --model.vit.hidden_dim 32 --model.vit.mlp_dim 64 --model.dropout 0.1"
                       PROCESSORS 2 LABELS "checkpoint;mpi" TIMEOUT 300)
  add_test(NAME checkpoint_resume_2_to_1_ranks COMMAND ${_rc} ${_ck}/2_to_1 ranks 2 1 25 1e-5)
  add_test(NAME checkpoint_resume_2_to_3_ranks COMMAND ${_rc} ${_ck}/2_to_3 ranks 2 3 25 1e-5)
  add_test(NAME checkpoint_crash_between_files_np2 COMMAND ${_rc} ${_ck}/crash crash 2)
  add_test(NAME checkpoint_resume_refused_np2 COMMAND ${_rc} ${_ck}/refuse refuse 2)
  add_test(NAME checkpoint_resume_stream_np2 COMMAND ${_rc} ${_ck}/stream stream 2 1)
  # mlp: all its operators are GEMMs. With lenet_dropout's few small ones, the two ways gave bitwise
  # equal losses at 2 ranks on an AMD EPYC with AVX512-BF16, so the comparisons could not fail.
  add_test(NAME checkpoint_resume_keeps_bf16_gemm_choice_np2 COMMAND ${_rc} ${_ck}/bf16_gemm bf16_gemm 2 25)
  set_tests_properties(checkpoint_resume_keeps_bf16_gemm_choice_np2 PROPERTIES SKIP_RETURN_CODE 77
                       ENVIRONMENT "MODEL=mlp")
  set_tests_properties(checkpoint_resume_bitwise_np2 checkpoint_resume_bitwise_adamw_fp16_np2
                       checkpoint_resume_2_to_1_ranks checkpoint_resume_2_to_3_ranks
                       checkpoint_crash_between_files_np2 checkpoint_resume_refused_np2 checkpoint_resume_stream_np2
                       checkpoint_resume_keeps_bf16_gemm_choice_np2 PROPERTIES PROCESSORS 2 LABELS "checkpoint;mpi" TIMEOUT 300)

  add_test(NAME checkpoint_diverged_replicas_named
           COMMAND ${_fail} "the parameters of rank(s) 1 differ from rank 0's" --
                   ${_fresh} ${_ck}/diverged ${_mpirun} -np 2 ${_st} --train.max_steps 3 --train.evaluate false
                   --run.dir ${_ck}/diverged --testing.inject_divergence_rank 1)
  # run.checkpoint_seconds: rank 0's clock decides for both ranks (a tiny interval: every step).
  add_test(NAME checkpoint_every_seconds_np2
           COMMAND ${_fresh} ${_ck}/seconds ${_mpirun} -np 2 ${_st} --train.max_steps 4 --train.evaluate false
                   --run.dir ${_ck}/seconds --run.checkpoint_seconds 0.000001 --run.checkpoint_at_end false)
  set_tests_properties(checkpoint_every_seconds_np2 PROPERTIES PROCESSORS 2 LABELS "checkpoint;mpi" TIMEOUT 120
                       PASS_REGULAR_EXPRESSION "checkpoints/step-1 .*checkpoints/step-2 .*checkpoints/step-3 .*checkpoints/step-4 ")
  add_test(NAME checkpoint_resume_auto_needs_run_dir
           COMMAND ${_fail} "run.resume = auto continues from run.dir/checkpoints/latest, but run.dir is not set" --
                   ${_mpirun} -np 2 ${_st} --train.max_steps 3 --run.resume auto)
  set_tests_properties(checkpoint_diverged_replicas_named checkpoint_resume_auto_needs_run_dir
                       PROPERTIES PROCESSORS 2 LABELS "checkpoint;mpi" TIMEOUT 120)

  if(TARGET scaletrain-checkpoint)
    list(JOIN _mpi_flags " " _mpi_flags_text)
    foreach(model lenet fmnist_sepcnn)
      add_test(NAME checkpoint_pytorch_loads_${model}
               COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/support/check_torch_checkpoint.py
                       --scaletrain ${_st} --tool $<TARGET_FILE:scaletrain-checkpoint>
                       --mpirun "${MPIEXEC_EXECUTABLE} ${_mpi_flags_text}" --model ${model} --out ${_ck}/torch_${model})
      set_tests_properties(checkpoint_pytorch_loads_${model} PROPERTIES PROCESSORS 2 LABELS "checkpoint;mpi;pytorch"
                           TIMEOUT 300 PASS_REGULAR_EXPRESSION "OK: with the columns of"
                           FIXTURES_SETUP checkpoint_${model})
    endforeach()
    # torchvision's mobilenet_v2, vgg16 (a 64-wide classifier) and inception_v3 load checkpoints of two steps
    # on synthetic 3-channel data and give scaletrain-checkpoint's logits: vgg16 at 32x32, mobilenet_v2 at
    # 64x64 (at 32x32 its last blocks see 1x1 grids, two values per channel and rank, and two steps left
    # weights near 1e3 that overflow float32 in torch's evaluation), inception_v3 at 299x299 (the size its
    # auxiliary head trains at), and the small ViT of the parity references (patch 8, 2 layers) at 32x32.
    foreach(model mobilenet_v2 vgg16 inception_v3 vit)
      set(_size 32)
      if(model STREQUAL mobilenet_v2)
        set(_size 64)
      elseif(model STREQUAL inception_v3)
        set(_size 299)
      endif()
      add_test(NAME checkpoint_pytorch_loads_${model}
               COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/support/check_torch_checkpoint.py
                       --scaletrain ${_st} --tool $<TARGET_FILE:scaletrain-checkpoint>
                       --mpirun "${MPIEXEC_EXECUTABLE} ${_mpi_flags_text}" --model ${model} --steps 2
                       --synth $<TARGET_FILE:st-synth> --size ${_size} --width 64 --out ${_ck}/torch_${model})
      set_tests_properties(checkpoint_pytorch_loads_${model} PROPERTIES PROCESSORS 2 LABELS "checkpoint;mpi;pytorch"
                           TIMEOUT 300 PASS_REGULAR_EXPRESSION "OK: with the columns of")
    endforeach()
    # torchvision's resnet18 (conv1 for one channel) loads a checkpoint of a short real Fashion-MNIST run,
    # buffers included (strict), and its test accuracy is scaletrain's own evaluation of the checkpoint.
    # The data set is data_pack_fmnist's (tests/data.cmake).
    if(EXISTS /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz)
      add_test(NAME checkpoint_pytorch_loads_resnet18
               COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/support/check_torch_checkpoint.py
                       --scaletrain ${_st} --tool $<TARGET_FILE:scaletrain-checkpoint>
                       --mpirun "${MPIEXEC_EXECUTABLE} ${_mpi_flags_text}" --model resnet18
                       --data ${CMAKE_CURRENT_BINARY_DIR}/fmnist-roundtrip.h5 --steps 40 --batch 64 --lr 0.01
                       --out ${_ck}/torch_resnet18)
      set_tests_properties(checkpoint_pytorch_loads_resnet18 PROPERTIES FIXTURES_REQUIRED fmnist_h5 PROCESSORS 2
                           LABELS "checkpoint;mpi;pytorch" TIMEOUT 300
                           PASS_REGULAR_EXPRESSION "OK: PyTorch's accuracy on scaletrain's checkpoint is scaletrain's")
    endif()
    # A directory that is not a checkpoint: the message names the tool's own argument.
    add_test(NAME checkpoint_info_names_its_argument
             COMMAND ${_fail} "the DIR argument ${CMAKE_CURRENT_SOURCE_DIR} is neither a checkpoint directory" --
                     $<TARGET_FILE:scaletrain-checkpoint> info ${CMAKE_CURRENT_SOURCE_DIR})
    set_tests_properties(checkpoint_info_names_its_argument PROPERTIES LABELS checkpoint
                         FAIL_REGULAR_EXPRESSION "run\\.resume")
    add_test(NAME checkpoint_info_prints_contents COMMAND $<TARGET_FILE:scaletrain-checkpoint> info ${_ck}/torch_lenet/run)
    set_tests_properties(checkpoint_info_prints_contents PROPERTIES FIXTURES_REQUIRED checkpoint_lenet
                         LABELS checkpoint PASS_REGULAR_EXPRESSION "position +step 20.*7\\.weight +\\[120, 400\\] +\\(columns HWC -> CHW\\).*momentum_buffer")
  endif()
endif()
