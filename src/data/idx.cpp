// IDX reader over zlib's gzread, which reads gzip and uncompressed files alike.
#include "scaletrain/data/idx.hpp"

#include <zlib.h>

#include "scaletrain/core/error.hpp"

namespace scaletrain::data {

IdxArray read_idx(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  ST_CHECK(f != nullptr, "IDX file ", path, ": cannot be opened");
  struct Closer {
    gzFile f;
    ~Closer() { gzclose(f); }
  } closer{f};
  unsigned char magic[4];
  ST_CHECK(gzread(f, magic, 4) == 4, "IDX file ", path, ": shorter than its 4-byte header");
  ST_CHECK(magic[0] == 0 && magic[1] == 0, "IDX file ", path, ": bad magic number (not an IDX file)");
  ST_CHECK(magic[2] == 0x08, "IDX file ", path, ": element type 0x", std::hex, static_cast<int>(magic[2]),
           " is not unsigned byte (0x08)");
  const int nd = magic[3];
  ST_CHECK(nd >= 1 && nd <= 4, "IDX file ", path, ": ", nd, " dimensions (1 to 4 expected)");
  IdxArray a;
  int64_t total = 1;
  for (int i = 0; i < nd; ++i) {
    unsigned char b[4];
    ST_CHECK(gzread(f, b, 4) == 4, "IDX file ", path, ": truncated header");
    const int64_t d = (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | int64_t{b[3]};
    ST_CHECK(d > 0, "IDX file ", path, ": dimension ", i, " is zero");
    a.dims.push_back(d);
    total *= d;
  }
  a.data.resize(static_cast<size_t>(total));
  int64_t got = 0;
  while (got < total) {
    const int chunk = static_cast<int>(std::min<int64_t>(total - got, 1 << 30));
    const int n = gzread(f, a.data.data() + got, static_cast<unsigned>(chunk));
    ST_CHECK(n > 0, "IDX file ", path, ": truncated: ", got, " of ", total, " data bytes");
    got += n;
  }
  return a;
}

}  // namespace scaletrain::data
