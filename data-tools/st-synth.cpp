// st-synth: writes a synthetic data set of any sample shape and dtype (a random template per
// class plus noise), for I/O and scaling experiments at sizes no real data set here has.
//   st-synth --shape 224,224,3 --train 20000 --test 1000 -o imagenet-like.h5
#include <CLI/CLI.hpp>
#include <cstdio>

#include "scaletrain/core/error.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/data/synthetic.hpp"

using namespace scaletrain;

int main(int argc, char** argv) {
  CLI::App app{"Write a synthetic scaletrain HDF5 dataset"};
  std::vector<int64_t> shape{28, 28, 1};
  std::string dtype = "u8", out;
  data::SyntheticOptions o;
  app.add_option("--shape", shape, "sample shape, e.g. 224,224,3 ([H, W, C] for images)")->delimiter(',')->capture_default_str();
  app.add_option("--dtype", dtype, "u8, f16 or f32")->capture_default_str();
  app.add_option("--classes", o.classes, "number of classes")->capture_default_str();
  app.add_option("--train", o.train_samples, "training samples")->capture_default_str();
  app.add_option("--test", o.test_samples, "test samples")->capture_default_str();
  app.add_option("--seed", o.seed, "random seed")->capture_default_str();
  app.add_option("--noise", o.noise, "noise amplitude (0..1)")->capture_default_str();
  app.add_option("--gzip", o.gzip_level, "deflate level 0-9")->capture_default_str();
  app.add_option("-o,--output", out, "output HDF5 file")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    o.sample_shape = Shape(shape.begin(), shape.end());
    if (dtype == "u8") o.dtype = DType::u8;
    else if (dtype == "f16") o.dtype = DType::f16;
    else if (dtype == "f32") o.dtype = DType::f32;
    else ST_FAIL("--dtype must be u8, f16 or f32, not '", dtype, "'");
    const Stopwatch clock;
    double last = -1;
    o.progress = [&](int64_t done, int64_t total) {
      if (clock.seconds() - last >= 2.0 || done == total) {
        last = clock.seconds();
        std::printf("  %lld / %lld samples (%.0f%%)\n", static_cast<long long>(done), static_cast<long long>(total),
                    100.0 * static_cast<double>(done) / static_cast<double>(total));
      }
    };
    data::write_synthetic_dataset(out, o);
    std::printf("wrote %s in %.1f s\n", out.c_str(), clock.seconds());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "st-synth: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
