// scaletrain-bench-allreduce: nccl-tests-style all-reduce benchmark over scaletrain's own
// Communicator (sizes doubling from --min-bytes to --max-bytes, time reduced across ranks, algbw,
// busbw, #wrong, alpha-beta fit, JSON) and, with --overlap, the GradientBuckets overlap benchmark.
// --device sim|cuda puts the buffer in device memory: --backend nccl reduces it with the device
// communicator (NCCL on cuda, which calls ncclAllReduce even at one rank), --backend mpi stages it
// through pinned host memory around MPI_Allreduce, as the trainer's comm.backend = mpi does.
#include <mpi.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/allreduce_probe.hpp"
#include "scaletrain/comm/gradient_buckets.hpp"
#include "scaletrain/comm/gradient_transport.hpp"
#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/core/mpi_environment.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/half.hpp"
#include "scaletrain/core/timer.hpp"

using namespace scaletrain;
using nlohmann::json;

namespace {

struct Options {
  std::string min_bytes = "8";
  std::string max_bytes = "256M";
  int iters = 20;
  int warmup = 5;
  std::string dtype = "f32";
  std::string op = "sum";
  bool async = false;
  std::string json_path;
  bool overlap = false;
  double overlap_mb = 64;
  int overlap_layers = 48;
  double compute_ms = 100;
  double bucket_mb = 25;
  int steps = 10;
  std::string device = "cpu";
  std::string backend = "mpi";
};

// Where the buffer lives and what reduces it (--device, --backend). cpu: host memory and the host
// communicator. sim or cuda: a device buffer reduced by the device communicator (nccl) or staged
// through pinned host memory around the host communicator (mpi).
class Transport {
 public:
  Transport(comm::Communicator& host, const Options& o) : host_(host) {
    const DeviceKind kind = parse_device_kind(o.device);
    ST_CHECK(kind != DeviceKind::automatic, "--device = auto: name the device (cpu, sim or cuda)");
    const comm::CommBackend transport = comm::parse_comm_backend(o.backend);
    ST_CHECK(transport != comm::CommBackend::auto_, "--backend = auto: name the transport (nccl or mpi)");
    if (kind == DeviceKind::cpu) {
      ST_CHECK(transport == comm::CommBackend::mpi, "--backend nccl needs device buffers (--device sim or cuda)");
      return;
    }
    BackendOptions bo;
    bo.kind = kind;
    bo.threads = 1;
    bo.local_rank = host.local_rank();
    bo.local_size = host.local_size();
    device_ = make_backend(bo);
    device_comm_ = comm::make_gradient_communicator(host, *device_, transport);
  }
  comm::Communicator& host() const { return host_; }
  Backend* device() const { return device_.get(); }                      // nullptr: host memory
  comm::Communicator* device_comm() const { return device_comm_.get(); }  // nullptr: host or staged MPI
  std::string name() const {
    if (!device_) return host_.name();
    if (device_comm_) return device_comm_->name() + " on " + device_->description();
    return host_.name() + " staged through pinned host memory, " + device_->description();
  }

 private:
  comm::Communicator& host_;
  std::unique_ptr<Backend> device_;
  std::unique_ptr<comm::Communicator> device_comm_;  // declared after device_: destroyed before it
};

// One message size's buffer: `values` on the host (filled and checked there), and where the
// transport needs one, its device copy.
class BenchBuffer {
 public:
  BenchBuffer(const Transport& t, int64_t bytes) : t_(t) {
    if (!t.device()) {
      host_ = Tensor({bytes}, DType::u8, "bench.buffer");
      return;
    }
    host_ = t.device()->pinned({bytes}, DType::u8, "bench.buffer (pinned host)");
    device_ = t.device()->empty({bytes}, DType::u8, "bench.buffer (device)");
  }
  void* values() { return host_.raw(); }
  // After the host values were written: the device copy gets them.
  void upload() {
    if (t_.device()) copy(device_, host_);
  }
  // Before the host values are read: they get the device copy's.
  void download() {
    if (t_.device()) copy(host_, device_);
  }
  void allreduce(int64_t count, DType dtype, comm::ReduceOp op, bool async) {
    if (t_.device() && !t_.device_comm()) {  // staged: device -> pinned host, MPI, pinned host -> device
      copy(host_, device_);
      reduce(t_.host(), host_.raw(), count, dtype, op, async);
      copy(device_, host_);
      return;
    }
    reduce(t_.device_comm() ? *t_.device_comm() : t_.host(), t_.device() ? device_.device_raw() : host_.raw(), count,
           dtype, op, async);
  }

 private:
  void copy(const Tensor& dst, const Tensor& src) {
    t_.device()->copy_async(t_.device()->compute_stream(), dst, src);
    t_.device()->compute_stream().synchronize();
  }
  static void reduce(comm::Communicator& c, void* buf, int64_t count, DType t, comm::ReduceOp op, bool async) {
    if (async)
      c.allreduce_async(buf, count, t, op)->wait();
    else
      c.allreduce(buf, count, t, op);
  }
  const Transport& t_;
  Tensor host_, device_;
};

// "8", "1K", "64M", "256MB", "1G": binary multiples.
int64_t parse_bytes(const std::string& text, const char* option) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    ST_FAIL(option, " = '", text, "' is not a size (examples: 8, 1K, 64M, 256MB)");
  }
  std::string unit = text.substr(used);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  double mult = 1;
  if (unit == "K" || unit == "k") mult = 1024.0;
  else if (unit == "M" || unit == "m") mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "g") mult = 1024.0 * 1024 * 1024;
  else ST_CHECK(unit.empty(), option, " = '", text, "': unknown unit '", unit, "' (use K, M or G)");
  ST_CHECK(v > 0, option, " = '", text, "' must be positive");
  return static_cast<int64_t>(v * mult);
}

comm::ReduceOp parse_op(const std::string& s) {
  if (s == "sum") return comm::ReduceOp::sum;
  if (s == "max") return comm::ReduceOp::max;
  if (s == "min") return comm::ReduceOp::min;
  ST_FAIL("--op = '", s, "' is not one of sum, max, min");
}

// Value rank r puts at element i, and the reduced value every rank must see afterwards.
// Small integers, so sums are exact in every type for the rank counts one runs here.
double input_value(int r, int64_t i) { return static_cast<double>((r + 1) * static_cast<int>(i % 3)); }
double expected_value(int n, int64_t i, comm::ReduceOp op) {
  const double k = static_cast<double>(i % 3);
  switch (op) {
    case comm::ReduceOp::sum: return k * n * (n + 1) / 2;
    case comm::ReduceOp::max: return k * n;
    case comm::ReduceOp::min: return k;
    case comm::ReduceOp::avg: return k * (n + 1) / 2;  // not offered by --op: MPI has no average
  }
  return 0;
}

void store(void* buf, DType t, int64_t i, double v) {
  switch (t) {
    case DType::f32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case DType::i32: static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v); break;
    case DType::bf16: static_cast<bf16*>(buf)[i] = float_to_bf16(static_cast<float>(v)); break;
    case DType::f16: static_cast<f16*>(buf)[i] = float_to_f16(static_cast<float>(v)); break;
    case DType::u8: static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(v); break;
    case DType::i64: static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v); break;
    case DType::f64: static_cast<double*>(buf)[i] = v; break;
  }
}
double load(const void* buf, DType t, int64_t i) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(buf)[i];
    case DType::i32: return static_cast<const int32_t*>(buf)[i];
    case DType::bf16: return bf16_to_float(static_cast<const bf16*>(buf)[i]);
    case DType::f16: return f16_to_float(static_cast<const f16*>(buf)[i]);
    case DType::u8: return static_cast<const uint8_t*>(buf)[i];
    case DType::i64: return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case DType::f64: return static_cast<const double*>(buf)[i];
  }
  return 0;
}
double rounded(DType t, double v) {
  std::vector<unsigned char> tmp(8);
  store(tmp.data(), t, 0, v);
  return load(tmp.data(), t, 0);
}

// The slowest rank's value (every rank gets it).
double max_over_ranks(comm::Communicator& c, double mine) {
  std::vector<double> all(static_cast<size_t>(c.size()));
  c.allgather(&mine, sizeof mine, all.data());
  return *std::max_element(all.begin(), all.end());
}

struct Row {
  int64_t bytes, count;
  double time_us, algbw, busbw;
  int64_t wrong;
};

std::vector<Row> sweep(const Transport& tr, const Options& o, DType t, comm::ReduceOp op, int64_t min_b, int64_t max_b) {
  comm::Communicator& c = tr.host();
  const int n = c.size();
  const int64_t esize = static_cast<int64_t>(dtype_size(t));
  std::vector<Row> rows;
  for (int64_t bytes = min_b; bytes <= max_b; bytes *= 2) {
    const int64_t count = std::max<int64_t>(1, bytes / esize);
    BenchBuffer buffer(tr, count * esize);
    void* buf = buffer.values();
    for (int64_t i = 0; i < count; ++i) store(buf, t, i, input_value(c.rank(), i));
    buffer.upload();
    for (int w = 0; w < o.warmup; ++w) buffer.allreduce(count, t, op, o.async);
    c.barrier();
    const double t0 = now_seconds();
    for (int it = 0; it < o.iters; ++it) buffer.allreduce(count, t, op, o.async);
    const double secs = max_over_ranks(c, (now_seconds() - t0) / o.iters);
    // Correctness: a fresh all-reduce of known rank-dependent data.
    for (int64_t i = 0; i < count; ++i) store(buf, t, i, input_value(c.rank(), i));
    buffer.upload();
    buffer.allreduce(count, t, op, o.async);
    buffer.download();
    double mine_wrong = 0;
    for (int64_t i = 0; i < count; ++i)
      if (load(buf, t, i) != rounded(t, expected_value(n, i, op))) mine_wrong += 1;
    std::vector<double> wrongs(static_cast<size_t>(n));
    c.allgather(&mine_wrong, sizeof mine_wrong, wrongs.data());
    double wrong = 0;
    for (double w : wrongs) wrong += w;
    const double moved = static_cast<double>(count * esize);
    const double algbw = moved / secs / 1e9;
    rows.push_back(Row{count * esize, count, secs * 1e6, algbw, algbw * 2.0 * (n - 1) / n, static_cast<int64_t>(wrong)});
    if (c.rank() == 0) {
      const Row& r = rows.back();
      std::printf("%12ld %12ld %6s %6s %10.1f %8.3f %8.3f %6ld\n", static_cast<long>(r.bytes), static_cast<long>(r.count),
                  std::string(dtype_name(t)).c_str(), o.op.c_str(), r.time_us, r.algbw, r.busbw, static_cast<long>(r.wrong));
    }
  }
  return rows;
}

// The alpha-beta fit of the table (comm/allreduce_probe.hpp: least squares on relative error).
comm::AlphaBetaFit fit_rows(const std::vector<Row>& rows) {
  std::vector<comm::AllreduceSample> samples;
  for (const Row& r : rows) samples.push_back({r.bytes, r.time_us * 1e-6});
  return comm::fit_alpha_beta(samples);
}

// Backward emulation: layers of uneven size finish one after another, each after a busy loop of
// compute_ms / layers; the progress mode decides how much of the bucket all-reduces stays hidden.
json overlap_benchmark(comm::Communicator& c, const Options& o) {
  const int64_t total = static_cast<int64_t>(o.overlap_mb * 1024 * 1024 / 4);
  std::vector<int64_t> weights(static_cast<size_t>(o.overlap_layers));
  int64_t wsum = 0;
  for (int i = 0; i < o.overlap_layers; ++i) wsum += weights[static_cast<size_t>(i)] = 1 + (i * 7) % 5;
  std::vector<comm::GradientSlice> slices;
  int64_t off = 0;
  for (int i = 0; i < o.overlap_layers; ++i) {
    const int64_t cnt = std::max<int64_t>(1, total * weights[static_cast<size_t>(i)] / wsum);
    slices.push_back({off, cnt});
    off += cnt;
  }
  std::vector<float> grads(static_cast<size_t>(off));
  // The CPU backend: the gradients are host memory, as on a CPU rank.
  const std::unique_ptr<Backend> backend = make_cpu_backend(1);
  const Tensor grads_view = Tensor::adopt(grads.data(), grads.size() * sizeof(float), {off}, DType::f32, Device::cpu,
                                          "bench.gradients", nullptr);
  const double per_layer = o.compute_ms * 1e-3 / o.overlap_layers;
  const auto bucket_bytes = static_cast<int64_t>(o.bucket_mb * 1024 * 1024);
  if (c.rank() == 0) {
    std::printf("# overlap: %d layers, %.1f MB of f32 gradients, %.1f ms of emulated backward, %.1f MB buckets, %d steps\n",
                o.overlap_layers, static_cast<double>(off) * 4 / 1048576.0, o.compute_ms, o.bucket_mb, o.steps);
    std::printf("#   mode  buckets  backward(ms)  allreduce(ms)  exposed(ms)   step(ms)  hidden(%%)  #wrong\n");
  }
  json out = json::array();
  // Baseline: the whole buffer all-reduced after backward, nothing hidden.
  for (const std::string mode : {"none", "thread", "test"}) {
    std::unique_ptr<comm::GradientBuckets> gb;
    if (mode != "none")
      gb = std::make_unique<comm::GradientBuckets>(c, *backend, grads_view, slices, bucket_bytes,
                                                   comm::parse_comm_progress(mode));
    double backward = 0, exposed = 0, step_time = 0, allreduce = 0, wrong = 0;
    for (int s = -2; s < o.steps; ++s) {  // two warm-up steps
      for (size_t i = 0; i < grads.size(); ++i) grads[i] = static_cast<float>((c.rank() + 1) * static_cast<int>(i % 3));
      c.barrier();
      if (gb) {
        gb->reset_stats();
        gb->begin_step(s);
      }
      const double t0 = now_seconds();
      for (size_t l = 0; l < slices.size(); ++l) {
        const double until = now_seconds() + per_layer;
        while (now_seconds() < until) {
        }
        if (gb) {
          gb->mark_ready(l);
          gb->poll();
        }
      }
      const double t1 = now_seconds();
      double ar = 0;
      if (gb) {
        gb->wait_all();
        ar = gb->stats().allreduce_seconds;
      } else {
        c.allreduce(grads.data(), static_cast<int64_t>(grads.size()), DType::f32, comm::ReduceOp::sum);
        for (float& g : grads) g /= static_cast<float>(c.size());
        ar = now_seconds() - t1;
      }
      const double t2 = now_seconds();
      if (s < 0) continue;
      backward += t1 - t0;
      exposed += t2 - t1;
      step_time += t2 - t0;
      allreduce += ar;
      for (size_t i = 0; i < grads.size(); ++i)
        if (grads[i] != static_cast<float>((c.size() + 1) * static_cast<int>(i % 3)) / 2.0f) wrong += 1;
    }
    const double k = 1e3 / o.steps;
    backward = max_over_ranks(c, backward) * k;
    exposed = max_over_ranks(c, exposed) * k;
    step_time = max_over_ranks(c, step_time) * k;
    allreduce = max_over_ranks(c, allreduce) * k;
    wrong = max_over_ranks(c, wrong);
    const double hidden = allreduce > 0 ? 100.0 * std::max(0.0, 1.0 - exposed / allreduce) : 0.0;
    const int64_t nb = gb ? gb->bucket_count() : 1;
    if (c.rank() == 0)
      std::printf("%8s %8ld %13.2f %14.2f %12.2f %10.2f %10.1f %7ld\n", mode.c_str(), static_cast<long>(nb), backward,
                  allreduce, exposed, step_time, hidden, static_cast<long>(wrong));
    out.push_back({{"mode", mode}, {"buckets", nb}, {"backward_ms", backward}, {"allreduce_ms", allreduce},
                   {"exposed_ms", exposed}, {"step_ms", step_time}, {"hidden_percent", hidden},
                   {"wrong", static_cast<int64_t>(wrong)}});
  }
  return out;
}

int run(int argc, char** argv, comm::Communicator& c) {
  Options o;
  CLI::App app{"scaletrain-bench-allreduce: all-reduce latency and bandwidth over scaletrain's communicator "
               "(nccl-tests style). Run under mpirun with 2 or more ranks."};
  app.add_option("-b,--min-bytes", o.min_bytes, "Smallest message (bytes; K, M, G suffixes)")->capture_default_str();
  app.add_option("-e,--max-bytes", o.max_bytes, "Largest message (sizes double up to it)")->capture_default_str();
  app.add_option("-n,--iters", o.iters, "Timed iterations per size")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("-w,--warmup", o.warmup, "Untimed warm-up iterations per size")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("-d,--dtype", o.dtype, "Element type: f32, i32, bf16, f16")->capture_default_str();
  app.add_option("-o,--op", o.op, "Reduction: sum, max, min")->capture_default_str();
  app.add_flag("--async", o.async, "Time allreduce_async + wait (what GradientBuckets issues) instead of allreduce");
  app.add_option("--json", o.json_path, "Write the table and the alpha-beta fit as JSON here (rank 0)");
  app.add_flag("--overlap", o.overlap, "Also run the GradientBuckets overlap benchmark (thread vs test progress)");
  app.add_option("--overlap-mb", o.overlap_mb, "Overlap: gradient megabytes (f32)")->capture_default_str();
  app.add_option("--overlap-layers", o.overlap_layers, "Overlap: parameters (layers) of uneven size")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--compute-ms", o.compute_ms, "Overlap: emulated backward compute per step (ms)")->capture_default_str();
  app.add_option("--bucket-mb", o.bucket_mb, "Overlap: bucket size (MB)")->capture_default_str();
  app.add_option("--steps", o.steps, "Overlap: timed steps per mode")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--device", o.device, "Where the buffer lives: cpu (host memory), sim or cuda (device memory)")
      ->capture_default_str();
  app.add_option("--backend", o.backend,
                 "Device buffers: nccl (the device communicator) or mpi (staged through pinned host memory)")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (c.rank() == 0) app.exit(e);
    return e.get_exit_code();
  }
  const DType t = parse_dtype(o.dtype);
  ST_CHECK(t == DType::f32 || t == DType::i32 || t == DType::bf16 || t == DType::f16, "--dtype ", o.dtype,
           " is not benchmarked (use f32, i32, bf16 or f16)");
  const comm::ReduceOp op = parse_op(o.op);
  const int64_t min_b = parse_bytes(o.min_bytes, "--min-bytes"), max_b = parse_bytes(o.max_bytes, "--max-bytes");
  ST_CHECK(min_b <= max_b, "--min-bytes (", min_b, ") is larger than --max-bytes (", max_b, ")");

  const int n = c.size();
  const Transport tr(c, o);
  ST_CHECK(!o.overlap || !tr.device(), "--overlap runs on host buffers only (leave --device at cpu)");
  if (c.rank() == 0) {
    std::printf("# scaletrain-bench-allreduce: %d ranks, %s, %s, %d warm-up + %d timed iterations\n", n,
                tr.name().c_str(), o.async ? "allreduce_async+wait" : "allreduce", o.warmup, o.iters);
    std::printf("# time: slowest rank's mean; algbw = size/time; busbw = algbw * 2(n-1)/n\n");
    std::printf("#%11s %12s %6s %6s %10s %8s %8s %6s\n", "size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong");
    std::printf("#%11s %12s %6s %6s %10s %8s %8s %6s\n", "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "");
  }
  const std::vector<Row> rows = sweep(tr, o, t, op, min_b, max_b);
  int64_t wrong = 0;
  double busbw_sum = 0;
  for (const Row& r : rows) {
    wrong += r.wrong;
    busbw_sum += r.busbw;
  }
  json doc = {{"benchmark", "allreduce"}, {"communicator", tr.name()}, {"device", o.device},
              {"backend", tr.device() ? o.backend : "mpi"}, {"ranks", n}, {"dtype", o.dtype},
              {"op", o.op}, {"mode", o.async ? "async" : "blocking"}, {"iters", o.iters}, {"warmup", o.warmup}};
  doc["rows"] = json::array();
  for (const Row& r : rows)
    doc["rows"].push_back({{"bytes", r.bytes}, {"count", r.count}, {"time_us", r.time_us}, {"algbw_gbps", r.algbw},
                           {"busbw_gbps", r.busbw}, {"wrong", r.wrong}});
  if (c.rank() == 0) {
    std::printf("# out of bounds values: %ld %s\n", static_cast<long>(wrong), wrong ? "FAILED" : "OK");
    std::printf("# avg bus bandwidth: %.3f GB/s\n", rows.empty() ? 0.0 : busbw_sum / static_cast<double>(rows.size()));
  }
  if (rows.size() >= 2) {
    const comm::AlphaBetaFit f = fit_rows(rows);
    doc["fit"] = {{"model", "t = alpha + bytes * beta"}, {"method", "least squares on relative error"},
                  {"alpha_us", f.alpha_s * 1e6}, {"beta_s_per_byte", f.beta_s_per_byte},
                  {"bandwidth_gbps", f.beta_s_per_byte > 0 ? 1e-9 / f.beta_s_per_byte : 0.0},
                  {"rms_relative_error", f.rms_relative_error}};
    if (c.rank() == 0)
      std::printf("# alpha-beta fit (t = alpha + bytes*beta): alpha = %.2f us, beta = %.4g us/MB (1/beta = %.3f GB/s), "
                  "rms relative error %.1f%%\n",
                  f.alpha_s * 1e6, f.beta_s_per_byte * 1e6 * 1024 * 1024,
                  f.beta_s_per_byte > 0 ? 1e-9 / f.beta_s_per_byte : 0.0, 100 * f.rms_relative_error);
  }
  if (o.overlap) {
    doc["overlap"] = overlap_benchmark(c, o);
    for (const auto& m : doc["overlap"]) wrong += m["wrong"].get<int64_t>();
  }
  if (c.rank() == 0 && !o.json_path.empty()) {
    std::ofstream f(o.json_path);
    ST_CHECK(f.good(), "--json: cannot open '", o.json_path, "' for writing");
    f << doc.dump(2) << "\n";
    ST_CHECK(f.good(), "--json: writing '", o.json_path, "' failed");
  }
  return wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  setlinebuf(stdout);
  set_mpi_environment_defaults();  // the settings scaletrain runs with
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  set_error_rank(rank);
  int rc = 0;
  try {
    auto c = comm::make_mpi_communicator(MPI_COMM_WORLD);
    rc = run(argc, argv, *c);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] error: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  // Every rank returns the same code: the #wrong counts were summed across ranks.
  MPI_Finalize();
  return rc;
}
