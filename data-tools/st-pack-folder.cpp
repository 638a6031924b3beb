// st-pack-folder: packs an image folder (root/<class>/*.jpg|jpeg|png, classes = sorted subfolder
// names) into a scaletrain dataset of [H, W, C] uint8 samples. Images are decoded with libjpeg-turbo
// and libpng (never trusting the extension: the file's signature decides), converted to RGB or gray,
// and resized to --size with a separable bilinear (triangle) filter that widens when shrinking, so
// downscaling averages instead of aliasing. --val-fraction holds out a seeded, per-class (stratified)
// random part of each class as the "val" split; the rest is "train" (with its channel mean/std).
//
// Decoding is spread over MPI ranks: file i is decoded by rank i % size, in blocks; rank 0 gathers
// each block (MPI_Gatherv), is the only rank touching the output, and writes it with DatasetWriter.
// Since the split sizes are only known once bad files have been found, rank 0 first appends the
// decoded samples to an anonymous spill file next to the output, then copies them into the HDF5 file.
// A bad file (empty, truncated or corrupt, not an image, unreadable) is reported with its path and
// reason; --on-error skip leaves it out, --on-error fail stops every rank (agreed by MPI_Allreduce)
// with exit status 1.
//   mpirun -np 4 st-pack-folder --dir photos --size 64x64 --val-fraction 0.1 -o photos64.h5
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

// libjpeg's headers need <cstdio> first.
#include <jerror.h>
#include <jpeglib.h>
#include <mpi.h>
#include <png.h>
#include <unistd.h>

#include "scaletrain/core/check_mpi.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/data/dataset_writer.hpp"

namespace fs = std::filesystem;
using namespace scaletrain;

namespace {

constexpr int64_t kMaxPixels = int64_t{1} << 27;          // larger images are reported as bad, not decoded
constexpr int64_t kMaxFileBytes = int64_t{1} << 30;       // likewise for files
constexpr int64_t kBlockBytesPerRank = int64_t{8} << 20;  // decoded bytes one rank sends per block

struct Image {
  int64_t h = 0, w = 0, c = 0;
  std::vector<uint8_t> px;  // h * w * c, row-major HWC
};

uint8_t luma(int r, int g, int b) { return static_cast<uint8_t>((299 * r + 587 * g + 114 * b + 500) / 1000); }

// ---------------------------------------------------------------------------------------------
// JPEG (libjpeg-turbo). Errors longjmp back to decode_jpeg; so do the warnings that mean the data
// is damaged (libjpeg would otherwise fill the missing part with gray and carry on).

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_fail(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

void jpeg_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  switch (cinfo->err->msg_code) {
    case JWRN_JPEG_EOF:
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_MUST_RESYNC:
    case JWRN_NOT_SEQUENTIAL:
    case JWRN_BOGUS_PROGRESSION:
      jpeg_fail(cinfo);
      break;
    default:
      cinfo->err->num_warnings++;  // benign: extraneous bytes, unknown JFIF revision, bad ICC marker
  }
}

void jpeg_quiet(j_common_ptr) {}

// No C++ object is created between setjmp and a possible longjmp: everything with a destructor is
// declared before setjmp, so the jump skips no destructor.
bool decode_jpeg(const std::vector<uint8_t>& bytes, int64_t want_c, Image& img, std::string& reason) {
  jpeg_decompress_struct cinfo{};
  JpegError err{};
  std::vector<uint8_t> row;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.emit_message = jpeg_message;
  err.mgr.output_message = jpeg_quiet;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    reason = std::string("corrupt JPEG: ") + err.message;
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  if (static_cast<int64_t>(cinfo.image_width) * cinfo.image_height > kMaxPixels) {
    std::snprintf(err.message, sizeof err.message, "image too large (%ux%u)", cinfo.image_width, cinfo.image_height);
    jpeg_destroy_decompress(&cinfo);
    reason = err.message;
    return false;
  }
  // libjpeg cannot convert CMYK/YCCK to RGB: take CMYK and convert below.
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  const bool inverted = cinfo.saw_Adobe_marker;  // Adobe writes inverted CMYK
  cinfo.out_color_space = cmyk ? JCS_CMYK : (want_c == 1 ? JCS_GRAYSCALE : JCS_RGB);
  jpeg_start_decompress(&cinfo);
  img.h = cinfo.output_height;
  img.w = cinfo.output_width;
  img.c = want_c;
  const int64_t oc = cinfo.output_components;
  img.px.resize(static_cast<size_t>(img.h * img.w * img.c));
  row.resize(static_cast<size_t>(img.w * oc));
  while (cinfo.output_scanline < cinfo.output_height) {
    const int64_t y = cinfo.output_scanline;
    JSAMPROW r = row.data();
    jpeg_read_scanlines(&cinfo, &r, 1);
    uint8_t* out = img.px.data() + y * img.w * img.c;
    if (!cmyk) {
      std::memcpy(out, row.data(), static_cast<size_t>(img.w * img.c));
      continue;
    }
    for (int64_t x = 0; x < img.w; ++x) {
      int v[4];
      for (int k = 0; k < 4; ++k) v[k] = inverted ? row[x * 4 + k] : 255 - row[x * 4 + k];
      const int rr = v[0] * v[3] / 255, gg = v[1] * v[3] / 255, bb = v[2] * v[3] / 255;
      if (want_c == 1) {
        out[x] = luma(rr, gg, bb);
      } else {
        out[x * 3] = static_cast<uint8_t>(rr);
        out[x * 3 + 1] = static_cast<uint8_t>(gg);
        out[x * 3 + 2] = static_cast<uint8_t>(bb);
      }
    }
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

// ---------------------------------------------------------------------------------------------
// PNG (libpng), read from memory; errors longjmp back through png_jmpbuf.

struct PngSource {
  const std::vector<uint8_t>* bytes;
  size_t pos;
  char message[256];
};

void png_read_bytes(png_structp png, png_bytep out, size_t n) {
  auto* s = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > s->bytes->size() - s->pos) png_error(png, "file is truncated");
  std::memcpy(out, s->bytes->data() + s->pos, n);
  s->pos += n;
}

void png_fail(png_structp png, png_const_charp msg) {
  auto* s = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(s->message, sizeof s->message, "%s", msg);
  png_longjmp(png, 1);
}

void png_warn(png_structp, png_const_charp) {}

bool decode_png(const std::vector<uint8_t>& bytes, int64_t want_c, Image& img, std::string& reason) {
  PngSource src{&bytes, 0, {}};
  std::vector<png_bytep> rows;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_fail, png_warn);
  if (!png) {
    reason = "libpng could not allocate a reader";
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    reason = "libpng could not allocate a reader";
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    reason = std::string("corrupt PNG: ") + src.message;
    return false;
  }
  png_set_read_fn(png, &src, png_read_bytes);
  png_read_info(png, info);
  const png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  const int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  if (static_cast<int64_t>(w) * h > kMaxPixels) {
    std::snprintf(src.message, sizeof src.message, "image too large (%ux%u)", w, h);
    png_destroy_read_struct(&png, &info, nullptr);
    reason = src.message;
    return false;
  }
  // To 8-bit gray or RGB, alpha dropped; color to gray is done below with the same weights as JPEG.
  const bool gray_src = (color & PNG_COLOR_MASK_COLOR) == 0;
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (gray_src && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_scale_16(png);
  png_set_strip_alpha(png);
  if (gray_src && want_c == 3) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const int64_t ch = png_get_channels(png, info);
  if (ch != (gray_src ? want_c : 3) || png_get_rowbytes(png, info) != static_cast<size_t>(w * ch))
    png_error(png, "unexpected pixel layout after conversion");
  img.h = h;
  img.w = w;
  img.c = want_c;
  img.px.resize(static_cast<size_t>(img.h * img.w * ch));
  rows.resize(h);
  for (png_uint_32 y = 0; y < h; ++y) rows[y] = img.px.data() + static_cast<int64_t>(y) * w * ch;
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  if (ch == 3 && want_c == 1) {  // RGB -> gray in place
    for (int64_t i = 0; i < img.h * img.w; ++i)
      img.px[static_cast<size_t>(i)] = luma(img.px[static_cast<size_t>(3 * i)], img.px[static_cast<size_t>(3 * i + 1)],
                                            img.px[static_cast<size_t>(3 * i + 2)]);
    img.px.resize(static_cast<size_t>(img.h * img.w));
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Bilinear resize: separable triangle filter on pixel centers, support widened by the scale factor
// when shrinking (the antialiased bilinear of PIL); plain bilinear interpolation when enlarging.

struct Taps {
  std::vector<int64_t> first;  // first input index per output index
  std::vector<int64_t> count;
  std::vector<float> weights;  // count[i] weights per output i, at offset i * max_taps
  int64_t max_taps = 0;
};

Taps taps(int64_t in, int64_t out) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double fscale = std::max(scale, 1.0), support = fscale;
  Taps t;
  t.max_taps = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  t.first.resize(static_cast<size_t>(out));
  t.count.resize(static_cast<size_t>(out));
  t.weights.assign(static_cast<size_t>(out * t.max_taps), 0.0f);
  for (int64_t i = 0; i < out; ++i) {
    const double center = (static_cast<double>(i) + 0.5) * scale;
    const int64_t lo = std::max<int64_t>(0, static_cast<int64_t>(std::floor(center - support)));
    const int64_t hi = std::min<int64_t>(in, static_cast<int64_t>(std::ceil(center + support)));
    double sum = 0;
    std::vector<double> w;
    for (int64_t x = lo; x < hi; ++x) {
      const double d = std::abs((static_cast<double>(x) + 0.5 - center) / fscale);
      w.push_back(d < 1.0 ? 1.0 - d : 0.0);
      sum += w.back();
    }
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(w.size()), t.max_taps);
    t.first[static_cast<size_t>(i)] = lo;
    t.count[static_cast<size_t>(i)] = n;
    for (int64_t k = 0; k < n; ++k)
      t.weights[static_cast<size_t>(i * t.max_taps + k)] =
          static_cast<float>(sum > 0 ? w[static_cast<size_t>(k)] / sum : 0.0);
  }
  return t;
}

void resize(const Image& in, int64_t oh, int64_t ow, uint8_t* out) {
  const int64_t c = in.c;
  if (in.h == oh && in.w == ow) {
    std::memcpy(out, in.px.data(), static_cast<size_t>(oh * ow * c));
    return;
  }
  const Taps tx = taps(in.w, ow), ty = taps(in.h, oh);
  std::vector<float> mid(static_cast<size_t>(in.h * ow * c), 0.0f);  // horizontal pass
  for (int64_t y = 0; y < in.h; ++y)
    for (int64_t x = 0; x < ow; ++x) {
      const uint8_t* src = in.px.data() + (y * in.w + tx.first[static_cast<size_t>(x)]) * c;
      const float* w = tx.weights.data() + x * tx.max_taps;
      float* dst = mid.data() + (y * ow + x) * c;
      for (int64_t k = 0; k < tx.count[static_cast<size_t>(x)]; ++k)
        for (int64_t ch = 0; ch < c; ++ch) dst[ch] += w[k] * src[k * c + ch];
    }
  for (int64_t y = 0; y < oh; ++y) {  // vertical pass
    const float* w = ty.weights.data() + y * ty.max_taps;
    const int64_t y0 = ty.first[static_cast<size_t>(y)];
    for (int64_t x = 0; x < ow; ++x)
      for (int64_t ch = 0; ch < c; ++ch) {
        float v = 0;
        for (int64_t k = 0; k < ty.count[static_cast<size_t>(y)]; ++k)
          v += w[k] * mid[static_cast<size_t>(((y0 + k) * ow + x) * c + ch)];
        out[(y * ow + x) * c + ch] = static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
      }
  }
}

// Reads, decodes and resizes one file into out (oh * ow * c bytes). false + reason when it is bad.
bool load_image(const std::string& path, int64_t oh, int64_t ow, int64_t c, uint8_t* out, std::string& reason) {
  try {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) {
      reason = std::string("cannot open: ") + std::strerror(errno);
      return false;
    }
    std::vector<uint8_t> bytes;
    uint8_t buf[1 << 16];
    size_t got;
    bool too_large = false;
    while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) {
      bytes.insert(bytes.end(), buf, buf + got);
      if (static_cast<int64_t>(bytes.size()) > kMaxFileBytes) {
        too_large = true;
        break;
      }
    }
    const bool read_error = std::ferror(f) != 0;
    const int read_errno = errno;
    std::fclose(f);
    if (read_error) {
      reason = std::string("read error: ") + std::strerror(read_errno);
      return false;
    }
    if (too_large) {
      reason = "file larger than 1 GiB";
      return false;
    }
    if (bytes.empty()) {
      reason = "empty file (0 bytes)";
      return false;
    }
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    Image img;
    bool ok;
    if (bytes.size() >= 3 && bytes[0] == 0xff && bytes[1] == 0xd8 && bytes[2] == 0xff) {
      ok = decode_jpeg(bytes, c, img, reason);
    } else if (bytes.size() >= 8 && std::memcmp(bytes.data(), png_sig, 8) == 0) {
      ok = decode_png(bytes, c, img, reason);
    } else {
      reason = "not a JPEG or PNG image (unrecognized file signature)";
      return false;
    }
    if (!ok) return false;
    if (img.h <= 0 || img.w <= 0) {
      reason = "image has no pixels";
      return false;
    }
    resize(img, oh, ow, out);
    return true;
  } catch (const std::exception& e) {  // e.g. std::bad_alloc: still only this file is bad
    reason = std::string("cannot decode: ") + e.what();
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// The folder listing: built on rank 0, broadcast to all ranks.

struct Listing {
  std::vector<std::string> classes;
  std::vector<std::string> paths;
  std::vector<int32_t> labels;
};

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

Listing scan(const fs::path& root) {
  std::error_code ec;
  ST_CHECK(fs::is_directory(root, ec), root.string(), " is not a folder");
  Listing l;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory() && e.path().filename().string()[0] != '.') l.classes.push_back(e.path().filename().string());
  ST_CHECK(!l.classes.empty(), root.string(), ": no class subfolders (expected ", root.string(),
           "/<class>/*.jpg|jpeg|png)");
  std::sort(l.classes.begin(), l.classes.end());
  for (size_t c = 0; c < l.classes.size(); ++c) {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(root / l.classes[c])) {
      const std::string name = e.path().filename().string();
      if (!e.is_directory() && name[0] != '.' && is_image_name(e.path())) files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    if (files.empty())
      std::fprintf(stderr, "st-pack-folder: warning: class '%s' has no .jpg/.jpeg/.png files\n", l.classes[c].c_str());
    for (auto& f : files) {
      l.paths.push_back(std::move(f));
      l.labels.push_back(static_cast<int32_t>(c));
    }
  }
  ST_CHECK(!l.paths.empty(), root.string(), ": no .jpg/.jpeg/.png files in its ", l.classes.size(), " class subfolder",
           l.classes.size() > 1 ? "s" : "");
  return l;
}

std::string join0(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s.append(x).push_back('\0');
  return s;
}

std::vector<std::string> split0(const char* p, size_t n) {
  std::vector<std::string> v;
  for (size_t i = 0; i < n;) {
    const size_t len = std::strlen(p + i);
    v.emplace_back(p + i, len);
    i += len + 1;
  }
  return v;
}

void bcast_bytes(std::string& s, int rank) {
  int64_t n = static_cast<int64_t>(s.size());
  ST_MPI_CHECK(MPI_Bcast(&n, 1, MPI_INT64_T, 0, MPI_COMM_WORLD));
  if (rank != 0) s.resize(static_cast<size_t>(n));
  for (int64_t off = 0; off < n; off += int64_t{1} << 30) {
    const int count = static_cast<int>(std::min<int64_t>(int64_t{1} << 30, n - off));
    ST_MPI_CHECK(MPI_Bcast(s.data() + off, count, MPI_CHAR, 0, MPI_COMM_WORLD));
  }
}

// Rank 0 scans; every rank gets the listing, or the error message (and all return false).
bool share_listing(const fs::path& root, int rank, Listing& l, std::string& error) {
  std::string status(1, '\1'), blob;
  if (rank == 0) {
    try {
      l = scan(root);
    } catch (const std::exception& e) {
      status[0] = '\0';
      error = e.what();
    }
  }
  bcast_bytes(status, rank);
  if (status[0] == '\0') return false;
  std::string classes = rank == 0 ? join0(l.classes) : std::string(),
              paths = rank == 0 ? join0(l.paths) : std::string();
  bcast_bytes(classes, rank);
  bcast_bytes(paths, rank);
  if (rank != 0) {
    l.classes = split0(classes.data(), classes.size());
    l.paths = split0(paths.data(), paths.size());
    l.labels.resize(l.paths.size());
  }
  ST_MPI_CHECK(MPI_Bcast(l.labels.data(), static_cast<int>(l.labels.size()), MPI_INT32_T, 0, MPI_COMM_WORLD));
  return true;
}

// Seeded, stratified hold-out: in each class, round(n * fraction) files chosen by a Fisher-Yates
// shuffle driven by mt19937_64 (whose sequence the C++ standard fixes) go to "val".
std::vector<uint8_t> choose_val(const Listing& l, double fraction, uint64_t seed) {
  std::vector<uint8_t> is_val(l.paths.size(), 0);
  if (fraction <= 0) return is_val;
  std::mt19937_64 rng(seed);
  size_t begin = 0;
  while (begin < l.paths.size()) {
    size_t end = begin;
    while (end < l.paths.size() && l.labels[end] == l.labels[begin]) ++end;
    std::vector<size_t> idx(end - begin);
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = begin + i;
    for (size_t i = idx.size(); i > 1; --i) std::swap(idx[i - 1], idx[static_cast<size_t>(rng() % i)]);
    const auto n_val = static_cast<size_t>(std::llround(static_cast<double>(idx.size()) * fraction));
    for (size_t i = 0; i < n_val; ++i) is_val[idx[i]] = 1;
    begin = end;
  }
  return is_val;
}

void parse_size(const std::string& s, int64_t& h, int64_t& w) {
  const size_t x = s.find_first_of("xX");
  try {
    size_t used = 0;
    h = std::stoll(s.substr(0, x), &used);
    ST_CHECK(used == (x == std::string::npos ? s.size() : x), "");
    if (x == std::string::npos) {
      w = h;
    } else {
      w = std::stoll(s.substr(x + 1), &used);
      ST_CHECK(used == s.size() - x - 1, "");
    }
  } catch (const std::exception&) {
    ST_FAIL("--size must be HxW or N (square), e.g. 64x48, not '", s, "'");
  }
  ST_CHECK(h > 0 && w > 0 && h <= 16384 && w <= 16384, "--size ", s, ": sides must be 1..16384");
}

// Rank 0's spill file, unlinked right after it is created: closing it (also on errors) frees it.
struct Spill {
  std::FILE* f = nullptr;
  ~Spill() {
    if (f) std::fclose(f);
  }
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  set_error_rank(rank);

  CLI::App app{"Pack an image folder (root/<class>/*.jpg|jpeg|png) into a scaletrain HDF5 dataset"};
  std::string dir, out, size_arg, on_error = "skip";
  int64_t channels = 3, chunk_kb = 1024;
  double val_fraction = 0;
  uint64_t seed = 0;
  int gzip = 0;
  app.add_option("--dir", dir, "root folder: one subfolder of images per class")->required();
  app.add_option("-o,--output", out, "output HDF5 file")->required();
  app.add_option("--size", size_arg, "sample size HxW (or N for NxN); every image is resized to it")->required();
  app.add_option("--channels", channels, "3: RGB, 1: gray")->check(CLI::IsMember({1, 3}))->capture_default_str();
  app.add_option("--val-fraction", val_fraction, "fraction of each class held out as the \"val\" split")
      ->check(CLI::Range(0.0, 0.999))
      ->capture_default_str();
  app.add_option("--seed", seed, "seed of the train/val split")->capture_default_str();
  app.add_option("--on-error", on_error, "bad image files: skip (report and leave out) or fail (exit 1)")
      ->check(CLI::IsMember({"skip", "fail"}))
      ->capture_default_str();
  app.add_option("--gzip", gzip, "deflate level 0-9 (0: none)")->check(CLI::Range(0, 9))->capture_default_str();
  app.add_option("--chunk-kb", chunk_kb, "target chunk size in KiB")->check(CLI::PositiveNumber)->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = rank == 0 ? app.exit(e) : e.get_exit_code();
    MPI_Finalize();
    return rc;
  }

  int rc = 0;
  try {
    int64_t oh = 0, ow = 0;
    parse_size(size_arg, oh, ow);
    const int64_t sample_bytes = oh * ow * channels;
    Listing l;
    std::string error;
    if (!share_listing(dir, rank, l, error)) {
      if (rank == 0) std::fprintf(stderr, "st-pack-folder: error: %s\n", error.c_str());
      MPI_Finalize();
      return 1;
    }
    const auto n_files = static_cast<int64_t>(l.paths.size());
    const std::vector<uint8_t> is_val = choose_val(l, val_fraction, seed);
    const bool fail_fast = on_error == "fail";
    if (rank == 0) {
      std::printf("%lld image files in %zu classes under %s; decoding on %d rank%s to %lldx%lldx%lld\n",
                  static_cast<long long>(n_files), l.classes.size(), dir.c_str(), size, size > 1 ? "s" : "",
                  static_cast<long long>(oh), static_cast<long long>(ow), static_cast<long long>(channels));
      std::fflush(stdout);
    }

    // Rank 0's state: the spill file of good samples in file order, and their labels and splits.
    Spill spill;
    std::vector<int32_t> good_labels;
    std::vector<uint8_t> good_val;
    std::vector<uint8_t> all_status, all_samples;
    std::string all_reasons;
    std::string fatal_message, first_bad;
    int64_t bad_total = 0;
    int spill_ok = 1;
    if (rank == 0) {
      const std::string spill_path = out + ".spill." + std::to_string(getpid());
      spill.f = std::fopen(spill_path.c_str(), "w+b");
      if (spill.f) {
        ::unlink(spill_path.c_str());  // anonymous from now on: gone when closed, even after a crash
      } else {
        std::fprintf(stderr, "st-pack-folder: error: cannot create %s next to the output: %s\n", spill_path.c_str(),
                     std::strerror(errno));
        spill_ok = 0;
      }
    }
    ST_MPI_CHECK(MPI_Bcast(&spill_ok, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (!spill_ok) {
      MPI_Finalize();
      return 1;
    }

    // Blocks of size * per_rank files; block starts are multiples of size, so in a block starting at
    // s, rank r decodes s + r, s + r + size, ... and file j is item (j - s) / size of rank j % size.
    const int64_t per_rank = std::clamp<int64_t>(kBlockBytesPerRank / sample_bytes, 1, 256);
    const int64_t block = per_rank * size;
    auto last_report = std::chrono::steady_clock::now();
    bool stopped = false;
    for (int64_t s = 0; s < n_files && !stopped; s += block) {
      const int64_t e = std::min(n_files, s + block);
      std::vector<int> counts(static_cast<size_t>(size)), displs(static_cast<size_t>(size));
      for (int r = 0; r < size; ++r) {
        counts[static_cast<size_t>(r)] = static_cast<int>(e - s > r ? (e - s - r + size - 1) / size : 0);
        displs[static_cast<size_t>(r)] =
            r == 0 ? 0 : displs[static_cast<size_t>(r - 1)] + counts[static_cast<size_t>(r - 1)];
      }
      const int mine = counts[static_cast<size_t>(rank)];
      std::vector<uint8_t> status(static_cast<size_t>(mine)), samples(static_cast<size_t>(mine * sample_bytes), 0);
      std::string reasons;  // one '\0'-terminated reason per bad file, in order
      int local_bad = 0;
      for (int k = 0; k < mine; ++k) {
        const int64_t j = s + rank + static_cast<int64_t>(k) * size;
        std::string reason;
        const bool ok =
            load_image(l.paths[static_cast<size_t>(j)], oh, ow, channels, samples.data() + k * sample_bytes, reason);
        status[static_cast<size_t>(k)] = ok ? 1 : 0;
        if (!ok) {
          ++local_bad;
          reasons.append(reason).push_back('\0');
        }
      }
      // Gather status, samples and reasons on rank 0.
      std::vector<int> byte_counts(static_cast<size_t>(size)), byte_displs(static_cast<size_t>(size));
      for (int r = 0; r < size; ++r) {
        byte_counts[static_cast<size_t>(r)] = static_cast<int>(counts[static_cast<size_t>(r)] * sample_bytes);
        byte_displs[static_cast<size_t>(r)] = static_cast<int>(displs[static_cast<size_t>(r)] * sample_bytes);
      }
      if (rank == 0) {
        all_status.resize(static_cast<size_t>(e - s));
        all_samples.resize(static_cast<size_t>((e - s) * sample_bytes));
      }
      ST_MPI_CHECK(MPI_Gatherv(status.data(), mine, MPI_UINT8_T, all_status.data(), counts.data(), displs.data(),
                               MPI_UINT8_T, 0, MPI_COMM_WORLD));
      ST_MPI_CHECK(MPI_Gatherv(samples.data(), static_cast<int>(mine * sample_bytes), MPI_UINT8_T, all_samples.data(),
                               byte_counts.data(), byte_displs.data(), MPI_UINT8_T, 0, MPI_COMM_WORLD));
      int reason_len = static_cast<int>(reasons.size());
      std::vector<int> reason_counts(static_cast<size_t>(size)), reason_displs(static_cast<size_t>(size));
      ST_MPI_CHECK(MPI_Gather(&reason_len, 1, MPI_INT, reason_counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD));
      if (rank == 0) {
        for (int r = 1; r < size; ++r)
          reason_displs[static_cast<size_t>(r)] =
              reason_displs[static_cast<size_t>(r - 1)] + reason_counts[static_cast<size_t>(r - 1)];
        all_reasons.resize(static_cast<size_t>(reason_displs.back() + reason_counts.back()));
      }
      ST_MPI_CHECK(MPI_Gatherv(reasons.data(), reason_len, MPI_CHAR, all_reasons.data(), reason_counts.data(),
                               reason_displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD));

      // Rank 0 files the block: good samples to the spill, bad files reported (skip) or remembered.
      int fatal = 0;
      if (rank == 0) {
        try {
          std::vector<size_t> cursor(reason_displs.begin(), reason_displs.end());
          for (int64_t j = s; j < e; ++j) {
            const auto r = static_cast<size_t>(j % size);
            const int64_t item = displs[r] + (j - s) / size;
            const std::string& path = l.paths[static_cast<size_t>(j)];
            if (all_status[static_cast<size_t>(item)] == 0) {
              const std::string reason(all_reasons.data() + cursor[r]);
              cursor[r] += reason.size() + 1;
              ++bad_total;
              if (fail_fast) {
                if (first_bad.empty()) first_bad = path + ": " + reason;
              } else {
                std::fprintf(stderr, "st-pack-folder: skipping %s: %s\n", path.c_str(), reason.c_str());
              }
              continue;
            }
            ST_CHECK(std::fwrite(all_samples.data() + item * sample_bytes, 1, static_cast<size_t>(sample_bytes),
                                 spill.f) == static_cast<size_t>(sample_bytes),
                     "writing the spill file next to ", out, ": ", std::strerror(errno));
            good_labels.push_back(l.labels[static_cast<size_t>(j)]);
            good_val.push_back(is_val[static_cast<size_t>(j)]);
          }
        } catch (const std::exception& ex) {
          fatal = 1;
          fatal_message = ex.what();
        }
      }
      // Every rank learns whether to stop: a bad file under --on-error fail, or rank 0 failing.
      int local[2] = {local_bad, fatal}, global[2] = {0, 0};
      ST_MPI_CHECK(MPI_Allreduce(local, global, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
      if (global[1] > 0 || (fail_fast && global[0] > 0)) {
        stopped = true;
        rc = 1;
        if (rank == 0) {
          if (global[1] > 0)
            std::fprintf(stderr, "st-pack-folder: error: %s\n", fatal_message.c_str());
          else
            std::fprintf(stderr, "st-pack-folder: error: bad image %s (--on-error fail)\n", first_bad.c_str());
        }
      }
      const auto now = std::chrono::steady_clock::now();
      if (rank == 0 && !stopped && (now - last_report > std::chrono::seconds(2) || e == n_files)) {
        std::printf("  decoded %lld / %lld files (%lld bad)\n", static_cast<long long>(e),
                    static_cast<long long>(n_files), static_cast<long long>(bad_total));
        std::fflush(stdout);
        last_report = now;
      }
    }

    // Rank 0 copies the spill into the HDF5 file; the others wait for its verdict.
    if (rc == 0 && rank == 0) {
      try {
        const auto n_good = static_cast<int64_t>(good_labels.size());
        int64_t n_val = 0;
        for (uint8_t v : good_val) n_val += v;
        const int64_t n_train = n_good - n_val;
        ST_CHECK(n_train > 0, dir, ": no good images left for the train split");
        if (val_fraction > 0 && n_val == 0)
          std::fprintf(stderr, "st-pack-folder: warning: --val-fraction %g leaves no image for \"val\"\n",
                       val_fraction);
        data::DatasetWriter w(out, l.classes, Shape{oh, ow, channels}, DType::u8,
                              data::WriterOptions{chunk_kb * 1024, gzip});
        w.create_split("train", n_train, dir);
        if (n_val > 0) w.create_split("val", n_val, dir);
        const int64_t rows = std::max<int64_t>(w.chunk_samples(), 1);
        struct Out {
          const char* split;
          int64_t written = 0, total = 0;
          std::vector<uint8_t> samples;
          std::vector<int32_t> labels;
        };
        Out outs[2] = {{"train", 0, n_train, {}, {}}, {"val", 0, n_val, {}, {}}};
        auto flush = [&](Out& o) {
          const auto n = static_cast<int64_t>(o.labels.size());
          if (n == 0) return;
          w.write(o.split, o.written, n, o.samples.data(), o.labels.data());
          o.written += n;
          o.samples.clear();
          o.labels.clear();
        };
        std::rewind(spill.f);
        std::vector<uint8_t> sample(static_cast<size_t>(sample_bytes));
        for (int64_t i = 0; i < n_good; ++i) {
          ST_CHECK(std::fread(sample.data(), 1, sample.size(), spill.f) == sample.size(),
                   "reading back the spill file");
          Out& o = outs[good_val[static_cast<size_t>(i)]];
          o.samples.insert(o.samples.end(), sample.begin(), sample.end());
          o.labels.push_back(good_labels[static_cast<size_t>(i)]);
          if (static_cast<int64_t>(o.labels.size()) == rows) flush(o);
        }
        flush(outs[0]);
        flush(outs[1]);
        w.store_statistics("train");
        w.finish();
        std::printf("train: %lld samples, val: %lld samples, %zu classes, [%lld, %lld, %lld] uint8\n",
                    static_cast<long long>(n_train), static_cast<long long>(n_val), l.classes.size(),
                    static_cast<long long>(oh), static_cast<long long>(ow), static_cast<long long>(channels));
        if (bad_total > 0)
          std::fprintf(stderr, "st-pack-folder: skipped %lld bad file%s\n", static_cast<long long>(bad_total),
                       bad_total > 1 ? "s" : "");
        std::printf("wrote %s\n", out.c_str());
        std::fflush(stdout);
      } catch (const std::exception& ex) {
        std::fprintf(stderr, "st-pack-folder: error: %s\n", ex.what());
        rc = 1;
      }
    }
    ST_MPI_CHECK(MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD));
  } catch (const std::exception& e) {
    // Only thrown where every rank throws alike (argument checks) or on MPI failures, so no rank
    // is left waiting in a collective.
    if (rank == 0) std::fprintf(stderr, "st-pack-folder: error: %s\n", e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
