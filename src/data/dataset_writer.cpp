// DatasetWriter: chunked HDF5 datasets along N, optional deflate, tmp + rename.
#include "scaletrain/data/dataset_writer.hpp"

#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "scaletrain/core/check_hdf5.hpp"
#include "scaletrain/data/dataset_file.hpp"

namespace scaletrain::data {
namespace {
hid_t file_type(DType d) {
  switch (d) {
    case DType::u8: return H5T_STD_U8LE;
    case DType::f32: return H5T_IEEE_F32LE;
    default: return -1;
  }
}
hid_t mem_type(DType d) { return d == DType::u8 ? H5T_NATIVE_UINT8 : H5T_NATIVE_FLOAT; }

// IEEE half in the file (HDF5 has no predefined one): 1 sign, 5 exponent, 10 mantissa bits.
H5Handle half_type() {
  H5Handle t(H5Tcopy(H5T_IEEE_F32LE), H5Tclose);
  H5Tset_fields(t.get(), 15, 10, 5, 0, 10);
  H5Tset_size(t.get(), 2);
  H5Tset_ebias(t.get(), 15);
  return t;
}
}  // namespace

DatasetWriter::DatasetWriter(std::string path, std::vector<std::string> classes, Shape sample_shape, DType dtype,
                             WriterOptions options)
    : path_(std::move(path)), tmp_path_(path_ + ".tmp." + std::to_string(getpid())), sample_shape_(std::move(sample_shape)), dtype_(dtype),
      options_(options) {
  ST_CHECK(dtype == DType::u8 || dtype == DType::f32 || dtype == DType::f16, "data set ", path_,
           ": samples must be uint8, float16 or float32, not ", dtype_name(dtype));
  ST_CHECK(!classes.empty(), "data set ", path_, ": at least one class is needed");
  ST_CHECK(!sample_shape_.empty(), "data set ", path_, ": empty sample shape");
  for (int64_t d : sample_shape_) ST_CHECK(d > 0, "data set ", path_, ": sample dimensions must be positive");
  ST_CHECK(options.gzip_level >= 0 && options.gzip_level <= 9, "gzip level must be 0..9, got ", options.gzip_level);
  const int64_t sample_bytes = shape_numel(sample_shape_) * static_cast<int64_t>(dtype_size(dtype));
  chunk_samples_ = std::max<int64_t>(1, options.chunk_bytes / sample_bytes);
  std::lock_guard lock(hdf5_mutex());
  quiet_hdf5_errors();
  file_ = H5Handle(ST_HDF5_CHECK(H5Fcreate(tmp_path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), "creating ",
                                 tmp_path_),
                   H5Fclose);
  write_string_attr(file_.get(), "format", kFormatName);
  write_int_attr(file_.get(), "version", kFormatVersion);
  write_string_array_attr(file_.get(), "classes", classes);
  write_int_array_attr(file_.get(), "sample_shape", std::vector<int64_t>(sample_shape_.begin(), sample_shape_.end()));
}

DatasetWriter::~DatasetWriter() {
  if (finished_) return;
  std::lock_guard lock(hdf5_mutex());
  file_.reset();
  std::error_code ec;
  std::filesystem::remove(tmp_path_, ec);
}

void DatasetWriter::create_split(const std::string& split, int64_t n, const std::string& source) {
  ST_CHECK(split == "train" || split == "val" || split == "test", "split must be train, val or test, not '", split,
           "'");
  ST_CHECK(n > 0, "split '", split, "' of ", path_, " needs at least one sample");
  std::lock_guard lock(hdf5_mutex());
  H5Handle g(ST_HDF5_CHECK(H5Gcreate2(file_.get(), split.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                           "creating split ", split, " in ", tmp_path_),
             H5Gclose);
  write_string_attr(g.get(), "source", source);
  std::vector<hsize_t> dims{static_cast<hsize_t>(n)};
  for (int64_t d : sample_shape_) dims.push_back(static_cast<hsize_t>(d));
  std::vector<hsize_t> chunk = dims;
  chunk[0] = static_cast<hsize_t>(std::min(chunk_samples_, n));
  H5Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data());
  if (options_.gzip_level > 0) {
    H5Pset_shuffle(dcpl.get());
    H5Pset_deflate(dcpl.get(), static_cast<unsigned>(options_.gzip_level));
  }
  H5Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  H5Handle ht = half_type();
  const hid_t ft = dtype_ == DType::f16 ? ht.get() : file_type(dtype_);
  H5Handle ds(ST_HDF5_CHECK(H5Dcreate2(g.get(), "samples", ft, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                            "creating ", split, "/samples in ", tmp_path_),
              H5Dclose);
  hsize_t ln = static_cast<hsize_t>(n), lc = chunk[0] * 16;
  lc = std::min(lc, ln);
  H5Handle lspace(H5Screate_simple(1, &ln, nullptr), H5Sclose);
  H5Handle lcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_chunk(lcpl.get(), 1, &lc);
  H5Handle dl(ST_HDF5_CHECK(H5Dcreate2(g.get(), "labels", H5T_STD_I32LE, lspace.get(), H5P_DEFAULT, lcpl.get(),
                                       H5P_DEFAULT),
                            "creating ", split, "/labels in ", tmp_path_),
              H5Dclose);
  stats_.insert_or_assign(split, ChannelStatistics(sample_shape_.back()));
}

void DatasetWriter::write(const std::string& split, int64_t start, int64_t count, const void* samples,
                          const int32_t* labels) {
  if (count == 0) return;
  auto it = stats_.find(split);
  ST_CHECK(it != stats_.end(), "write to split '", split, "' before create_split");
  {
    std::lock_guard lock(hdf5_mutex());
    for (const char* name : {"samples", "labels"}) {
      const std::string dset = "/" + split + "/" + name;
      H5Handle ds(ST_HDF5_CHECK(H5Dopen2(file_.get(), dset.c_str(), H5P_DEFAULT), tmp_path_), H5Dclose);
      H5Handle fs(H5Dget_space(ds.get()), H5Sclose);
      const int nd = H5Sget_simple_extent_ndims(fs.get());
      std::vector<hsize_t> dims(static_cast<size_t>(nd));
      H5Sget_simple_extent_dims(fs.get(), dims.data(), nullptr);
      ST_CHECK(start >= 0 && static_cast<hsize_t>(start + count) <= dims[0], "rows [", start, ", ", start + count,
               ") outside ", dset, " of ", dims[0]);
      std::vector<hsize_t> off(dims.size(), 0), cnt = dims;
      off[0] = static_cast<hsize_t>(start);
      cnt[0] = static_cast<hsize_t>(count);
      H5Sselect_hyperslab(fs.get(), H5S_SELECT_SET, off.data(), nullptr, cnt.data(), nullptr);
      H5Handle ms(H5Screate_simple(nd, cnt.data(), nullptr), H5Sclose);
      const bool is_samples = name[0] == 's';
      H5Handle ht = half_type();
      const hid_t mt = is_samples ? (dtype_ == DType::f16 ? ht.get() : mem_type(dtype_)) : H5T_NATIVE_INT32;
      ST_HDF5_CHECK(H5Dwrite(ds.get(), mt, ms.get(), fs.get(), H5P_DEFAULT, is_samples ? samples : labels),
                    "writing ", dset, " of ", tmp_path_);
    }
  }
  if (!options_.statistics) return;
  const int64_t n = count * shape_numel(sample_shape_);
  it->second.add_stored(dtype_, samples, n);
}

void DatasetWriter::store_statistics(const std::string& split) {
  auto it = stats_.find(split);
  ST_CHECK(it != stats_.end() && it->second.count() > 0, "no samples written to split '", split, "'");
  store_statistics(split, it->second);
}

void DatasetWriter::store_statistics(const std::string& split, const ChannelStatistics& stats) {
  ST_CHECK(stats.count() > 0, "no statistics of split '", split, "' to store");
  std::lock_guard lock(hdf5_mutex());
  H5Handle g(ST_HDF5_CHECK(H5Gopen2(file_.get(), split.c_str(), H5P_DEFAULT), tmp_path_), H5Gclose);
  write_float_array_attr(g.get(), "mean", stats.mean());
  write_float_array_attr(g.get(), "std", stats.std());
}

void DatasetWriter::finish() {
  {
    std::lock_guard lock(hdf5_mutex());
    ST_HDF5_CHECK(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), "flushing ", tmp_path_);
    file_.reset();
  }
  std::error_code ec;
  std::filesystem::rename(tmp_path_, path_, ec);
  ST_CHECK(!ec, "renaming ", tmp_path_, " to ", path_, ": ", ec.message());
  finished_ = true;
}

}  // namespace scaletrain::data
