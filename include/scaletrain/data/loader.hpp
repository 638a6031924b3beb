// DataLoader: one rank's batches of one split, produced by a reader thread into a bounded ring of
// `prefetch` batch slots while the model computes. Samples stay as stored (uint8 images are not
// converted here: normalization and augmentation are kernels on the compute device).
//
//   stage:  the split is read into memory once with large contiguous reads; every epoch a global
//           permutation from (seed, epoch) is cut into equal per-rank shards (data/sharding.hpp),
//           so N ranks see exactly the batches 1 rank would, split N ways. Given a communicator,
//           one copy per node in MPI shared memory, each byte of the file read once per job
//           (data/shared_split.hpp); with stage.node_shuffle, each node's share on local storage,
//           shuffled within the node (data/node_local_share.hpp). Without one, or with
//           stage.copy = rank, every rank reads its own copy.
//   stream: for data larger than memory. Chunks of the HDF5 file are visited in a permuted order
//           from (seed, epoch); rank r takes the r-th contiguous block of that sequence, reads it
//           chunk by chunk and draws its batches through a shuffle buffer.
// NaN and inf in float samples: stage mode refuses the split as it is staged (every rank the same
// error); stream mode counts them in each batch (Batch::nonfinite) for the step to agree on.
// In both modes every rank gets the same number of batches (the remainder is dropped, or padded
// by wrapping around when drop_remainder is false), and every sample is read once per epoch.
//
// Device staging (options.backend set): each of the K slots is a pinned host batch (Backend::pinned:
// cudaHostAlloc on CUDA, so the copies are truly asynchronous) and a device batch. The reader fills the pinned slot, then queues its copy on the backend's copy stream
// (after the compute stream's last read of the device slot, an event) and records `copied`; the
// consumer's compute stream waits on `copied` before it reads the device batch, and release()
// records `consumed` on the compute stream. The reader refills a pinned slot only once its
// previous copy has completed. On a backend whose device memory is the host's, the device batch
// is the pinned batch itself and nothing is copied.
#pragma once
#include <mpi.h>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/core/tensor.hpp"
#include "scaletrain/data/dataset_file.hpp"
#include "scaletrain/data/nonfinite_scan.hpp"
#include "scaletrain/data/sharding.hpp"
#include "scaletrain/data/staging_report.hpp"

namespace scaletrain::data {

class NodeGroups;
class SharedSplit;
class NodeLocalShare;

enum class LoaderMode { stage, stream };
LoaderMode parse_loader_mode(const std::string& name);  // "stage" | "stream"; Error otherwise
std::string loader_mode_name(LoaderMode m);

// Where stage mode keeps the split: one copy per node (MPI shared memory) or one per rank.
enum class StageCopy { node, rank };
StageCopy parse_stage_copy(const std::string& name);  // "node" | "rank"; UserError otherwise
std::string stage_copy_name(StageCopy c);

struct StageOptions {
  StageCopy copy = StageCopy::node;  // data.stage_copy
  int node_ranks = 0;                // data.node_ranks: ranks per virtual node (0: the machine)
  double memory_gb = 0;              // data.stage_memory_gb (0: 3/4 of MemAvailable)
  std::string dir;                   // data.stage_dir: each node's share on local storage
  bool node_shuffle = false;         // data.shuffle = node (needs dir)
  int hang_rank = -1;                // testing.inject_stage_hang_rank
};

struct LoaderOptions {
  std::string path;
  std::string split = "train";
  int64_t batch = 32;  // per rank
  uint64_t seed = 42;
  LoaderMode mode = LoaderMode::stage;
  int prefetch = 4;            // batches in the ring
  bool drop_remainder = true;
  bool shuffle = true;
  int64_t shuffle_buffer = 0;  // stream mode, in samples; 0: 8 chunks
  Backend* backend = nullptr;  // device staging; null: host batches only
  // Stage mode across ranks: the ranks of comm stage together (collective over comm). Null: this
  // rank stages its own copy.
  MPI_Comm comm = MPI_COMM_NULL;
  StageOptions stage;
};


struct Batch {
  Tensor samples;  // [batch, ...sample_shape], the file's dtype (pinned host memory)
  Tensor labels;   // [batch] int32
  int64_t step_in_epoch = 0;
  int64_t valid = 0;             // rows that are real samples (the rest is wrap-around padding)
  std::vector<int64_t> indices;  // the sample index of each row in the split
  NonFiniteScan nonfinite;       // stream mode: the batch's NaN/inf (stage mode refuses the split when staged)
  // With device staging: the same batch on the device (the host tensors themselves when the
  // device is the host), and the event to wait on before reading them.
  Tensor device_samples, device_labels, device_indices;  // indices: i64 [batch]
  Event* copied = nullptr;
};

// One batch's host-to-device copy on the copy stream (steady-clock seconds), for timelines.
struct CopyRecord {
  int64_t step_in_epoch;
  double start, end;
};

struct LoaderStats {
  double wait_seconds = 0;  // time next() blocked waiting for the reader
  double read_seconds = 0;  // time the reader spent in HDF5 reads
  int64_t read_bytes = 0;
  StagingReport staging;    // stage mode: the initial load (kept by reset_stats)
};

class DataLoader {
 public:
  // Opens and validates the file (Error naming the file on any problem).
  DataLoader(LoaderOptions options, int rank, int world);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  const DatasetInfo& info() const { return info_; }
  const LoaderOptions& options() const { return o_; }
  const ShardPlan& plan() const { return plan_; }
  int64_t steps_per_epoch() const { return plan_.steps_per_epoch; }

  // Starts producing the batches of `epoch` from step `first_step` of it (a resumed run; stops an
  // unfinished previous epoch). Stage mode starts there directly; stream mode replays its reads and
  // shuffle buffer through the skipped steps, so the batches are those an unbroken epoch yields.
  void start_epoch(int64_t epoch, int64_t first_step = 0);
  // Stops the reader and waits for the epoch's copies (they reach take_copy_records()).
  void end_epoch() { stop_reader(); }
  // The next batch of the epoch, or nullptr at its end. Rethrows a reader error.
  const Batch* next();
  // Hands a batch's slot back to the reader. Batches must be released in order. With device
  // staging, call it after the compute stream's last read of the device batch has been queued.
  void release(const Batch* batch);
  // The copies that have completed since the last call (device staging only).
  std::vector<CopyRecord> take_copy_records();
  int64_t valid_rows(const Batch& b) const { return b.valid; }

  LoaderStats stats() const;
  void reset_stats();

 private:
  struct Slot {
    Batch batch;
    Tensor host_indices;  // pinned i64 [batch]
    std::unique_ptr<Event> copy_begin, copied, consumed;
    bool copy_pending = false;  // a copy was queued and not yet logged
    bool filled = false;
  };
  void allocate_slots();
  void finish_copy(Slot& slot);  // waits for the slot's last copy and logs it
  void stage_to_device(Slot& slot);
  void stop_reader();
  void reader_main(int64_t epoch, int64_t first_step);
  void produce_stage(int64_t epoch, int64_t first_step);
  void produce_stream(int64_t epoch, int64_t first_step);
  void produce_node_share(int64_t epoch, int64_t first_step);
  void stage_split();
  void stage_own_copy();
  bool acquire_free_slot(int64_t step, Slot*& slot);
  void publish(Slot& slot);

  LoaderOptions o_;
  LoaderMode mode_;
  bool copies_ = false;  // device staging with device memory apart from the host's
  std::vector<CopyRecord> copy_records_;
  int rank_, world_;
  std::unique_ptr<DatasetFile> file_;
  DatasetInfo info_;
  ShardPlan plan_;
  size_t sample_bytes_ = 0;
  Tensor staged_samples_;               // stage mode, own copy: the whole split
  std::vector<int32_t> staged_labels_;  // stage mode, own copy
  std::unique_ptr<NodeGroups> groups_;
  std::unique_ptr<SharedSplit> shared_;       // stage mode, one copy per node
  std::unique_ptr<NodeLocalShare> share_;     // stage mode, the node's share in stage_dir
  const uint8_t* split_samples_ = nullptr;    // the whole split (own copy or shared)
  const int32_t* split_labels_ = nullptr;

  std::vector<Slot> ring_;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::exception_ptr error_;
  int64_t produced_ = 0, consumed_ = 0, released_ = 0;
  LoaderStats stats_;
};

}  // namespace scaletrain::data
