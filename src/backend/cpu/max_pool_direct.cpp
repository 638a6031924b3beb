// Max pooling on NHWC for any channel count and storage type (f32, bf16, f16): loops vectorized across
// channels, a compact argmax (the cell's index within its window, uint8 for windows up to 256 cells), and
// a backward that writes every dx cell once when windows do not overlap. f32 and bf16 run explicit
// 16-lane vector code (masked moves for channel counts that are not multiples of 16) for unpadded
// windows and for the disjoint backward; 2x2/2 windows of at most 8 channels take the backward
// window by window (two cells of a window row are one vector). The compares are whole-vector blends,
// not per-lane selects, which compilers turn into branches on the compare masks that mispredict on
// real data. Measurements against oneDNN's pooling: perf/.
#include <algorithm>
#include <cstring>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "scaletrain/backend/cpu/direct_ops.hpp"
#include "scaletrain/backend/cpu/vec16.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/half.hpp"

namespace scaletrain::cpu {
namespace {

// Bits of a zero and a copy of a value, without a float round trip (bf16/f16 copy their bits).
inline float zero_of(float) { return 0.0f; }
inline bf16 zero_of(bf16) { return bf16{}; }
inline f16 zero_of(f16) { return f16{}; }
// A copy of v or other by its bits (f16's backward; f32 and bf16 take the vector code).
inline f16 select(bool take, f16 v, f16 other) { return f16{static_cast<uint16_t>(take ? v.bits : other.bits)}; }

// 16 lanes of f32 or bf16 as floats (bf16 widened exactly by its bits), and back bit for bit; the
// first n lanes when n < 16 (the others zero, or left alone).
using Int16 = int32_t __attribute__((vector_size(kLanes * sizeof(int32_t))));
using U32x16 = uint32_t __attribute__((vector_size(kLanes * sizeof(uint32_t))));
using U16x16 = uint16_t __attribute__((vector_size(kLanes * sizeof(uint16_t))));
using U8x16 = uint8_t __attribute__((vector_size(kLanes * sizeof(uint8_t))));

// Loads and stores of n <= 16 lanes: whole vectors, else masked moves straight between memory and
// registers with AVX-512 BW (a masked copy through a vector in memory stalls store forwarding, which
// dominates at channel counts under 16), else a loop over the lanes.
#if defined(__AVX512BW__) && defined(__AVX512VL__)
inline U16x16 load_u16(const void* p, int64_t n) {
  if (n >= kLanes) return reinterpret_cast<U16x16>(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
  return reinterpret_cast<U16x16>(_mm256_maskz_loadu_epi16(first_lanes(n), p));
}
inline void store_u16(void* p, U16x16 v, int64_t n) {
  if (n >= kLanes) return _mm256_storeu_si256(static_cast<__m256i*>(p), reinterpret_cast<__m256i>(v));
  _mm256_mask_storeu_epi16(p, first_lanes(n), reinterpret_cast<__m256i>(v));
}
inline void store_u8(void* p, U8x16 v, int64_t n) {
  if (n >= kLanes) return _mm_storeu_si128(static_cast<__m128i*>(p), reinterpret_cast<__m128i>(v));
  _mm_mask_storeu_epi8(p, first_lanes(n), reinterpret_cast<__m128i>(v));
}
inline U8x16 load_u8(const void* p, int64_t n) {
  if (n >= kLanes) return reinterpret_cast<U8x16>(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  return reinterpret_cast<U8x16>(_mm_maskz_loadu_epi8(first_lanes(n), p));
}
#else
template <class V>
inline V load_small(const void* p, int64_t n) {
  V v{};
  std::memcpy(&v, p, std::min<int64_t>(n, kLanes) * sizeof(v[0]));
  return v;
}
inline U16x16 load_u16(const void* p, int64_t n) { return load_small<U16x16>(p, n); }
inline void store_u16(void* p, U16x16 v, int64_t n) { std::memcpy(p, &v, std::min<int64_t>(n, kLanes) * 2); }
inline void store_u8(void* p, U8x16 v, int64_t n) { std::memcpy(p, &v, std::min<int64_t>(n, kLanes)); }
inline U8x16 load_u8(const void* p, int64_t n) { return load_small<U8x16>(p, n); }
#endif

// Lane-wise widening and narrowing between 8-, 16- and 32-bit lanes: one AVX-512 instruction each
// (GCC lowered __builtin_convertvector from 8 bits to 32 into a scalar insert per lane). The
// all-lanes masked forms: the plain intrinsics trip GCC 12's maybe-uninitialized warning.
#ifdef __AVX512F__
inline U32x16 widen(U8x16 v) { return reinterpret_cast<U32x16>(_mm512_maskz_cvtepu8_epi32(0xffff, reinterpret_cast<__m128i>(v))); }
inline U32x16 widen(U16x16 v) { return reinterpret_cast<U32x16>(_mm512_maskz_cvtepu16_epi32(0xffff, reinterpret_cast<__m256i>(v))); }
inline U8x16 narrow_u8(U32x16 v) { return reinterpret_cast<U8x16>(_mm512_maskz_cvtepi32_epi8(0xffff, reinterpret_cast<__m512i>(v))); }
inline U16x16 narrow_u16(U32x16 v) { return reinterpret_cast<U16x16>(_mm512_maskz_cvtepi32_epi16(0xffff, reinterpret_cast<__m512i>(v))); }
#else
inline U32x16 widen(U8x16 v) { return __builtin_convertvector(v, U32x16); }
inline U32x16 widen(U16x16 v) { return __builtin_convertvector(v, U32x16); }
inline U8x16 narrow_u8(U32x16 v) { return __builtin_convertvector(v, U8x16); }
inline U16x16 narrow_u16(U32x16 v) { return __builtin_convertvector(v, U16x16); }
#endif

inline Vec16 load_lanes(const float* p, int64_t n) { return load_part(p, n); }
inline Vec16 load_lanes(const bf16* p, int64_t n) { return reinterpret_cast<Vec16>(widen(load_u16(p, n)) << 16); }
inline void store_lanes(float* p, Vec16 v, int64_t n) { store_part(p, v, n); }
inline void store_lanes(bf16* p, Vec16 v, int64_t n) { store_u16(p, narrow_u16(reinterpret_cast<U32x16>(v) >> 16), n); }
inline void store_indices(uint8_t* p, Int16 k, int64_t n) { store_u8(p, narrow_u8(reinterpret_cast<U32x16>(k)), n); }
inline void store_indices(uint16_t* p, Int16 k, int64_t n) { store_u16(p, narrow_u16(reinterpret_cast<U32x16>(k)), n); }
inline Int16 load_indices(const uint8_t* p, int64_t n) { return reinterpret_cast<Int16>(widen(load_u8(p, n))); }
inline Int16 load_indices(const uint16_t* p, int64_t n) { return reinterpret_cast<Int16>(widen(load_u16(p, n))); }

// dx = dy where the window's argmax is cell k, else zero, on n <= 16 lanes: a mask on the bits.
template <class Index>
inline void route_lanes(const float* dy, const Index* am, int32_t k, float* dx, int64_t n) {
  const Int16 keep = load_indices(am, n) == k;
  store_part(dx, reinterpret_cast<Vec16>(reinterpret_cast<Int16>(load_part(dy, n)) & keep), n);
}
template <class Index>
inline void route_lanes(const bf16* dy, const Index* am, int32_t k, bf16* dx, int64_t n) {
  const U16x16 keep = narrow_u16(reinterpret_cast<U32x16>(load_indices(am, n) == k));
  store_u16(dx, load_u16(dy, n) & keep, n);
}

// Calls f(std::integral_constant<int, kB>{}, c0) for channel blocks [c0, c0 + kB) that cover [0, C):
// blocks of 64 and 16 (whole vectors), then one block of the remaining 1-15, so each block's loops
// have a compile-time length and their running maxima stay in registers.
template <int kB = 15, class F>
inline void tail_block(int64_t rest, int64_t c0, F& f) {
  if constexpr (kB > 0) {
    if (rest == kB) return f(std::integral_constant<int, kB>{}, c0);
    tail_block<kB - 1>(rest, c0, f);
  }
}
template <class F>
inline void for_channel_blocks(int64_t C, F&& f) {
  int64_t c0 = 0;
  for (; c0 + 64 <= C; c0 += 64) f(std::integral_constant<int, 64>{}, c0);
  for (; c0 + 16 <= C; c0 += 16) f(std::integral_constant<int, 16>{}, c0);
  tail_block(C - c0, c0, f);
}

// Calls f(std::integral_constant<int, C>{}) for channel counts 1-15, so that a whole loop over pixels
// is compiled for that count, else f(std::integral_constant<int, 0>{}) (blocks chosen per pixel).
template <class F>
inline void with_channel_count(int64_t C, F&& f) {
  if (C >= 16) return f(std::integral_constant<int, 0>{});
  auto call = [&](auto kC, int64_t) { f(kC); };
  tail_block(C, 0, call);
}

// Calls f(c) for lanes c in [0, kB): as an omp simd loop for whole vectors, fully unrolled under 16
// lanes (omp simd's masked loops are slower than plain unrolled code at channel counts under 16).
template <int kB, class F>
inline void for_lanes(F&& f) {
  if constexpr (kB >= 16) {
#pragma omp simd
    for (int c = 0; c < kB; ++c) f(c);
  } else {
#pragma GCC unroll 16
    for (int c = 0; c < kB; ++c) f(c);
  }
}

// The in-bounds part of one output pixel's window: rows [h0, h1), columns [w0, w1); (kh0, kw0) is the
// position of (h0, w0) inside the unclipped window, so padding cells are never visited.
struct Window {
  int64_t h0, h1, w0, w1, kh0, kw0;
};

// T: the storage type; comparisons in float, outputs copied bit for bit from the input.
// Index: the argmax type, the winning cell's kh * kernel_w + kw (uint8_t or uint16_t).
template <class T, class Index>
class DirectMaxPool final : public PoolOp {
 public:
  explicit DirectMaxPool(const PoolShape& s) : s_(s) {
    s.validate();
    ST_CHECK(s.kind == PoolKind::max, "DirectMaxPool: ", s.to_string(), " is not a max pooling");
    ST_CHECK(s.kernel_h * s.kernel_w - 1 <= std::numeric_limits<Index>::max(), "max pooling ", s.to_string(),
             ": a window has more cells than its argmax type can index");
    argmax_.resize(static_cast<size_t>(s.batch * s.out_h() * s.out_w() * s.channels));
    for (int64_t kh = 0; kh < s.kernel_h; ++kh)
      for (int64_t kw = 0; kw < s.kernel_w; ++kw) cell_offset_.push_back((kh * s.in_w + kw) * s.channels);
  }

  void forward(const void* x, void* y, bool training) override {
    // Inference leaves the argmax of the last training forward in place, as oneDNN's workspace.
    if (training)
      run_forward<true>(static_cast<const T*>(x), static_cast<T*>(y));
    else
      run_forward<false>(static_cast<const T*>(x), static_cast<T*>(y));
    have_argmax_ = have_argmax_ || training;
  }

  void backward(const void* dy, void* dx) override {
    ST_CHECK(have_argmax_, "max pooling ", s_.to_string(), ": backward called before a forward with training = true");
    if (s_.stride_h >= s_.kernel_h && s_.stride_w >= s_.kernel_w)
      backward_disjoint(static_cast<const T*>(dy), static_cast<T*>(dx));
    else
      backward_scatter(static_cast<const T*>(dy), static_cast<T*>(dx));
  }

 private:
  Window window(int64_t oh, int64_t ow) const {
    const int64_t hs = oh * s_.stride_h - s_.pad_top, ws = ow * s_.stride_w - s_.pad_left;
    const int64_t h0 = std::max<int64_t>(hs, 0), w0 = std::max<int64_t>(ws, 0);
    return {h0, std::min(hs + s_.kernel_h, s_.in_h), w0, std::min(ws + s_.kernel_w, s_.in_w), h0 - hs, w0 - ws};
  }

  // Max over the window's in-bounds cells of channels [c0, c0 + kB); the first strictly greater value
  // wins (ties and NaN keep the earlier cell in row-major window order, as the tests' reference).
  template <int kB, bool kTrain>
  void forward_block(const T* xn, const Window& win, int64_t c0, T* y, Index* argmax) const {
    const int64_t W = s_.in_w, C = s_.channels, KW = s_.kernel_w;
    const T* first = xn + (win.h0 * W + win.w0) * C + c0;
    float best[kB];
    int32_t best_k[kB];
    for_lanes<kB>([&](int c) {
      best[c] = to_float(first[c]);
      best_k[c] = static_cast<int32_t>(win.kh0 * KW + win.kw0);
    });
    for (int64_t h = win.h0; h < win.h1; ++h)
      for (int64_t w = win.w0; w < win.w1; ++w) {
        const T* cell = xn + (h * W + w) * C + c0;
        const int32_t k = static_cast<int32_t>((win.kh0 + h - win.h0) * KW + win.kw0 + w - win.w0);
        for_lanes<kB>([&](int c) {  // selects, not branches: random data mispredicts
          const float v = to_float(cell[c]);
          const bool greater = v > best[c];
          best[c] = greater ? v : best[c];
          if constexpr (kTrain) best_k[c] = greater ? k : best_k[c];
        });
      }
    for_lanes<kB>([&](int c) {
      if constexpr (std::is_same_v<T, float>)
        y[c0 + c] = best[c];
      else
        y[c0 + c] = from_float<T>(best[c]);  // exact: best holds a value of T
      if constexpr (kTrain) argmax[c0 + c] = static_cast<Index>(best_k[c]);
    });
  }

  template <bool kTrain>
  void run_forward(const T* x, T* y) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bf16>) {
      if (s_.pad_top == 0 && s_.pad_left == 0 && s_.pad_bottom == 0 && s_.pad_right == 0)
        return with_channel_count(s_.channels, [&](auto kC) { forward_vec<kTrain, decltype(kC)::value>(x, y); });
    }
    with_channel_count(s_.channels, [&](auto kC) { run_forward_for<kTrain, decltype(kC)::value>(x, y); });
  }

  // kC: the channel count when it is 1-15 (one block per pixel), 0 for any other.
  template <bool kTrain, int kC>
  void run_forward_for(const T* x, T* y) {
    const int64_t H = s_.in_h, W = s_.in_w, C = s_.channels, OH = s_.out_h(), OW = s_.out_w();
    Index* argmax = argmax_.data();
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < s_.batch; ++n)
      for (int64_t oh = 0; oh < OH; ++oh) {
        const T* xn = x + n * H * W * C;
        for (int64_t ow = 0; ow < OW; ++ow) {
          const Window win = window(oh, ow);
          const int64_t o = ((n * OH + oh) * OW + ow) * C;
          if constexpr (kC > 0) {
            forward_block<kC, kTrain>(xn, win, 0, y + o, argmax + o);
          } else {
            for_channel_blocks(C, [&](auto kB, int64_t c0) {
              forward_block<decltype(kB)::value, kTrain>(xn, win, c0, y + o, argmax + o);
            });
          }
        }
      }
  }

  // Unpadded windows (every cell in bounds), f32 and bf16: 16 channels at a time in vector registers,
  // compares and blends on whole vectors, the cells in the same row-major order as forward_block (the
  // compiler turns forward_block's per-lane selects into branches on the compare masks, which
  // mispredict on real data). kC: the channel count when it is 1-15, 0 for blocks of 16 and a tail.
  template <bool kTrain, int kC>
  void forward_vec(const T* x, T* y) {
    if (s_.kernel_h == 2 && s_.kernel_w == 2) return forward_vec_for<kTrain, kC, 2>(x, y);
    forward_vec_for<kTrain, kC, 0>(x, y);
  }

  // kK: 2 for 2x2 windows (the cells unrolled), 0 for any size.
  template <bool kTrain, int kC, int kK>
  void forward_vec_for(const T* x, T* y) {
    const int64_t H = s_.in_h, W = s_.in_w, C = s_.channels, OH = s_.out_h(), OW = s_.out_w();
    const int64_t KH = kK > 0 ? kK : s_.kernel_h, KW = kK > 0 ? kK : s_.kernel_w;
    Index* argmax = argmax_.data();
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < s_.batch; ++n)
      for (int64_t oh = 0; oh < OH; ++oh) {
        const T* row = x + (n * H + oh * s_.stride_h) * W * C;
        for (int64_t ow = 0; ow < OW; ++ow) {
          const T* corner = row + ow * s_.stride_w * C;
          const int64_t o = ((n * OH + oh) * OW + ow) * C;
          prefetch_window(corner + kPrefetchWindows * s_.stride_w * C);
          for (int64_t c0 = 0; c0 < C; c0 += kLanes) {
            const int64_t lanes = kC > 0 ? kC : C - c0;
            Vec16 best = load_lanes(corner + c0, lanes);
            Int16 best_k{};
#pragma GCC unroll 4
            for (int64_t kh = 0; kh < KH; ++kh)
#pragma GCC unroll 4
              for (int64_t kw = kh == 0 ? 1 : 0; kw < KW; ++kw) {
                const Vec16 v = load_lanes(corner + (kh * W + kw) * C + c0, lanes);
                const Int16 greater = v > best;
                best = greater ? v : best;
                if constexpr (kTrain) best_k = greater ? Int16{} + static_cast<int32_t>(kh * KW + kw) : best_k;
              }
            store_lanes(y + o + c0, best, lanes);
            if constexpr (kTrain) store_indices(argmax + o + c0, best_k, lanes);
          }
        }
      }
  }

  // The cache lines of the window at `corner`, requested ahead: without it the loads of a forward
  // wait on memory one cache line at a time.
  static constexpr int64_t kPrefetchWindows = 4;
  void prefetch_window(const T* corner) const {
    const int64_t bytes = s_.kernel_w * s_.channels * static_cast<int64_t>(sizeof(T));
    for (int64_t kh = 0; kh < s_.kernel_h; ++kh) {
      const char* r = reinterpret_cast<const char*>(corner + kh * s_.in_w * s_.channels);
      for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(r + b);
    }
  }

  // Windows that do not overlap (stride >= kernel): each input cell belongs to at most one window,
  // so dx is written once, row by row: dy where the cell was its window's argmax, else zero (cells of
  // no window, like the last row of an odd input under 2x2/2, too). No separate zero fill.
  void backward_disjoint(const T* dy, T* dx) const {
#ifdef __AVX512F__
    if constexpr (!std::is_same_v<T, f16> && std::is_same_v<Index, uint8_t>)
      if (runs_window_pairs()) return backward_window_pairs(dy, dx);
#endif
    with_channel_count(s_.channels, [&](auto kC) { backward_disjoint_for<decltype(kC)::value>(dy, dx); });
  }

#ifdef __AVX512F__
  // f32 and bf16 2x2/2 windows without padding, of at most 8 channels, so that a window row's two
  // cells are one vector of 2C lanes.
  bool runs_window_pairs() const {
    return s_.kernel_h == 2 && s_.kernel_w == 2 && s_.stride_h == 2 && s_.stride_w == 2 && s_.pad_top == 0 &&
           s_.pad_left == 0 && s_.pad_bottom == 0 && s_.pad_right == 0 && 2 * s_.channels <= kLanes;
  }

  // Window by window: its C dy values and argmax codes are loaded once and duplicated into 2C lanes,
  // and each of the window's two rows of dx is written by one masked store of 2C lanes (dy where the
  // cell was the argmax, else zero), in place of a load, compare and store per cell. Rows and columns
  // of no window (odd H, W) are zero.
  void backward_window_pairs(const T* dy, T* dx) const {
    const int64_t H = s_.in_h, W = s_.in_w, C = s_.channels, OH = s_.out_h(), OW = s_.out_w();
    const __mmask16 window_row = first_lanes(2 * C), channels = first_lanes(C);  // lanes of a row, of a cell
    alignas(64) int32_t dup[kLanes], top_cell[kLanes], bottom_cell[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      dup[l] = static_cast<int32_t>(l % C);           // lane l of a window row: channel l % C ...
      top_cell[l] = static_cast<int32_t>(l / C % 2);  // ... of its cell kw = l / C (kh * 2 + kw)
      bottom_cell[l] = 2 + top_cell[l];
    }
    const __m512i dup_index = _mm512_load_si512(dup), top_cells = _mm512_load_si512(top_cell),
                  bottom_cells = _mm512_load_si512(bottom_cell);
    const uint8_t* argmax = argmax_.data();
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < s_.batch; ++n)
      for (int64_t oh = 0; oh < (H + 1) / 2; ++oh) {
        T* top = dx + ((n * H + 2 * oh) * W) * C;
        T* bottom = top + W * C;
        const bool whole = oh < OH, two_rows = 2 * oh + 1 < H;
        for (int64_t ow = 0; whole && ow < OW; ++ow) {
          const int64_t o = ((n * OH + oh) * OW + ow) * C;
          const __m512i d = _mm512_maskz_permutexvar_epi32(window_row, dup_index, load_bits(dy + o, C));
          const __m512i codes = _mm512_maskz_cvtepu8_epi32(0xffff, _mm_maskz_loadu_epi8(channels, argmax + o));
          const __m512i a = _mm512_maskz_permutexvar_epi32(window_row, dup_index, codes);
          store_bits(top + 2 * ow * C, 2 * C, _mm512_maskz_mov_epi32(_mm512_cmpeq_epi32_mask(a, top_cells), d));
          store_bits(bottom + 2 * ow * C, 2 * C, _mm512_maskz_mov_epi32(_mm512_cmpeq_epi32_mask(a, bottom_cells), d));
        }
        const int64_t zero_from = whole ? 2 * OW * C : 0;
        std::fill(top + zero_from, top + W * C, zero_of(T{}));
        if (two_rows) std::fill(bottom + zero_from, bottom + W * C, zero_of(T{}));
      }
  }
  // The bits of the first n lanes, one per 32-bit lane (bf16 zero-extended; the others zero), and back.
  static __m512i load_bits(const float* p, int64_t n) { return _mm512_maskz_loadu_epi32(first_lanes(n), p); }
  static __m512i load_bits(const bf16* p, int64_t n) {
    return _mm512_maskz_cvtepu16_epi32(0xffff, reinterpret_cast<__m256i>(load_u16(p, n)));
  }
  static void store_bits(float* p, int64_t n, __m512i v) { _mm512_mask_storeu_epi32(p, first_lanes(n), v); }
  static void store_bits(bf16* p, int64_t n, __m512i v) {
    store_u16(p, reinterpret_cast<U16x16>(_mm512_maskz_cvtepi32_epi16(0xffff, v)), n);
  }
#endif

  // dx of channels [c0, c0 + kB) of one cell: dy where am == k, else zero (f16; f32 and bf16 take
  // route_lanes).
  template <int kB>
  static void route_block(const T* dy, const Index* am, int32_t k, int64_t c0, T* dx) {
    for_lanes<kB>([&](int c) { dx[c0 + c] = select(am[c0 + c] == k, dy[c0 + c], zero_of(T{})); });
  }

  template <int kC>
  void backward_disjoint_for(const T* dy, T* dx) const {
    const int64_t H = s_.in_h, W = s_.in_w, C = s_.channels, OH = s_.out_h(), OW = s_.out_w();
    const Index* argmax = argmax_.data();
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < s_.batch; ++n)
      for (int64_t h = 0; h < H; ++h) {
        T* dx_row = dx + ((n * H + h) * W) * C;
        const int64_t oh = (h + s_.pad_top) / s_.stride_h, kh = h + s_.pad_top - oh * s_.stride_h;
        if (oh >= OH || kh >= s_.kernel_h) {
          std::fill(dx_row, dx_row + W * C, zero_of(T{}));
          continue;
        }
        // (ow, kw): the window column of w and its column within it, stepped without a division per
        // cell (at few channels a division per cell is a large share of the backward)
        int64_t ow = s_.pad_left / s_.stride_w, kw = s_.pad_left - ow * s_.stride_w;
        for (int64_t w = 0; w < W; ++w, kw + 1 == s_.stride_w ? (kw = 0, ++ow) : ++kw) {
          T* dxc = dx_row + w * C;
          if (ow >= OW || kw >= s_.kernel_w) {
            std::fill(dxc, dxc + C, zero_of(T{}));
            continue;
          }
          const int32_t k = static_cast<int32_t>(kh * s_.kernel_w + kw);
          const int64_t o = ((n * OH + oh) * OW + ow) * C;
          const T* dyc = dy + o;
          const Index* am = argmax + o;
          if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bf16>) {
            for (int64_t c0 = 0; c0 < C; c0 += kLanes)
              route_lanes(dyc + c0, am + c0, k, dxc + c0, kC > 0 ? kC : C - c0);
          } else if constexpr (kC > 0)
            route_block<kC>(dyc, am, k, 0, dxc);
          else
            for_channel_blocks(C, [&](auto kB, int64_t c0) { route_block<decltype(kB)::value>(dyc, am, k, c0, dxc); });
        }
      }
  }

  // Overlapping windows: zero each sample's dx, then add dy at its argmax (one sample per thread, so
  // the additions of overlapping windows never race).
  void backward_scatter(const T* dy, T* dx) const {
    const int64_t H = s_.in_h, W = s_.in_w, C = s_.channels, OH = s_.out_h(), OW = s_.out_w();
    const Index* argmax = argmax_.data();
    const int64_t* cell_offset = cell_offset_.data();
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < s_.batch; ++n) {
      T* dxn = dx + n * H * W * C;
      std::fill(dxn, dxn + H * W * C, zero_of(T{}));
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          // the unclipped window's first cell; argmax only names in-bounds cells
          const int64_t corner = ((oh * s_.stride_h - s_.pad_top) * W + ow * s_.stride_w - s_.pad_left) * C;
          const int64_t o = ((n * OH + oh) * OW + ow) * C;
          for (int64_t c = 0; c < C; ++c) {
            T& d = dxn[corner + cell_offset[argmax[o + c]] + c];
            d = from_float<T>(to_float(d) + to_float(dy[o + c]));
          }
        }
    }
  }

  PoolShape s_;
  std::vector<Index> argmax_;         // per output element: the winning cell's kh * kernel_w + kw
  std::vector<int64_t> cell_offset_;  // per window cell kh * kernel_w + kw: its offset from the window's corner
  bool have_argmax_ = false;
};

template <class T>
std::unique_ptr<PoolOp> make_for_type(const PoolShape& s) {
  if (s.kernel_h * s.kernel_w <= 256) return std::make_unique<DirectMaxPool<T, uint8_t>>(s);
  return std::make_unique<DirectMaxPool<T, uint16_t>>(s);
}

}  // namespace

std::unique_ptr<PoolOp> make_direct_max_pool(const PoolShape& s) {
  switch (s.dtype) {
    case DType::f32: return make_for_type<float>(s);
    case DType::bf16: return make_for_type<bf16>(s);
    case DType::f16: return make_for_type<f16>(s);
    default: break;
  }
  ST_FAIL("max pooling ", s.to_string(), ": no direct kernel for ", dtype_name(s.dtype));
}

}  // namespace scaletrain::cpu
