// Multi-head self-attention's own kernels (the products are the backend's MatmulOp): the softmax of
// the attention scores per row in f32 on the per-row reductions (kernels/reduction.hpp) and its
// gradient, and the copies between token order [batch, tokens, parts, heads, dim] (a projection's
// output, parts = 3 for q, k, v) and head order [parts, batch, heads, tokens, dim], where every
// (sample, head) pair is one contiguous matrix, so that each product is one strided-batched call.
// T is the storage type (float, bf16, f16); the arithmetic is f32.
#pragma once
#include <cmath>
#include <cstdint>

#include "scaletrain/core/half.hpp"
#include "scaletrain/core/macros.hpp"
#include "scaletrain/kernels/reduction.hpp"

namespace scaletrain::kernels {

// p = softmax(s) over each row of `cols` scores.
template <class T>
struct SoftmaxRowsForward {
  const T* s;
  T* p;
  int64_t cols;
  template <class Row>
  SCALETRAIN_HOST_DEVICE void operator()(const Row& row) const {
    const T* sr = s + row.r * cols;
    T* pr = p + row.r * cols;
    const float m = row.max_arg(cols, [&](int64_t k) { return to_float(sr[k]); }).value;
    const float sum = row.sum(cols, [&](int64_t k) { return expf(to_float(sr[k]) - m); });
    const float inv = 1.0f / sum;
    row.for_each(cols, [&](int64_t k) { pr[k] = from_float<T>(expf(to_float(sr[k]) - m) * inv); });
  }
};

// ds = p * (dp - sum(p * dp)) per row: the gradient of the scores from that of the probabilities.
template <class T>
struct SoftmaxRowsBackward {
  const T* p;
  const T* dp;
  T* ds;
  int64_t cols;
  template <class Row>
  SCALETRAIN_HOST_DEVICE void operator()(const Row& row) const {
    const T* pr = p + row.r * cols;
    const T* gr = dp + row.r * cols;
    T* dr = ds + row.r * cols;
    const float dot = row.sum(cols, [&](int64_t k) { return to_float(pr[k]) * to_float(gr[k]); });
    row.for_each(cols, [&](int64_t k) { dr[k] = from_float<T>(to_float(pr[k]) * (to_float(gr[k]) - dot)); });
  }
};

// The two orders' sizes and the index of one element in each.
struct HeadLayout {
  int64_t batch, tokens, parts, heads, dim;
  SCALETRAIN_HOST_DEVICE int64_t elements() const { return batch * tokens * parts * heads * dim; }
  // Head order index i = (((p * B + b) * H + h) * T + t) * D + d -> token order (((b * T + t) * P + p) * H + h) * D + d.
  SCALETRAIN_HOST_DEVICE int64_t token_index_of_head_index(int64_t i) const {
    const int64_t d = i % dim;
    int64_t r = i / dim;
    const int64_t t = r % tokens;
    r /= tokens;
    const int64_t h = r % heads;
    r /= heads;
    const int64_t b = r % batch;
    const int64_t p = r / batch;
    return (((b * tokens + t) * parts + p) * heads + h) * dim + d;
  }
  SCALETRAIN_HOST_DEVICE int64_t head_index_of_token_index(int64_t i) const {
    const int64_t d = i % dim;
    int64_t r = i / dim;
    const int64_t h = r % heads;
    r /= heads;
    const int64_t p = r % parts;
    r /= parts;
    const int64_t t = r % tokens;
    const int64_t b = r / tokens;
    return (((p * batch + b) * heads + h) * tokens + t) * dim + d;
  }
};

// i over head-order elements: heads[i] = the token-order element.
template <class T>
struct TokensToHeads {
  const T* tokens;
  T* heads;
  HeadLayout layout;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { heads[i] = tokens[layout.token_index_of_head_index(i)]; }
};

// i over token-order elements: tokens[i] = the head-order element.
template <class T>
struct HeadsToTokens {
  const T* heads;
  T* tokens;
  HeadLayout layout;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { tokens[i] = heads[layout.head_index_of_token_index(i)]; }
};

}  // namespace scaletrain::kernels
