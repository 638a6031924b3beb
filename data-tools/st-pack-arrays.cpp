// st-pack-arrays: packs numeric arrays users already have (NumPy .npy files, or datasets inside an
// HDF5 file named FILE:/path) into a scaletrain dataset: samples [N, ..., C] of any shape as uint8,
// f16 or f32, integer labels [N], per split; --val-fraction / --test-fraction hold out a seeded
// random part of the training input. Samples are chunked along N (--chunk-kb).
//
// Reading, checking and converting are spread over MPI ranks: block k of an input is handled by rank
// k % size, rank 0 gathers each round of blocks (MPI_Gatherv) and is the only rank writing the
// output (DatasetWriter: <out>.tmp.<pid>, renamed at the end). Every rank keeps the training split's
// per-channel mean and sum of squared deviations of its blocks; rank 0 merges them with Chan's
// update (data/channel_statistics.hpp), which keeps the variance of data with a large offset.
//
// Bad input (arrays of different lengths, a non-numeric element type, a NaN or infinite value, a
// value the output type cannot hold, a label outside the classes) ends every rank with exit status
// 1 and one message naming the file and the first bad sample index.
//   mpirun -np 4 st-pack-arrays --train-samples x.npy --train-labels y.npy
//          --test-samples xt.npy --test-labels yt.npy -o data.h5
//   st-pack-arrays --train-samples sim.h5:/fields --train-labels sim.h5:/labels --val-fraction 0.1 -o data.h5
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>

#include "scaletrain/core/check_mpi.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/half.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/data/array_source.hpp"
#include "scaletrain/data/channel_statistics.hpp"
#include "scaletrain/data/dataset_writer.hpp"

using namespace scaletrain;
using data::ArraySource;

namespace {

constexpr int64_t kBlockValues = int64_t{1} << 20;  // values one rank reads per block (8 MiB as double)
constexpr int64_t kNoError = INT64_MAX;

struct Options {
  std::string samples[3], labels[3];  // train, val, test
  std::string out, dtype = "auto", classes;
  std::vector<int64_t> sample_shape;
  double val_fraction = 0, test_fraction = 0;
  uint64_t seed = 0;
  int gzip = 0;
  int64_t chunk_kb = 1024;
  int64_t block_rows = 0;  // rows per block and rank; 0: about kBlockValues values
};
const char* const kSplits[3] = {"train", "val", "test"};

// One input: a samples array and its labels, whose rows go to the splits in `destination`.
struct Input {
  std::unique_ptr<ArraySource> samples, labels;
  std::vector<int32_t> label_values;
  std::vector<uint8_t> destination;  // split index (0 train, 1 val, 2 test) per row
  int64_t first_row = 0;             // of this input among all inputs' rows (error ordering)
};

struct Plan {
  std::vector<Input> inputs;
  Shape sample_shape;
  DType dtype = DType::f32;
  int64_t classes = 0;
  std::vector<std::string> class_names;
  int64_t split_rows[3] = {0, 0, 0};
};

// Every rank either succeeded or has a message; all learn whether all succeeded, and rank 0 prints
// the message of the failure with the smallest key (the first bad sample), then all return false.
bool agree(int rank, int64_t key, const std::string& message) {
  int64_t first = key;
  ST_MPI_CHECK(MPI_Allreduce(&key, &first, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD));
  if (first == kNoError) return true;
  int mine = key == first ? rank : INT32_MAX, owner = 0;
  ST_MPI_CHECK(MPI_Allreduce(&mine, &owner, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  std::string text = rank == owner ? message : std::string();
  int64_t length = static_cast<int64_t>(text.size());
  ST_MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT64_T, owner, MPI_COMM_WORLD));
  text.resize(static_cast<size_t>(length));
  ST_MPI_CHECK(MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, owner, MPI_COMM_WORLD));
  if (rank == 0) std::fprintf(stderr, "st-pack-arrays: error: %s\n", text.c_str());
  return false;
}

// Runs f on every rank; a UserError or Error there becomes an agreed failure.
template <class F>
bool everywhere(int rank, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return agree(rank, 0, e.what());
  }
  return agree(rank, kNoError, "");
}

Shape sample_shape_of(const ArraySource& a, const Options& o) {
  Shape shape(a.shape().begin() + 1, a.shape().end());
  if (shape.empty()) shape = {1};
  if (o.sample_shape.empty()) return shape;
  const Shape wanted(o.sample_shape.begin(), o.sample_shape.end());
  ST_USER_CHECK(shape_numel(wanted) == shape_numel(shape), "--sample-shape ", shape_string(wanted), " holds ",
                shape_numel(wanted), " values, but each sample of ", a.spec(), " (", shape_string(shape), ") holds ",
                shape_numel(shape));
  return wanted;
}

// The labels as int32, checked: integer type, one per sample, none negative.
std::vector<int32_t> read_labels(const ArraySource& labels, const ArraySource& samples) {
  ST_USER_CHECK(labels.type().is_integer(), labels.spec(), " holds ", labels.type().name(),
                " labels; labels must be integer class indices (save them with y.astype(numpy.int64))");
  ST_USER_CHECK(labels.shape().size() == 1 || (labels.shape().size() == 2 && labels.shape()[1] == 1), labels.spec(),
                " has shape ", shape_string(Shape(labels.shape().begin(), labels.shape().end())),
                "; labels must be one class index per sample, [N] or [N, 1]");
  ST_USER_CHECK(labels.rows() == samples.rows(), samples.spec(), " has ", samples.rows(), " samples but ",
                labels.spec(), " has ", labels.rows(), " labels: the two must have the same length along the first axis");
  std::vector<int64_t> wide(static_cast<size_t>(labels.rows()));
  labels.read_rows(0, labels.rows(), wide.data());
  std::vector<int32_t> out(wide.size());
  for (size_t i = 0; i < wide.size(); ++i) {
    ST_USER_CHECK(wide[i] >= 0 && wide[i] <= INT32_MAX, labels.spec(), ": the label of sample ", i, " is ", wide[i],
                  "; labels must be class indices 0, 1, 2, ...");
    out[i] = static_cast<int32_t>(wide[i]);
  }
  return out;
}

// Which split each row of the training input goes to: round(n * fraction) rows each for val and
// test, chosen by a Fisher-Yates shuffle driven by mt19937_64 (whose sequence the standard fixes).
std::vector<uint8_t> hold_out(int64_t n, const Options& o) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  std::mt19937_64 rng(o.seed);
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(rng() % static_cast<uint64_t>(i + 1))]);
  const auto n_val = static_cast<int64_t>(std::llround(static_cast<double>(n) * o.val_fraction));
  const auto n_test = static_cast<int64_t>(std::llround(static_cast<double>(n) * o.test_fraction));
  ST_USER_CHECK(n_val + n_test < n, "--val-fraction and --test-fraction leave no training samples of ", n);
  std::vector<uint8_t> dest(static_cast<size_t>(n), 0);
  for (int64_t k = 0; k < n_val + n_test; ++k) dest[static_cast<size_t>(order[static_cast<size_t>(k)])] = k < n_val ? 1 : 2;
  return dest;
}

DType output_dtype(const Plan& p, const std::string& name) {
  if (name == "u8") return DType::u8;
  if (name == "f16") return DType::f16;
  if (name == "f32") return DType::f32;
  ST_USER_CHECK(name == "auto", "--dtype must be auto, u8, f16 or f32, not '", name, "'");
  bool all_u8 = true, all_f16 = true;
  for (const Input& in : p.inputs) {
    const data::ElementType t = in.samples->type();
    all_u8 &= t.kind == 'u' && t.bytes == 1;
    all_f16 &= t.kind == 'f' && t.bytes == 2;
  }
  return all_u8 ? DType::u8 : all_f16 ? DType::f16 : DType::f32;
}

// The classes: --classes N, --classes a,b,c, or the largest label + 1; every label within them.
void set_classes(Plan& p, const std::string& spec) {
  if (spec.empty()) {
    int32_t largest = 0;
    for (const Input& in : p.inputs)
      for (int32_t l : in.label_values) largest = std::max(largest, l);
    p.classes = int64_t{largest} + 1;
  } else if (spec.find_first_not_of("0123456789") == std::string::npos) {
    p.classes = std::stoll(spec);
  } else {
    for (size_t at = 0; at <= spec.size();) {
      const size_t comma = std::min(spec.find(',', at), spec.size());
      p.class_names.push_back(spec.substr(at, comma - at));
      at = comma + 1;
    }
    p.classes = static_cast<int64_t>(p.class_names.size());
  }
  ST_USER_CHECK(p.classes >= 1, "--classes must name at least one class");
  for (int64_t c = static_cast<int64_t>(p.class_names.size()); c < p.classes; ++c)
    p.class_names.push_back("class" + std::to_string(c));
  for (const Input& in : p.inputs)
    for (size_t i = 0; i < in.label_values.size(); ++i)
      ST_USER_CHECK(in.label_values[i] < p.classes, in.labels->spec(), ": the label of sample ", i, " is ",
                    in.label_values[i], ", outside the ", p.classes, " classes [0, ", p.classes, ") of --classes");
}

Plan make_plan(const Options& o) {
  Plan p;
  int64_t first_row = 0;
  for (int s = 0; s < 3; ++s) {
    if (o.samples[s].empty() != o.labels[s].empty())
      ST_USER_FAIL("--", kSplits[s], "-samples and --", kSplits[s], "-labels go together: give both or neither");
    if (o.samples[s].empty()) continue;
    Input in;
    in.samples = ArraySource::open(o.samples[s]);
    in.labels = ArraySource::open(o.labels[s]);
    in.label_values = read_labels(*in.labels, *in.samples);
    in.destination = s == 0 ? hold_out(in.samples->rows(), o)
                            : std::vector<uint8_t>(static_cast<size_t>(in.samples->rows()), static_cast<uint8_t>(s));
    const Shape shape = sample_shape_of(*in.samples, o);
    ST_USER_CHECK(p.inputs.empty() || shape == p.sample_shape, o.samples[s], " holds samples of shape ",
                  shape_string(shape), " but ", p.inputs.front().samples->spec(), " holds ", shape_string(p.sample_shape));
    p.sample_shape = shape;
    in.first_row = first_row;
    first_row += in.samples->rows();
    for (uint8_t d : in.destination) ++p.split_rows[d];
    p.inputs.push_back(std::move(in));
  }
  ST_USER_CHECK(!p.inputs.empty() && !o.samples[0].empty(), "--train-samples and --train-labels are required");
  ST_USER_CHECK(o.samples[1].empty() || o.val_fraction == 0, "give --val-samples or --val-fraction, not both");
  ST_USER_CHECK(o.samples[2].empty() || o.test_fraction == 0, "give --test-samples or --test-fraction, not both");
  p.dtype = output_dtype(p, o.dtype);
  set_classes(p, o.classes);
  return p;
}

// Converts a block's values to the output type, or returns the first bad value's message.
std::optional<std::string> convert(const Input& in, int64_t first, const std::vector<double>& v,
                                   DType dtype, std::vector<uint8_t>& out, int64_t& bad_row) {
  const int64_t per = in.samples->row_values();
  out.resize(v.size() * dtype_size(dtype));
  for (size_t i = 0; i < v.size(); ++i) {
    const double x = v[i];
    const char* problem = !std::isfinite(x)                                          ? (std::isnan(x) ? "NaN" : "an infinite value")
                          : dtype == DType::u8 && (x < 0 || x > 255 || x != std::floor(x)) ? "a value uint8 cannot hold"
                          : dtype == DType::f16 && std::fabs(x) > 65504.0              ? "a value float16 cannot hold"
                          : dtype == DType::f32 && std::fabs(x) > FLT_MAX               ? "a value float32 cannot hold"
                                                                                        : nullptr;
    if (problem) {
      bad_row = first + static_cast<int64_t>(i) / per;
      return in.samples->spec() + ": sample " + std::to_string(bad_row) + " holds " + problem + " (" +
             std::to_string(x) + ", value " + std::to_string(static_cast<int64_t>(i) % per) +
             " of the sample)" + (std::isfinite(x) ? ": pack it as --dtype f32" : ": replace or remove it before packing");
    }
    if (dtype == DType::u8) out[i] = static_cast<uint8_t>(x);
    else if (dtype == DType::f16) reinterpret_cast<uint16_t*>(out.data())[i] = float_to_f16(static_cast<float>(x)).bits;
    else reinterpret_cast<float*>(out.data())[i] = static_cast<float>(x);
  }
  return std::nullopt;
}

// This rank's block of a round: read, check, convert, and the training rows' statistics.
struct Block {
  int64_t first = 0, rows = 0;
  std::vector<uint8_t> bytes;
};

int64_t process_block(const Input& in, const Plan& p, Block& b, data::ChannelStatistics& stats, std::string& error) {
  std::vector<double> values(static_cast<size_t>(b.rows * in.samples->row_values()));
  in.samples->read_rows(b.first, b.rows, values.data());
  int64_t bad_row = 0;
  if (auto problem = convert(in, b.first, values, p.dtype, b.bytes, bad_row)) {
    error = *problem;
    return in.first_row + bad_row;
  }
  // The statistics see the stored values (after conversion) of the rows that go to train.
  const int64_t per = in.samples->row_values();
  const size_t row_bytes = static_cast<size_t>(per) * dtype_size(p.dtype);
  std::vector<uint8_t> train;
  for (int64_t r = 0; r < b.rows; ++r)
    if (in.destination[static_cast<size_t>(b.first + r)] == 0)
      train.insert(train.end(), b.bytes.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(r) * row_bytes),
                   b.bytes.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(r + 1) * row_bytes));
  stats.add_stored(p.dtype, train.data(), static_cast<int64_t>(train.size() / dtype_size(p.dtype)));
  return kNoError;
}

// Rank 0: the block's rows of each split, as one contiguous write per split.
void write_block(data::DatasetWriter& w, const Input& in, int64_t first, int64_t rows, const uint8_t* bytes,
                 size_t row_bytes, int64_t next_row[3]) {
  for (uint8_t s = 0; s < 3; ++s) {
    std::vector<uint8_t> samples;
    std::vector<int32_t> labels;
    for (int64_t r = 0; r < rows; ++r) {
      if (in.destination[static_cast<size_t>(first + r)] != s) continue;
      samples.insert(samples.end(), bytes + r * static_cast<int64_t>(row_bytes), bytes + (r + 1) * static_cast<int64_t>(row_bytes));
      labels.push_back(in.label_values[static_cast<size_t>(first + r)]);
    }
    if (labels.empty()) continue;
    w.write(kSplits[s], next_row[s], static_cast<int64_t>(labels.size()), samples.data(), labels.data());
    next_row[s] += static_cast<int64_t>(labels.size());
  }
}

struct Packer {
  const Plan& plan;
  int rank, size;
  std::unique_ptr<data::DatasetWriter> writer;  // rank 0
  data::ChannelStatistics stats;
  int64_t plan_block_rows = 0;  // --block-rows
  int64_t next_row[3] = {0, 0, 0};
  int64_t bytes_read = 0;

  // One round: rank r takes block `first_block + r` of the input; rank 0 gathers and writes them.
  bool round(const Input& in, int64_t block_rows, int64_t first_block) {
    const size_t row_bytes = static_cast<size_t>(in.samples->row_values()) * dtype_size(plan.dtype);
    Block mine;
    mine.first = std::min(in.samples->rows(), (first_block + rank) * block_rows);
    mine.rows = std::min(block_rows, in.samples->rows() - mine.first);
    std::string error;
    int64_t key = kNoError;
    try {
      if (mine.rows > 0) key = process_block(in, plan, mine, stats, error);
    } catch (const std::exception& e) {
      key = in.first_row + mine.first;
      error = e.what();
    }
    bytes_read += mine.rows * in.samples->row_values() * in.samples->type().bytes;
    if (!agree(rank, key, error)) return false;
    std::vector<int> counts(static_cast<size_t>(size)), displs(static_cast<size_t>(size));
    int64_t total = 0;
    for (int r = 0; r < size; ++r) {
      const int64_t first = std::min(in.samples->rows(), (first_block + r) * block_rows);
      counts[static_cast<size_t>(r)] = static_cast<int>(std::min(block_rows, in.samples->rows() - first) * static_cast<int64_t>(row_bytes));
      displs[static_cast<size_t>(r)] = static_cast<int>(total);
      total += counts[static_cast<size_t>(r)];
    }
    std::vector<uint8_t> all(rank == 0 ? static_cast<size_t>(total) : 0);
    ST_MPI_CHECK(MPI_Gatherv(mine.bytes.data(), static_cast<int>(mine.bytes.size()), MPI_UINT8_T, all.data(),
                             counts.data(), displs.data(), MPI_UINT8_T, 0, MPI_COMM_WORLD));
    std::string write_error;
    if (rank == 0) try {
        const int64_t first = first_block * block_rows;
        const int64_t rows = std::min(in.samples->rows() - first, static_cast<int64_t>(total / static_cast<int64_t>(row_bytes)));
        write_block(*writer, in, first, rows, all.data(), row_bytes, next_row);
      } catch (const std::exception& e) {
        write_error = e.what();
      }
    return agree(rank, write_error.empty() ? kNoError : 0, write_error);
  }

  bool pack(const Input& in) {
    // A block of about kBlockValues values (or --block-rows), and at most 1 GiB per gathered round:
    // MPI counts and displacements are int.
    const int64_t row_bytes = in.samples->row_values() * static_cast<int64_t>(dtype_size(plan.dtype));
    const int64_t wanted = plan_block_rows > 0 ? plan_block_rows : kBlockValues / std::max<int64_t>(1, in.samples->row_values());
    const int64_t block_rows = std::max<int64_t>(1, std::min(wanted, (int64_t{1} << 30) / (row_bytes * size)));
    const int64_t blocks = (in.samples->rows() + block_rows - 1) / block_rows;
    for (int64_t b = 0; b < blocks; b += size)
      if (!round(in, block_rows, b)) return false;
    return true;
  }

  // The training split's statistics of every rank, merged in rank order on rank 0.
  data::ChannelStatistics merged() const {
    const std::vector<double> packed = stats.pack();
    std::vector<double> all(rank == 0 ? packed.size() * static_cast<size_t>(size) : 0);
    ST_MPI_CHECK(MPI_Gather(packed.data(), static_cast<int>(packed.size()), MPI_DOUBLE, all.data(),
                            static_cast<int>(packed.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD));
    data::ChannelStatistics total(stats.channels());
    if (rank == 0)
      for (int r = 0; r < size; ++r)
        total.merge(data::ChannelStatistics::unpack(stats.channels(), all.data() + static_cast<size_t>(r) * packed.size()));
    return total;
  }
};

std::string source_of(const Options& o) {
  std::string s = "st-pack-arrays:";
  for (int k = 0; k < 3; ++k)
    if (!o.samples[k].empty()) s += " " + std::string(kSplits[k]) + " " + o.samples[k] + " " + o.labels[k];
  return s;
}

void print_summary(const Plan& p, const Options& o, const data::ChannelStatistics& st, double seconds, int64_t bytes,
                   int size) {
  std::printf("wrote %s: samples %s %s, %lld classes, chunks along N, in %.1f s on %d rank%s (%.0f MB/s read)\n",
              o.out.c_str(), shape_string(p.sample_shape).c_str(), std::string(dtype_name(p.dtype)).c_str(),
              static_cast<long long>(p.classes), seconds, size, size > 1 ? "s" : "", static_cast<double>(bytes) / 1e6 / seconds);
  for (int s = 0; s < 3; ++s)
    if (p.split_rows[s] > 0) std::printf("  split %-5s %lld samples\n", kSplits[s], static_cast<long long>(p.split_rows[s]));
  const std::vector<float> mean = st.mean(), sd = st.std();
  std::printf("  train mean/std per channel:");
  for (size_t c = 0; c < mean.size() && c < 8; ++c) std::printf(" %.9g/%.9g", mean[c], sd[c]);
  std::printf("%s\n", mean.size() > 8 ? " ..." : "");
}

int run(const Options& o, int rank, int size) {
  const Stopwatch clock;
  Plan plan;
  if (!everywhere(rank, [&] { plan = make_plan(o); })) return 1;
  Packer packer{plan, rank, size, nullptr, data::ChannelStatistics(plan.sample_shape.back()), o.block_rows};
  if (!everywhere(rank, [&] {
        if (rank != 0) return;
        data::WriterOptions wo{o.chunk_kb * 1024, o.gzip, false};
        packer.writer = std::make_unique<data::DatasetWriter>(o.out, plan.class_names, plan.sample_shape, plan.dtype, wo);
        for (int s = 0; s < 3; ++s)
          if (plan.split_rows[s] > 0) packer.writer->create_split(kSplits[s], plan.split_rows[s], source_of(o));
      }))
    return 1;
  for (const Input& in : plan.inputs)
    if (!packer.pack(in)) return 1;
  int64_t bytes = 0;
  ST_MPI_CHECK(MPI_Reduce(&packer.bytes_read, &bytes, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD));
  const data::ChannelStatistics stats = packer.merged();
  return everywhere(rank, [&] {
           if (rank != 0) return;
           packer.writer->store_statistics("train", stats);
           packer.writer->finish();
           print_summary(plan, o, stats, clock.seconds(), bytes, size);
         })
             ? 0
             : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  set_error_rank(rank);
  CLI::App app{"Pack NumPy .npy arrays or HDF5 datasets (FILE:/path) into a scaletrain HDF5 dataset"};
  Options o;
  for (int s = 0; s < 3; ++s) {
    const std::string split = kSplits[s];
    app.add_option("--" + split + "-samples", o.samples[s], split + " samples [N, ..., C]: x.npy or FILE.h5:/dataset");
    app.add_option("--" + split + "-labels", o.labels[s], split + " labels [N], integer: y.npy or FILE.h5:/dataset");
  }
  app.add_option("-o,--output", o.out, "output HDF5 file")->required();
  app.add_option("--dtype", o.dtype, "stored sample type: auto (uint8 arrays as u8, float16 as f16, else f32), u8, f16, f32")
      ->capture_default_str();
  app.add_option("--sample-shape", o.sample_shape, "reshape each sample, e.g. 28,28,1 (the last dimension is the channel)")
      ->delimiter(',');
  app.add_option("--classes", o.classes, "the number of classes, or their names a,b,c (default: largest label + 1)");
  app.add_option("--val-fraction", o.val_fraction, "fraction of the training input held out as \"val\"")
      ->check(CLI::Range(0.0, 0.999))->capture_default_str();
  app.add_option("--test-fraction", o.test_fraction, "fraction of the training input held out as \"test\"")
      ->check(CLI::Range(0.0, 0.999))->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the held-out rows")->capture_default_str();
  app.add_option("--gzip", o.gzip, "deflate level 0-9 (0: none)")->check(CLI::Range(0, 9))->capture_default_str();
  app.add_option("--chunk-kb", o.chunk_kb, "target chunk size in KiB")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--block-rows", o.block_rows,
                 "rows each rank reads per block (0: about 8 MiB of values; at most 1 GiB gathered per round)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = rank == 0 ? app.exit(e) : e.get_exit_code();
    MPI_Finalize();
    return rc;
  }
  int rc = 1;
  try {
    rc = run(o, rank, size);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "st-pack-arrays: rank %d: error: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return rc;
}
