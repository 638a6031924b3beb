// A NumPy .npy file as an ArraySource (data/array_source.hpp): the header (format versions 1 to 3:
// magic, version, header length, a Python dict literal with descr, fortran_order and shape) is
// parsed here, and rows are read with pread and widened.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <type_traits>

#include "scaletrain/core/error.hpp"
#include "scaletrain/core/half.hpp"
#include "scaletrain/data/array_source.hpp"

namespace scaletrain::data {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

// The text after `key` (e.g. "'shape':") in the header dict, with leading blanks skipped.
std::string after_key(const std::string& header, const std::string& key, const std::string& path) {
  const size_t at = header.find(key);
  ST_USER_CHECK(at != std::string::npos, path, ": the .npy header has no ", key, " entry: not a NumPy array file");
  size_t p = at + key.size();
  while (p < header.size() && header[p] == ' ') ++p;
  return header.substr(p);
}

ElementType parse_descr(const std::string& header, const std::string& path) {
  const std::string v = after_key(header, "'descr':", path);
  ST_USER_CHECK(!v.empty() && v[0] == '\'', path, " holds a structured array (descr ", v.substr(0, v.find('}')),
                "), not numbers: save one numeric field per .npy file");
  const std::string d = v.substr(1, v.find('\'', 1) - 1);  // e.g. "<f4"
  ST_USER_CHECK(d.size() >= 2, path, ": unreadable dtype '", d, "' in the .npy header");
  ElementType t;
  t.kind = d[1];
  t.big_endian = d[0] == '>';
  t.bytes = std::atoi(d.c_str() + 2);
  const bool ok = (t.kind == 'f' && (t.bytes == 2 || t.bytes == 4 || t.bytes == 8)) ||
                  ((t.kind == 'i' || t.kind == 'u') && (t.bytes == 1 || t.bytes == 2 || t.bytes == 4 || t.bytes == 8));
  ST_USER_CHECK(ok, path, " holds values of NumPy dtype '", d,
                "', which is not a real number type: pack float16/32/64 or (u)int8/16/32/64 arrays "
                "(strings, objects, booleans, complex numbers and dates are refused)");
  return t;
}

std::vector<int64_t> parse_shape(const std::string& header, const std::string& path) {
  const std::string v = after_key(header, "'shape':", path);
  ST_USER_CHECK(!v.empty() && v[0] == '(', path, ": unreadable shape in the .npy header");
  std::vector<int64_t> shape;
  const char* p = v.c_str() + 1;
  while (*p && *p != ')') {
    char* end = nullptr;
    const long long n = std::strtoll(p, &end, 10);
    if (end == p) {
      ++p;
      continue;
    }
    shape.push_back(n);
    p = end;
  }
  return shape;
}

template <class T>
T load(const uint8_t* p, bool swap) {
  T v;
  uint8_t b[sizeof(T)];
  std::memcpy(b, p, sizeof(T));
  if (swap)
    for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
  std::memcpy(&v, b, sizeof(T));
  return v;
}

// Element i of raw bytes of type t as Out (double or int64).
template <class Out>
Out widen(const uint8_t* raw, int64_t i, ElementType t) {
  const uint8_t* p = raw + i * t.bytes;
  const bool s = t.big_endian;
  if (t.kind == 'f') {
    if (t.bytes == 2) return static_cast<Out>(f16_to_float(f16{load<uint16_t>(p, s)}));
    if (t.bytes == 4) return static_cast<Out>(load<float>(p, s));
    return static_cast<Out>(load<double>(p, s));
  }
  if (t.kind == 'i') {
    if (t.bytes == 1) return static_cast<Out>(load<int8_t>(p, s));
    if (t.bytes == 2) return static_cast<Out>(load<int16_t>(p, s));
    if (t.bytes == 4) return static_cast<Out>(load<int32_t>(p, s));
    return static_cast<Out>(load<int64_t>(p, s));
  }
  if (t.bytes == 1) return static_cast<Out>(load<uint8_t>(p, s));
  if (t.bytes == 2) return static_cast<Out>(load<uint16_t>(p, s));
  if (t.bytes == 4) return static_cast<Out>(load<uint32_t>(p, s));
  return static_cast<Out>(load<uint64_t>(p, s));
}

class NpyArray : public ArraySource {
 public:
  explicit NpyArray(const std::string& path) {
    spec_ = path;
    fd_ = ::open(path.c_str(), O_RDONLY);
    ST_USER_CHECK(fd_ >= 0, "cannot open ", path, ": ", std::strerror(errno));
    read_header();
  }
  ~NpyArray() override { ::close(fd_); }

  void read_rows(int64_t start, int64_t count, double* out) const override { read(start, count, out); }
  void read_rows(int64_t start, int64_t count, int64_t* out) const override { read(start, count, out); }

 private:
  void read_header() {
    uint8_t pre[12] = {};
    const ssize_t got = ::pread(fd_, pre, sizeof pre, 0);
    ST_USER_CHECK(got >= 10 && std::memcmp(pre, kMagic, 6) == 0, spec_,
                  " is not a NumPy .npy file (no \\x93NUMPY signature)");
    const int major = pre[6];
    ST_USER_CHECK(major >= 1 && major <= 3, spec_, ": .npy format version ", major, " is not read (1 to 3 are)");
    const int64_t len = major == 1 ? (pre[8] | pre[9] << 8)
                                   : (int64_t{pre[8]} | int64_t{pre[9]} << 8 | int64_t{pre[10]} << 16 | int64_t{pre[11]} << 24);
    const int64_t prefix = major == 1 ? 10 : 12;
    std::string header(static_cast<size_t>(len), '\0');
    ST_USER_CHECK(::pread(fd_, header.data(), header.size(), prefix) == static_cast<ssize_t>(len), spec_,
                  ": the .npy header is cut short");
    type_ = parse_descr(header, spec_);
    ST_USER_CHECK(after_key(header, "'fortran_order':", spec_).rfind("False", 0) == 0, spec_,
                  " stores its array in Fortran order: save it with np.save(path, np.ascontiguousarray(a))");
    shape_ = parse_shape(header, spec_);
    ST_USER_CHECK(!shape_.empty(), spec_, " holds a single value, not an array of rows");
    data_offset_ = prefix + len;
    row_bytes_ = row_values() * type_.bytes;
    struct stat st {};
    ST_USER_CHECK(::fstat(fd_, &st) == 0, spec_, ": ", std::strerror(errno));
    const int64_t need = data_offset_ + rows() * row_bytes_;
    ST_USER_CHECK(st.st_size >= need, spec_, " is truncated: its header promises ", rows(), " rows (", need,
                  " bytes) but the file has ", static_cast<int64_t>(st.st_size), " bytes");
  }

  template <class Out>
  void read(int64_t start, int64_t count, Out* out) const {
    ST_CHECK(start >= 0 && start + count <= rows(), spec_, ": rows [", start, ", ", start + count, ") of ", rows());
    raw_.resize(static_cast<size_t>(count * row_bytes_));
    size_t done = 0;
    while (done < raw_.size()) {
      const ssize_t n = ::pread(fd_, raw_.data() + done, raw_.size() - done,
                                static_cast<off_t>(data_offset_ + start * row_bytes_ + static_cast<int64_t>(done)));
      ST_USER_CHECK(n > 0, spec_, ": reading rows ", start, " to ", start + count, ": ",
                    n == 0 ? "unexpected end of file" : std::strerror(errno));
      done += static_cast<size_t>(n);
    }
    const int64_t values = count * row_values();
    for (int64_t i = 0; i < values; ++i) out[i] = widen<Out>(raw_.data(), i, type_);
  }

  int fd_ = -1;
  int64_t data_offset_ = 0, row_bytes_ = 0;
  mutable std::vector<uint8_t> raw_;
};

}  // namespace

std::unique_ptr<ArraySource> open_npy_array(const std::string& path) { return std::make_unique<NpyArray>(path); }

}  // namespace scaletrain::data
