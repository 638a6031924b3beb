// The per-rank loader: staging or streaming sources behind a reader thread and a ring of batches.
#include "scaletrain/backend/device_counters.hpp"
#include "scaletrain/data/loader.hpp"

#include <algorithm>
#include <cstring>

#include "scaletrain/core/error.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/data/node_groups.hpp"
#include "scaletrain/data/node_local_share.hpp"
#include "scaletrain/data/shared_split.hpp"
#include "scaletrain/data/split_parts.hpp"
#include "scaletrain/data/stage_space.hpp"

namespace scaletrain::data {

LoaderMode parse_loader_mode(const std::string& name) {
  if (name == "stage") return LoaderMode::stage;
  if (name == "stream") return LoaderMode::stream;
  ST_FAIL("data.mode = '", name, "' is not one of stage, stream");
}

std::string loader_mode_name(LoaderMode m) { return m == LoaderMode::stage ? "stage" : "stream"; }

StageCopy parse_stage_copy(const std::string& name) {
  if (name == "node") return StageCopy::node;
  if (name == "rank") return StageCopy::rank;
  ST_USER_FAIL("data.stage_copy = '", name, "' is not one of node (one copy per node, in shared memory), rank");
}

std::string stage_copy_name(StageCopy c) { return c == StageCopy::node ? "node" : "rank"; }

DataLoader::DataLoader(LoaderOptions options, int rank, int world)
    : o_(std::move(options)), mode_(o_.mode), rank_(rank), world_(world) {
  ST_CHECK(o_.batch > 0, "loader batch must be positive, got ", o_.batch);
  ST_CHECK(o_.prefetch >= 1, "data.prefetch must be at least 1, got ", o_.prefetch);
  ST_CHECK(world >= 1 && rank >= 0 && rank < world, "bad rank ", rank, " of ", world);
  file_ = std::make_unique<DatasetFile>(o_.path, std::vector<std::string>{o_.split});
  info_ = file_->info(o_.split);
  sample_bytes_ = static_cast<size_t>(shape_numel(info_.sample_shape)) * dtype_size(info_.dtype);
  plan_ = make_shard_plan(info_.num_samples, world, o_.batch, o_.drop_remainder);

  if (mode_ == LoaderMode::stage) stage_split();
  allocate_slots();
}

// Stage mode: the split (or the node's share of it) where the options say, and what it cost.
void DataLoader::stage_split() {
  const StageOptions& so = o_.stage;
  if (o_.comm == MPI_COMM_NULL || so.copy == StageCopy::rank) {
    ST_USER_CHECK(!so.node_shuffle, "data.shuffle = node needs data.stage_copy = node");
    stage_own_copy();
  } else {
    groups_ = std::make_unique<NodeGroups>(o_.comm, so.node_ranks);
    if (so.node_shuffle) {
      share_ = std::make_unique<NodeLocalShare>(*file_, info_, *groups_,
                                                NodeShareOptions{so.dir, o_.batch, o_.drop_remainder, so.hang_rank});
      plan_.steps_per_epoch = share_->steps_per_epoch();
      stats_.staging = share_->report();
    } else {
      shared_ = std::make_unique<SharedSplit>(*file_, info_, *groups_, SharedStageOptions{so.memory_gb, so.hang_rank});
      split_samples_ = shared_->samples();
      split_labels_ = shared_->labels();
      stats_.staging = shared_->report();
    }
  }
  stats_.read_seconds = stats_.staging.read_seconds;
  stats_.read_bytes = stats_.staging.read_bytes;
}

// Every rank its own copy of the whole split, read with large contiguous reads.
void DataLoader::stage_own_copy() {
  const StagingMeter meter;
  Shape all{info_.num_samples};
  all.insert(all.end(), info_.sample_shape.begin(), info_.sample_shape.end());
  staged_samples_ = Tensor(all, info_.dtype);
  staged_labels_.resize(static_cast<size_t>(info_.num_samples));
  StagingReport& r = stats_.staging;
  NonFiniteScan scan;
  r.read_bytes = read_part(*file_, info_, RowRange{0, info_.num_samples}, static_cast<uint8_t*>(staged_samples_.raw()),
                           staged_labels_.data(), &scan);
  if (scan.any()) ST_USER_FAIL(nonfinite_message(info_.path, info_.split, scan));
  split_samples_ = static_cast<const uint8_t*>(staged_samples_.raw());
  split_labels_ = staged_labels_.data();
  r.where = "rank memory";
  r.split_bytes = r.node_read_bytes = r.node_bytes = r.read_bytes;
  r.stored_bytes = info_.stored_bytes;
  meter.finish(r);
  r.read_seconds = r.seconds;
}

void DataLoader::allocate_slots() {
  ring_.resize(static_cast<size_t>(o_.prefetch));
  Shape bs{o_.batch};
  bs.insert(bs.end(), info_.sample_shape.begin(), info_.sample_shape.end());
  Backend* be = o_.backend;
  copies_ = be != nullptr && !host_accessible(be->device());
  for (size_t i = 0; i < ring_.size(); ++i) {
    Slot& s = ring_[i];
    const std::string slot = "batch slot " + std::to_string(i);
    Batch& b = s.batch;
    b.samples = be ? be->pinned(bs, info_.dtype, slot + " samples") : Tensor(bs, info_.dtype, slot + " samples");
    b.labels =
        be ? be->pinned({o_.batch}, DType::i32, slot + " labels") : Tensor({o_.batch}, DType::i32, slot + " labels");
    // Pinned like the samples (cudaHostAlloc on CUDA), so all three copies of a slot are asynchronous.
    s.host_indices =
        be ? be->pinned({o_.batch}, DType::i64, slot + " indices") : Tensor({o_.batch}, DType::i64, slot + " indices");
    b.indices.resize(static_cast<size_t>(o_.batch));
    if (!be) continue;
    if (copies_) {
      b.device_samples = be->empty(bs, info_.dtype, "device " + slot + " samples");
      b.device_labels = be->empty({o_.batch}, DType::i32, "device " + slot + " labels");
      b.device_indices = be->empty({o_.batch}, DType::i64, "device " + slot + " indices");
    } else {
      b.device_samples = b.samples;
      b.device_labels = b.labels;
      b.device_indices = s.host_indices;
    }
    s.copy_begin = be->make_event(slot + " copy begin");
    s.copied = be->make_event(slot + " batch copied");
    s.consumed = be->make_event(slot + " consumed");
    b.copied = s.copied.get();
  }
}

DataLoader::~DataLoader() { stop_reader(); }

void DataLoader::stop_reader() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (reader_.joinable()) reader_.join();
  for (Slot& s : ring_) finish_copy(s);
}

void DataLoader::finish_copy(Slot& slot) {
  if (!slot.copy_pending) return;
  slot.copied->synchronize();
  const CopyRecord r{slot.batch.step_in_epoch, slot.copy_begin->completion_time(), slot.copied->completion_time()};
  slot.copy_pending = false;
  std::lock_guard lock(mu_);
  copy_records_.push_back(r);
}

void DataLoader::stage_to_device(Slot& slot) {
  Batch& b = slot.batch;
  std::copy(b.indices.begin(), b.indices.end(), slot.host_indices.data<int64_t>());
  if (!o_.backend) return;
  Stream& copy = o_.backend->copy_stream();
  if (!copies_) {
    copy.record(*slot.copied);
    return;
  }
  copy.wait(*slot.consumed);  // the compute stream has finished with the device slot
  copy.record(*slot.copy_begin);
  o_.backend->copy_async(copy, b.device_samples, b.samples);
  o_.backend->copy_async(copy, b.device_labels, b.labels);
  o_.backend->copy_async(copy, b.device_indices, slot.host_indices);
  copy.record(*slot.copied);
  slot.copy_pending = true;
}

std::vector<CopyRecord> DataLoader::take_copy_records() {
  std::lock_guard lock(mu_);
  std::vector<CopyRecord> out;
  out.swap(copy_records_);
  return out;
}

void DataLoader::start_epoch(int64_t epoch, int64_t first_step) {
  ST_CHECK(first_step >= 0 && first_step <= plan_.steps_per_epoch, "loader of ", o_.path, ": step ", first_step,
           " is outside an epoch of ", plan_.steps_per_epoch, " steps");
  stop_reader();
  {
    std::lock_guard lock(mu_);
    stop_ = false;
    error_ = nullptr;
    produced_ = consumed_ = released_ = first_step;
    for (Slot& s : ring_) s.filled = false;
  }
  reader_ = std::thread([this, epoch, first_step] {
    DeviceCounters::mark_background_thread();
    reader_main(epoch, first_step);
  });
}

void DataLoader::reader_main(int64_t epoch, int64_t first_step) {
  try {
    if (share_)
      produce_node_share(epoch, first_step);
    else if (mode_ == LoaderMode::stage)
      produce_stage(epoch, first_step);
    else
      produce_stream(epoch, first_step);
  } catch (...) {
    std::lock_guard lock(mu_);
    error_ = std::current_exception();
  }
  cv_.notify_all();
}

bool DataLoader::acquire_free_slot(int64_t step, Slot*& slot) {
  std::unique_lock lock(mu_);
  // Slot step % K is free once the consumer released step - K.
  cv_.wait(lock, [&] { return stop_ || released_ > step - static_cast<int64_t>(ring_.size()); });
  if (stop_) return false;
  slot = &ring_[static_cast<size_t>(step % static_cast<int64_t>(ring_.size()))];
  lock.unlock();
  finish_copy(*slot);  // the pinned slot is refilled only once its last copy has completed
  return true;
}

void DataLoader::publish(Slot& slot) {
  // Labels are checked here, on the host, before they travel to a device.
  const int64_t classes = static_cast<int64_t>(info_.classes.size());
  const int32_t* labels = slot.batch.labels.data<int32_t>();
  for (int64_t r = 0; r < o_.batch && classes > 0; ++r)
    ST_CHECK(labels[r] >= 0 && labels[r] < classes, o_.path, ": split '", o_.split, "' sample ",
             slot.batch.indices[static_cast<size_t>(r)], " has label ", labels[r], ", outside [0, ", classes,
             ") of the file's ", classes, " classes; repack the data set");
  stage_to_device(slot);
  {
    std::lock_guard lock(mu_);
    slot.filled = true;
    ++produced_;
  }
  cv_.notify_all();
}

void DataLoader::produce_stage(int64_t epoch, int64_t first_step) {
  const std::vector<int64_t> perm = epoch_permutation(info_.num_samples, o_.seed, epoch, o_.shuffle);
  const uint8_t* src = split_samples_;
  for (int64_t s = first_step; s < plan_.steps_per_epoch; ++s) {
    Slot* slot = nullptr;
    if (!acquire_free_slot(s, slot)) return;
    Batch& b = slot->batch;
    auto* dst = static_cast<uint8_t*>(b.samples.raw());
    int32_t* labels = b.labels.data<int32_t>();
    for (int64_t r = 0; r < o_.batch; ++r) {
      const int64_t idx = perm[static_cast<size_t>(global_position(plan_, rank_, s, r) % info_.num_samples)];
      std::memcpy(dst + static_cast<size_t>(r) * sample_bytes_, src + static_cast<size_t>(idx) * sample_bytes_,
                  sample_bytes_);
      labels[r] = split_labels_[idx];
      b.indices[static_cast<size_t>(r)] = idx;
    }
    b.step_in_epoch = s;
    b.valid = data::valid_rows(plan_, rank_, s);
    publish(*slot);
  }
}

// data.shuffle = node: this node's share in its order of the epoch, read from the local file.
void DataLoader::produce_node_share(int64_t epoch, int64_t first_step) {
  const std::vector<int64_t> order = share_->order(o_.seed, epoch, o_.shuffle);
  for (int64_t s = first_step; s < plan_.steps_per_epoch; ++s) {
    Slot* slot = nullptr;
    if (!acquire_free_slot(s, slot)) return;
    Batch& b = slot->batch;
    auto* dst = static_cast<uint8_t*>(b.samples.raw());
    int32_t* labels = b.labels.data<int32_t>();
    const double t0 = now_seconds();
    for (int64_t r = 0; r < o_.batch; ++r) {
      const int64_t row = order[static_cast<size_t>(share_->position(s, r))];
      share_->read_sample(row, dst + static_cast<size_t>(r) * sample_bytes_);
      labels[r] = share_->label(row);
      b.indices[static_cast<size_t>(r)] = share_->split_index(row);
    }
    {
      std::lock_guard lock(mu_);
      stats_.read_seconds += now_seconds() - t0;
      stats_.read_bytes += o_.batch * static_cast<int64_t>(sample_bytes_);
    }
    b.step_in_epoch = s;
    b.valid = share_->valid_rows(s);
    publish(*slot);
  }
}

void DataLoader::produce_stream(int64_t epoch, int64_t first_step) {
  const int64_t n = info_.num_samples;
  const int64_t chunk = std::max<int64_t>(1, info_.chunk_samples);
  const int64_t chunks = (n + chunk - 1) / chunk;
  const std::vector<int64_t> chunk_order = epoch_permutation(chunks, o_.seed ^ 0x5EEDull, epoch, o_.shuffle);
  // The epoch's sample sequence is the chunks in that order; this rank owns the block
  // [rank * per_rank, (rank + 1) * per_rank) of it (positions past n wrap around).
  struct Run {
    int64_t start, count;
  };
  std::vector<Run> runs;
  const int64_t per_rank = plan_.per_rank();
  {
    // Position of each chunk in the sequence, then the runs overlapping this rank's block.
    std::vector<int64_t> seq_start(static_cast<size_t>(chunks));
    int64_t pos = 0;
    for (int64_t i = 0; i < chunks; ++i) {
      seq_start[static_cast<size_t>(i)] = pos;
      const int64_t c = chunk_order[static_cast<size_t>(i)];
      pos += std::min(chunk, n - c * chunk);
    }
    int64_t want = rank_ * per_rank, left = per_rank;
    while (left > 0) {
      const int64_t p = want % n;
      const auto it = std::upper_bound(seq_start.begin(), seq_start.end(), p) - 1;
      const size_t i = static_cast<size_t>(it - seq_start.begin());
      const int64_t c = chunk_order[i];
      const int64_t within = p - *it;
      const int64_t len = std::min({std::min(chunk, n - c * chunk) - within, left});
      runs.push_back(Run{c * chunk + within, len});
      want += len;
      left -= len;
    }
  }
  const int64_t first_padding = std::max<int64_t>(0, n - rank_ * per_rank);  // rows of the block before wrapping
  const int64_t capacity = o_.shuffle ? std::max<int64_t>(o_.shuffle_buffer > 0 ? o_.shuffle_buffer : 8 * chunk, 1) : 1;
  std::vector<uint8_t> buf_samples(static_cast<size_t>(capacity) * sample_bytes_);
  std::vector<int32_t> buf_labels(static_cast<size_t>(capacity));
  std::vector<int64_t> buf_index(static_cast<size_t>(capacity));
  int64_t filled = 0;
  std::vector<uint8_t> read_samples;
  std::vector<int32_t> read_labels;
  uint64_t rng =
      o_.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch) * 1000003u + static_cast<uint64_t>(rank_) + 7;
  size_t run_i = 0;
  int64_t run_off = 0;  // rows consumed of runs[run_i]
  // Pending rows read from the file but not yet in the buffer.
  int64_t pend_n = 0, pend_i = 0, pend_start = 0;

  auto refill_pending = [&] {
    if (pend_i < pend_n || run_i >= runs.size()) return;
    const Run& r = runs[run_i];
    const int64_t len = std::min(r.count - run_off, chunk);
    read_samples.resize(static_cast<size_t>(len) * sample_bytes_);
    read_labels.resize(static_cast<size_t>(len));
    const double t0 = now_seconds();
    file_->read_samples(o_.split, r.start + run_off, len, read_samples.data());
    file_->read_labels(o_.split, r.start + run_off, len, read_labels.data());
    {
      std::lock_guard lock(mu_);
      stats_.read_seconds += now_seconds() - t0;
      stats_.read_bytes += len * static_cast<int64_t>(sample_bytes_ + 4);
    }
    pend_start = r.start + run_off;
    pend_n = len;
    pend_i = 0;
    run_off += len;
    if (run_off == r.count) {
      ++run_i;
      run_off = 0;
    }
  };

  // A resumed epoch replays the steps before first_step into a scratch batch, which is not published.
  std::vector<uint8_t> replay_samples(first_step > 0 ? static_cast<size_t>(o_.batch) * sample_bytes_ : 0);
  std::vector<int32_t> replay_labels(first_step > 0 ? static_cast<size_t>(o_.batch) : 0);
  std::vector<int64_t> replay_indices(replay_labels.size());
  for (int64_t s = 0; s < plan_.steps_per_epoch; ++s) {
    const bool replay = s < first_step;
    Slot* slot = nullptr;
    if (!replay && !acquire_free_slot(s, slot)) return;
    Batch* b = replay ? nullptr : &slot->batch;
    auto* dst = replay ? replay_samples.data() : static_cast<uint8_t*>(b->samples.raw());
    int32_t* labels = replay ? replay_labels.data() : b->labels.data<int32_t>();
    int64_t* indices = replay ? replay_indices.data() : b->indices.data();
    for (int64_t row = 0; row < o_.batch; ++row) {
      // Top the buffer up to capacity (or until the block is exhausted).
      while (filled < capacity) {
        refill_pending();
        if (pend_i >= pend_n) break;
        std::memcpy(buf_samples.data() + static_cast<size_t>(filled) * sample_bytes_,
                    read_samples.data() + static_cast<size_t>(pend_i) * sample_bytes_, sample_bytes_);
        buf_labels[static_cast<size_t>(filled)] = read_labels[static_cast<size_t>(pend_i)];
        buf_index[static_cast<size_t>(filled)] = pend_start + pend_i;
        ++pend_i;
        ++filled;
      }
      ST_CHECK(filled > 0, "stream loader of ", o_.path, " ran out of samples (internal error)");
      const int64_t j =
          o_.shuffle ? static_cast<int64_t>((splitmix64(rng) >> 32) * static_cast<uint64_t>(filled) >> 32) : 0;
      std::memcpy(dst + static_cast<size_t>(row) * sample_bytes_,
                  buf_samples.data() + static_cast<size_t>(j) * sample_bytes_, sample_bytes_);
      labels[row] = buf_labels[static_cast<size_t>(j)];
      indices[row] = buf_index[static_cast<size_t>(j)];
      // Fill the hole: with shuffling, move the last entry in; without, keep order (capacity is 1).
      --filled;
      if (j != filled) {
        std::memcpy(buf_samples.data() + static_cast<size_t>(j) * sample_bytes_,
                    buf_samples.data() + static_cast<size_t>(filled) * sample_bytes_, sample_bytes_);
        buf_labels[static_cast<size_t>(j)] = buf_labels[static_cast<size_t>(filled)];
        buf_index[static_cast<size_t>(j)] = buf_index[static_cast<size_t>(filled)];
      }
    }
    if (replay) continue;
    b->nonfinite = scan_samples(dst, info_.dtype, o_.batch, shape_numel(info_.sample_shape), indices);
    b->step_in_epoch = s;
    b->valid = std::clamp<int64_t>(first_padding - s * o_.batch, 0, o_.batch);
    publish(*slot);
  }
}

const Batch* DataLoader::next() {
  const double t0 = now_seconds();
  std::unique_lock lock(mu_);
  if (consumed_ >= plan_.steps_per_epoch) return nullptr;
  Slot& slot = ring_[static_cast<size_t>(consumed_ % static_cast<int64_t>(ring_.size()))];
  cv_.wait(lock, [&] { return slot.filled || error_ || stop_; });
  if (error_) std::rethrow_exception(error_);
  ST_CHECK(slot.filled, "loader of ", o_.path, " was stopped");
  ++consumed_;
  stats_.wait_seconds += now_seconds() - t0;
  return &slot.batch;
}

void DataLoader::release(const Batch* batch) {
  {
    std::lock_guard lock(mu_);
    Slot& slot = ring_[static_cast<size_t>(released_ % static_cast<int64_t>(ring_.size()))];
    ST_CHECK(&slot.batch == batch, "batches must be released in the order next() returned them");
    if (o_.backend) o_.backend->compute_stream().record(*slot.consumed);
    slot.filled = false;
    ++released_;
  }
  cv_.notify_all();
}

LoaderStats DataLoader::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void DataLoader::reset_stats() {
  std::lock_guard lock(mu_);
  const StagingReport staging = stats_.staging;
  stats_ = LoaderStats{};
  stats_.staging = staging;
}

}  // namespace scaletrain::data
