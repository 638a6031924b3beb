// Opening, validating and reading scaletrain dataset files.
#include "scaletrain/data/dataset_file.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "scaletrain/core/check_hdf5.hpp"
#include "scaletrain/core/join.hpp"

namespace scaletrain::data {
namespace {

constexpr const char* kKnownSplits[] = {"train", "val", "test"};

DType dtype_of_hdf5(hid_t t, bool* ok) {
  *ok = true;
  if (H5Tequal(t, H5T_STD_U8LE) > 0) return DType::u8;
  if (H5Tequal(t, H5T_IEEE_F32LE) > 0) return DType::f32;
  if (H5Tget_class(t) == H5T_FLOAT && H5Tget_size(t) == 2) return DType::f16;
  *ok = false;
  return DType::u8;
}

hid_t hdf5_mem_type(DType d) {
  switch (d) {
    case DType::u8: return H5T_NATIVE_UINT8;
    case DType::f32: return H5T_NATIVE_FLOAT;
    case DType::i32: return H5T_NATIVE_INT32;
    default: return H5T_NATIVE_UINT16;  // f16/bf16: raw 16-bit patterns
  }
}

bool link_exists(hid_t loc, const std::string& name) {
  return H5Lexists(loc, name.c_str(), H5P_DEFAULT) > 0;
}

std::vector<hsize_t> dims_of(hid_t dset) {
  H5Handle space(H5Dget_space(dset), H5Sclose);
  const int nd = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> d(static_cast<size_t>(std::max(nd, 0)));
  if (nd > 0) H5Sget_simple_extent_dims(space.get(), d.data(), nullptr);
  return d;
}

std::string listed(const std::vector<std::string>& v) { return v.empty() ? "(none)" : join(v); }

// Validation of an open file; appends problems, never throws for file content.
void check_file(hid_t f, const std::vector<std::string>& required, std::vector<std::string>& problems) {
  const char* fix_pack = " (pack the data with a data-tools program, e.g. st-pack-idx or st-synth)";
  if (!has_attr(f, "format")) {
    problems.push_back(std::string("no 'format' attribute on '/': not a scaletrain dataset") + fix_pack);
    return;
  }
  const std::string format = read_string_attr(f, "format");
  if (format != kFormatName) {
    problems.push_back("format attribute is '" + format + "', expected '" + kFormatName + "'" + fix_pack);
    return;
  }
  if (!has_attr(f, "version")) {
    problems.push_back("no 'version' attribute on '/'" + std::string(fix_pack));
    return;
  }
  const int64_t version = read_int_attr(f, "version");
  if (version != kFormatVersion) {
    problems.push_back("format version " + std::to_string(version) + " is not supported (this build reads version " +
                       std::to_string(kFormatVersion) + "); repack the data with this build's data-tools");
    return;
  }
  if (!has_attr(f, "classes")) problems.push_back("no 'classes' attribute on '/' (the class names)");
  if (!has_attr(f, "sample_shape")) problems.push_back("no 'sample_shape' attribute on '/'");
  if (!problems.empty()) return;
  const auto classes = read_string_array_attr(f, "classes");
  const auto shape = read_int_array_attr(f, "sample_shape");
  if (classes.empty()) problems.push_back("'classes' is empty: a data set needs at least one class");
  for (int64_t d : shape)
    if (d <= 0) problems.push_back("sample_shape has a non-positive dimension");

  std::vector<std::string> present;
  for (const char* s : kKnownSplits)
    if (link_exists(f, s)) present.push_back(s);
  for (const auto& r : required)
    if (std::find(present.begin(), present.end(), r) == present.end())
      problems.push_back("missing split '" + r + "' (the file has: " + listed(present) +
                         "); pack it with the tool's split options");
  for (const auto& s : present) {
    const std::string sp = "/" + s + "/samples", lp = "/" + s + "/labels";
    if (!link_exists(f, "/" + s + "/samples") || !link_exists(f, "/" + s + "/labels")) {
      problems.push_back("split '" + s + "' lacks " + sp + " or " + lp);
      continue;
    }
    H5Handle ds(H5Dopen2(f, sp.c_str(), H5P_DEFAULT), H5Dclose);
    H5Handle dl(H5Dopen2(f, lp.c_str(), H5P_DEFAULT), H5Dclose);
    if (!ds.valid() || !dl.valid()) {
      problems.push_back("cannot open " + sp + " or " + lp + ": " + hdf5_last_error());
      continue;
    }
    H5Handle st(H5Dget_type(ds.get()), H5Tclose), lt(H5Dget_type(dl.get()), H5Tclose);
    bool ok = false;
    dtype_of_hdf5(st.get(), &ok);
    if (!ok) problems.push_back(sp + " has an unsupported element type (uint8, float16 or float32 expected)");
    if (H5Tget_class(lt.get()) != H5T_INTEGER || H5Tget_size(lt.get()) != 4)
      problems.push_back(lp + " must be int32");
    const auto sd = dims_of(ds.get()), ld = dims_of(dl.get());
    if (sd.size() != shape.size() + 1 || !std::equal(shape.begin(), shape.end(), sd.begin() + 1,
                                                     [](int64_t a, hsize_t b) { return static_cast<hsize_t>(a) == b; })) {
      std::string got;
      for (size_t i = 1; i < sd.size(); ++i) got += (i > 1 ? "x" : "") + std::to_string(sd[i]);
      problems.push_back(sp + " samples are " + got + ", but sample_shape says otherwise");
      continue;
    }
    if (ld.size() != 1 || ld[0] != sd[0]) {
      problems.push_back(lp + " has " + (ld.empty() ? std::string("no") : std::to_string(ld[0])) + " labels for " +
                         std::to_string(sd[0]) + " samples: the split sizes disagree");
      continue;
    }
    if (sd[0] == 0) {
      problems.push_back("split '" + s + "' is empty");
      continue;
    }
    std::vector<int32_t> labels(ld[0]);
    if (H5Dread(dl.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels.data()) < 0) {
      problems.push_back("cannot read " + lp + " (truncated or corrupt file?): " + hdf5_last_error());
      continue;
    }
    const auto [mn, mx] = std::minmax_element(labels.begin(), labels.end());
    if (*mn < 0 || *mx >= static_cast<int32_t>(classes.size())) {
      const auto bad = std::find_if(labels.begin(), labels.end(),
                                    [&](int32_t l) { return l < 0 || l >= static_cast<int32_t>(classes.size()); });
      problems.push_back(lp + " has label " + std::to_string(*bad) + " at index " +
                         std::to_string(bad - labels.begin()) + ", outside [0, " + std::to_string(classes.size()) +
                         ") for the " + std::to_string(classes.size()) + " classes");
    }
    const int64_t channels = shape.empty() ? 1 : shape.back();
    H5Handle g(H5Gopen2(f, ("/" + s).c_str(), H5P_DEFAULT), H5Gclose);
    for (const char* a : {"mean", "std"})
      if (has_attr(g.get(), a) && static_cast<int64_t>(read_float_array_attr(g.get(), a).size()) != channels)
        problems.push_back("/" + s + " attribute '" + a + "' must have one value per channel (" +
                           std::to_string(channels) + ")");
  }
}

std::string open_problem(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return "no such file";
  if (std::filesystem::is_directory(path, ec)) return "is a directory, not an HDF5 file";
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot be opened for reading (permissions?)";
  if (H5Fis_hdf5(path.c_str()) <= 0)
    return "is not an HDF5 file (no HDF5 signature); pack the data with data-tools (st-pack-idx, st-synth, ...)";
  return "";
}

}  // namespace

std::vector<std::string> validate_dataset(const std::string& path, const std::vector<std::string>& required_splits) {
  std::lock_guard lock(hdf5_mutex());
  quiet_hdf5_errors();
  std::vector<std::string> problems;
  if (std::string p = open_problem(path); !p.empty()) return {p};
  H5Handle f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f.valid()) return {"cannot be opened as HDF5 (truncated or corrupt file?): " + hdf5_last_error()};
  try {
    check_file(f.get(), required_splits, problems);
  } catch (const Error& e) {
    problems.push_back(std::string("unreadable metadata (truncated or corrupt file?): ") + e.what());
  }
  return problems;
}

DatasetFile::DatasetFile(const std::string& path, const std::vector<std::string>& required_splits) : path_(path) {
  const auto problems = validate_dataset(path, required_splits);
  if (!problems.empty()) {
    std::string msg = "data set " + path + ": ";
    for (size_t i = 0; i < problems.size(); ++i) msg += (i ? "; " : "") + problems[i];
    ST_USER_FAIL(msg);
  }
  std::lock_guard lock(hdf5_mutex());
  file_ = H5Handle(ST_HDF5_CHECK(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "opening ", path), H5Fclose);
}

DatasetFile::~DatasetFile() {
  std::lock_guard lock(hdf5_mutex());
  file_.reset();
}

std::vector<std::string> DatasetFile::splits() const {
  std::lock_guard lock(hdf5_mutex());
  std::vector<std::string> out;
  for (const char* s : kKnownSplits)
    if (link_exists(file_.get(), s)) out.push_back(s);
  return out;
}

bool DatasetFile::has_split(const std::string& split) const {
  const auto s = splits();
  return std::find(s.begin(), s.end(), split) != s.end();
}

DatasetInfo DatasetFile::info(const std::string& split) const {
  ST_USER_CHECK(has_split(split), "data set ", path_, ": missing split '", split, "' (the file has: ", listed(splits()),
           ")");
  std::lock_guard lock(hdf5_mutex());
  DatasetInfo d;
  d.path = path_;
  d.split = split;
  const hid_t f = file_.get();
  for (int64_t x : read_int_array_attr(f, "sample_shape")) d.sample_shape.push_back(x);
  d.classes = read_string_array_attr(f, "classes");
  H5Handle ds(ST_HDF5_CHECK(H5Dopen2(f, ("/" + split + "/samples").c_str(), H5P_DEFAULT), path_), H5Dclose);
  H5Handle t(H5Dget_type(ds.get()), H5Tclose);
  bool ok = false;
  d.dtype = dtype_of_hdf5(t.get(), &ok);
  d.num_samples = static_cast<int64_t>(dims_of(ds.get())[0]);
  H5Handle g(ST_HDF5_CHECK(H5Gopen2(f, ("/" + split).c_str(), H5P_DEFAULT), path_), H5Gclose);
  // mean/std come from the training split whichever split is read.
  const std::string stats_split = link_exists(f, "train") ? "train" : split;
  H5Handle gs(ST_HDF5_CHECK(H5Gopen2(f, ("/" + stats_split).c_str(), H5P_DEFAULT), path_), H5Gclose);
  if (has_attr(gs.get(), "mean")) d.mean = read_float_array_attr(gs.get(), "mean");
  if (has_attr(gs.get(), "std")) d.std = read_float_array_attr(gs.get(), "std");
  if (has_attr(g.get(), "source")) d.source = read_string_attr(g.get(), "source");
  H5Handle dl(ST_HDF5_CHECK(H5Dopen2(f, ("/" + split + "/labels").c_str(), H5P_DEFAULT), path_), H5Dclose);
  d.stored_bytes = static_cast<int64_t>(H5Dget_storage_size(ds.get()) + H5Dget_storage_size(dl.get()));
  H5Handle dcpl(H5Dget_create_plist(ds.get()), H5Pclose);
  d.compression = "none";
  if (H5Pget_layout(dcpl.get()) == H5D_CHUNKED) {
    std::vector<hsize_t> cd(d.sample_shape.size() + 1);
    H5Pget_chunk(dcpl.get(), static_cast<int>(cd.size()), cd.data());
    d.chunk_samples = static_cast<int64_t>(cd[0]);
    for (int i = 0; i < H5Pget_nfilters(dcpl.get()); ++i) {
      unsigned flags = 0, cv[4] = {};
      size_t nc = 4;
      const H5Z_filter_t fid = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &nc, cv, 0, nullptr, nullptr);
      if (fid == H5Z_FILTER_DEFLATE) d.compression = "gzip-" + std::to_string(nc > 0 ? cv[0] : 0);
    }
  } else {
    d.chunk_samples = d.num_samples;
  }
  return d;
}

size_t DatasetFile::sample_bytes(const std::string& split) const {
  const DatasetInfo d = info(split);
  return static_cast<size_t>(shape_numel(d.sample_shape)) * dtype_size(d.dtype);
}

namespace {
void read_rows(hid_t file, const std::string& path, const std::string& dset, int64_t start, int64_t count,
               hid_t mem_type, void* dst) {
  H5Handle ds(ST_HDF5_CHECK(H5Dopen2(file, dset.c_str(), H5P_DEFAULT), path, " ", dset), H5Dclose);
  H5Handle fs(H5Dget_space(ds.get()), H5Sclose);
  std::vector<hsize_t> dims = dims_of(ds.get());
  ST_CHECK(start >= 0 && count >= 0 && static_cast<hsize_t>(start + count) <= dims[0], "data set ", path, ": rows [",
           start, ", ", start + count, ") outside ", dset, " of ", dims[0], " rows");
  std::vector<hsize_t> off(dims.size(), 0), cnt = dims;
  off[0] = static_cast<hsize_t>(start);
  cnt[0] = static_cast<hsize_t>(count);
  ST_HDF5_CHECK(H5Sselect_hyperslab(fs.get(), H5S_SELECT_SET, off.data(), nullptr, cnt.data(), nullptr), path);
  H5Handle ms(H5Screate_simple(static_cast<int>(cnt.size()), cnt.data(), nullptr), H5Sclose);
  ST_HDF5_CHECK(H5Dread(ds.get(), mem_type, ms.get(), fs.get(), H5P_DEFAULT, dst), "data set ", path, ": reading ",
                dset, " rows [", start, ", ", start + count, ") (truncated or corrupt file?)");
}
}  // namespace

void DatasetFile::read_samples(const std::string& split, int64_t start, int64_t count, void* dst) const {
  if (count == 0) return;
  std::lock_guard lock(hdf5_mutex());
  H5Handle ds(ST_HDF5_CHECK(H5Dopen2(file_.get(), ("/" + split + "/samples").c_str(), H5P_DEFAULT), path_), H5Dclose);
  H5Handle t(H5Dget_type(ds.get()), H5Tclose);
  bool ok = false;
  const DType d = dtype_of_hdf5(t.get(), &ok);
  ds.reset();
  // 16-bit floats are read as stored (the file's own type), other types converted to native.
  read_rows(file_.get(), path_, "/" + split + "/samples", start, count, d == DType::f16 ? t.get() : hdf5_mem_type(d),
            dst);
}

void DatasetFile::read_labels(const std::string& split, int64_t start, int64_t count, int32_t* dst) const {
  if (count == 0) return;
  std::lock_guard lock(hdf5_mutex());
  read_rows(file_.get(), path_, "/" + split + "/labels", start, count, H5T_NATIVE_INT32, dst);
}

}  // namespace scaletrain::data
