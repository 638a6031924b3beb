// Keras padding modes ('same', 'valid') turned into explicit top/left/bottom/right padding.
#pragma once
#include <cstdint>
#include <string>

namespace scaletrain::nn {

enum class Padding { same, valid };
Padding parse_padding(const std::string& name);

struct Pad2D {
  int64_t top = 0, left = 0, bottom = 0, right = 0;
};

// TensorFlow's rule: 'same' gives ceil(in / stride) outputs with the extra padding at the end.
Pad2D compute_padding(Padding p, int64_t in_h, int64_t in_w, int64_t k_h, int64_t k_w, int64_t s_h, int64_t s_w);

}  // namespace scaletrain::nn
