// st-pack-cifar: packs the CIFAR-10 / CIFAR-100 binary distributions into a scaletrain dataset.
// CIFAR-10: data_batch_1..5.bin -> "train" (with its channel mean/std), test_batch.bin -> "test",
// class names from batches.meta.txt. CIFAR-100: train.bin / test.bin, fine (100) or coarse (20)
// labels, names from fine_label_names.txt / coarse_label_names.txt. Records store planar CHW bytes
// (1024 R, 1024 G, 1024 B); samples are written channels-last, [32, 32, 3] uint8.
//   st-pack-cifar --dir cifar-10-batches-bin -o cifar10.h5
//   st-pack-cifar --dir cifar-100-binary --label coarse -o cifar100-coarse.h5
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "scaletrain/core/error.hpp"
#include "scaletrain/data/dataset_writer.hpp"

namespace fs = std::filesystem;
using namespace scaletrain;

namespace {

constexpr int64_t kSide = 32, kChannels = 3, kPixels = kSide * kSide, kImageBytes = kPixels * kChannels;

struct Layout {
  std::string kind;          // "cifar10" or "cifar100"
  int64_t label_bytes = 1;   // bytes before the image in each record
  int64_t label_offset = 0;  // which of them is the label used
  int64_t num_classes = 10;
  std::vector<std::string> train_files, test_files;
  std::string names_file;
  int64_t record_bytes() const { return label_bytes + kImageBytes; }
};

Layout make_layout(const std::string& kind, const std::string& label) {
  Layout l;
  l.kind = kind;
  if (kind == "cifar10") {
    ST_CHECK(label == "fine", "--label ", label, " is only meaningful for cifar100");
    for (int i = 1; i <= 5; ++i) l.train_files.push_back("data_batch_" + std::to_string(i) + ".bin");
    l.test_files = {"test_batch.bin"};
    l.names_file = "batches.meta.txt";
  } else {
    l.label_bytes = 2;  // coarse label byte, then fine label byte
    l.label_offset = label == "coarse" ? 0 : 1;
    l.num_classes = label == "coarse" ? 20 : 100;
    l.train_files = {"train.bin"};
    l.test_files = {"test.bin"};
    l.names_file = label == "coarse" ? "coarse_label_names.txt" : "fine_label_names.txt";
  }
  return l;
}

std::string detect_kind(const fs::path& dir) {
  const bool c10 = fs::exists(dir / "data_batch_1.bin") || fs::exists(dir / "test_batch.bin");
  const bool c100 = fs::exists(dir / "train.bin") || fs::exists(dir / "test.bin");
  ST_CHECK(c10 || c100, "no CIFAR binary batches in ", dir.string(),
           " (expected data_batch_1..5.bin + test_batch.bin for CIFAR-10 or train.bin + test.bin for CIFAR-100)");
  ST_CHECK(!(c10 && c100), dir.string(), " holds both CIFAR-10 and CIFAR-100 files: pass --kind");
  return c10 ? "cifar10" : "cifar100";
}

std::vector<std::string> class_names(const fs::path& dir, const Layout& l) {
  static const std::vector<std::string> cifar10 = {"airplane", "automobile", "bird",  "cat",  "deer",
                                                   "dog",      "frog",       "horse", "ship", "truck"};
  const fs::path p = dir / l.names_file;
  std::vector<std::string> names;
  if (std::ifstream in(p); in) {
    for (std::string line; std::getline(in, line);) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
      if (!line.empty()) names.push_back(line);
    }
    ST_CHECK(static_cast<int64_t>(names.size()) == l.num_classes, p.string(), ": ", names.size(),
             " class names, expected ", l.num_classes);
    return names;
  }
  if (l.kind == "cifar10") return cifar10;
  std::fprintf(stderr, "st-pack-cifar: warning: no %s, classes are named by number\n", p.string().c_str());
  for (int64_t i = 0; i < l.num_classes; ++i) names.push_back(std::to_string(i));
  return names;
}

// Checks that every file exists and holds whole records; returns the record count per file.
std::vector<int64_t> check_files(const fs::path& dir, const std::vector<std::string>& files, const Layout& l) {
  std::vector<int64_t> counts;
  for (const std::string& f : files) {
    const fs::path p = dir / f;
    std::error_code ec;
    const auto size = fs::file_size(p, ec);
    ST_CHECK(!ec, p.string(), ": cannot read (", ec.message(), ")");
    const auto bytes = static_cast<int64_t>(size);
    ST_CHECK(bytes > 0 && bytes % l.record_bytes() == 0, p.string(), ": ", bytes, " bytes is not a multiple of the ",
             l.kind == "cifar10" ? "CIFAR-10" : "CIFAR-100", " record size ", l.record_bytes(), " (label byte",
             l.label_bytes > 1 ? "s" : "", " + 3072 image bytes)");
    counts.push_back(bytes / l.record_bytes());
  }
  return counts;
}

void pack_split(data::DatasetWriter& w, const std::string& split, const fs::path& dir,
                const std::vector<std::string>& files, const std::vector<int64_t>& counts, const Layout& l) {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  std::string source = l.kind + ":";
  for (const std::string& f : files) source += " " + f;
  w.create_split(split, n, source);
  int64_t done = 0;
  for (size_t fi = 0; fi < files.size(); ++fi) {
    const fs::path p = dir / files[fi];
    const int64_t records = counts[fi];
    std::vector<unsigned char> raw(static_cast<size_t>(records * l.record_bytes()));
    std::ifstream in(p, std::ios::binary);
    ST_CHECK(in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size())), p.string(),
             ": read failed");
    std::vector<uint8_t> samples(static_cast<size_t>(records * kImageBytes));
    std::vector<int32_t> labels(static_cast<size_t>(records));
    for (int64_t r = 0; r < records; ++r) {
      const unsigned char* rec = raw.data() + r * l.record_bytes();
      const int32_t label = rec[l.label_offset];
      ST_CHECK(label < l.num_classes, p.string(), ": record ", r, " has label ", label, ", but there are only ",
               l.num_classes, " classes");
      labels[static_cast<size_t>(r)] = label;
      const unsigned char* planes = rec + l.label_bytes;  // CHW
      uint8_t* out = samples.data() + r * kImageBytes;    // HWC
      for (int64_t px = 0; px < kPixels; ++px)
        for (int64_t c = 0; c < kChannels; ++c) out[px * kChannels + c] = planes[c * kPixels + px];
    }
    w.write(split, done, records, samples.data(), labels.data());
    done += records;
    std::printf("  %-5s %-16s %6lld records  (%lld / %lld)\n", split.c_str(), files[fi].c_str(),
                static_cast<long long>(records), static_cast<long long>(done), static_cast<long long>(n));
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Pack the CIFAR-10 / CIFAR-100 binary batches into a scaletrain HDF5 dataset"};
  std::string dir, out, kind = "auto", label = "fine";
  int gzip = 0;
  int64_t chunk_kb = 1024;
  app.add_option("--dir", dir, "folder with the *.bin batches (cifar-10-batches-bin or cifar-100-binary)")
      ->required()
      ->check(CLI::ExistingDirectory);
  app.add_option("-o,--output", out, "output HDF5 file")->required();
  app.add_option("--kind", kind, "cifar10, cifar100 or auto (from the file names)")
      ->check(CLI::IsMember({"auto", "cifar10", "cifar100"}))
      ->capture_default_str();
  app.add_option("--label", label, "CIFAR-100 labels: fine (100 classes) or coarse (20 superclasses)")
      ->check(CLI::IsMember({"fine", "coarse"}))
      ->capture_default_str();
  app.add_option("--gzip", gzip, "deflate level 0-9 (0: none)")->check(CLI::Range(0, 9))->capture_default_str();
  app.add_option("--chunk-kb", chunk_kb, "target chunk size in KiB")->check(CLI::PositiveNumber)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const fs::path d(dir);
    if (kind == "auto") kind = detect_kind(d);
    const Layout l = make_layout(kind, label);
    // Check every file before writing anything, so a bad one fails fast with its name.
    const std::vector<int64_t> train_counts = check_files(d, l.train_files, l);
    const std::vector<int64_t> test_counts = check_files(d, l.test_files, l);
    const std::vector<std::string> classes = class_names(d, l);
    std::printf("%s (%s labels, %zu classes) from %s\n", kind.c_str(), kind == "cifar100" ? label.c_str() : "fine",
                classes.size(), dir.c_str());
    data::DatasetWriter w(out, classes, Shape{kSide, kSide, kChannels}, DType::u8,
                          data::WriterOptions{chunk_kb * 1024, gzip});
    pack_split(w, "train", d, l.train_files, train_counts, l);
    w.store_statistics("train");
    pack_split(w, "test", d, l.test_files, test_counts, l);
    w.finish();
    std::printf("wrote %s\n", out.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "st-pack-cifar: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
