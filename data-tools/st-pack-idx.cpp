// st-pack-idx: packs IDX files (MNIST, Fashion-MNIST; gzip or raw) into a scaletrain dataset:
// train-* becomes the "train" split (with its channel mean/std), t10k-* the "test" split.
//   st-pack-idx --dir /usr/share/datasets/fashion-mnist --classes fashion-mnist -o fmnist.h5
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>

#include "scaletrain/core/error.hpp"
#include "scaletrain/data/dataset_writer.hpp"
#include "scaletrain/data/idx.hpp"

namespace fs = std::filesystem;
using namespace scaletrain;

namespace {

std::string find_file(const std::string& dir, const std::string& stem) {
  for (const char* ext : {"", ".gz"}) {
    const fs::path p = fs::path(dir) / (stem + ext);
    if (fs::exists(p)) return p.string();
  }
  ST_FAIL("no ", stem, " or ", stem, ".gz in ", dir);
}

std::vector<std::string> class_names(const std::string& which, int64_t n) {
  if (which == "fashion-mnist")
    return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};
  if (which == "mnist") return {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
  std::vector<std::string> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(std::to_string(i));
  return v;
}

void pack_split(data::DatasetWriter& w, const std::string& split, const std::string& images_path,
                const std::string& labels_path) {
  const data::IdxArray images = data::read_idx(images_path);
  const data::IdxArray labels = data::read_idx(labels_path);
  ST_CHECK(images.dims.size() == 3, images_path, ": expected [N, H, W] images, got ", images.dims.size(), " dims");
  ST_CHECK(labels.dims.size() == 1 && labels.dims[0] == images.dims[0], labels_path, ": ",
           labels.dims.empty() ? 0 : labels.dims[0], " labels for ", images.dims[0], " images in ", images_path);
  const int64_t n = images.dims[0];
  std::vector<int32_t> lab(labels.data.begin(), labels.data.end());
  w.create_split(split, n, fs::path(images_path).filename().string());
  const int64_t per = images.dims[1] * images.dims[2];
  const int64_t block = 10000;
  for (int64_t s = 0; s < n; s += block) {
    const int64_t c = std::min(block, n - s);
    w.write(split, s, c, images.data.data() + s * per, lab.data() + s);
    std::printf("  %-5s %6lld / %lld samples\n", split.c_str(), static_cast<long long>(s + c),
                static_cast<long long>(n));
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Pack IDX files (MNIST, Fashion-MNIST) into a scaletrain HDF5 dataset"};
  std::string dir, out, classes = "fashion-mnist";
  int gzip = 0;
  int64_t chunk_kb = 1024;
  app.add_option("--dir", dir, "folder with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]")->required();
  app.add_option("-o,--output", out, "output HDF5 file")->required();
  app.add_option("--classes", classes, "class names: fashion-mnist, mnist or numbers")->capture_default_str();
  app.add_option("--gzip", gzip, "deflate level 0-9 (0: none)")->capture_default_str();
  app.add_option("--chunk-kb", chunk_kb, "target chunk size in KiB")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const std::string tri = find_file(dir, "train-images-idx3-ubyte"), trl = find_file(dir, "train-labels-idx1-ubyte");
    const std::string tei = find_file(dir, "t10k-images-idx3-ubyte"), tel = find_file(dir, "t10k-labels-idx1-ubyte");
    const data::IdxArray probe = data::read_idx(tri);
    ST_CHECK(probe.dims.size() == 3, tri, ": expected [N, H, W] images");
    data::DatasetWriter w(out, class_names(classes, 10), Shape{probe.dims[1], probe.dims[2], 1}, DType::u8,
                          data::WriterOptions{chunk_kb * 1024, gzip});
    pack_split(w, "train", tri, trl);
    w.store_statistics("train");
    pack_split(w, "test", tei, tel);
    w.finish();
    std::printf("wrote %s\n", out.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "st-pack-idx: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
