// The short training run the N-ranks-against-1-rank MPI tests share: lenet on 480 synthetic
// samples, 6 steps of a global batch of 60 (divisible by 1 to 6 ranks), many small gradient
// buckets, one thread per rank. Each test sets what it varies (precision, device, lr, ...).
#pragma once
#include "scaletrain/train/config.hpp"

namespace scaletrain::testing {

inline train::RunConfig small_run_config() {
  train::RunConfig c;
  c.model = "lenet";
  c.data_path = "synthetic";
  c.synthetic_samples = 480;
  c.batch = 60;  // divisible by 1, 2, 3, 4, 5 and 6 ranks
  c.epochs = 1;
  c.max_steps = 6;
  c.evaluate = false;
  c.log_every = 3;
  c.momentum = 0.9;
  c.bucket_mb = comm::BucketSizeSetting::fixed(0.004);  // ~4 KB buckets: lenet's 61,706 parameters in many buckets
  c.threads = 1;
  c.device = DeviceKind::cpu;  // not auto: these tests choose their device themselves
  // These tests run a 1-rank reference trainer on every rank beside the N-rank one, in one shared
  // run directory: concurrent end-of-run checkpoints there would race (checkpoints are tested in
  // tests/checkpoint.cmake).
  c.checkpoint_at_end = false;
  return c;
}

}  // namespace scaletrain::testing
