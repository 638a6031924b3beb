// Model buffers in checkpoints: written beside the parameters under their names (f32 and i64, as a
// state_dict holds them), read back into the flat buffers' layout, and a missing one named.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>

#include "scaletrain/nn/dense.hpp"
#include "scaletrain/nn/model.hpp"
#include "scaletrain/train/checkpoint.hpp"
#include "support/tracking_layer.hpp"

using namespace scaletrain;

namespace {

std::unique_ptr<nn::Model> tracked_model() {
  auto m = std::make_unique<nn::Model>("tracked", nn::ParameterNaming::node);
  m->emplace<nn::Dense>("fc", 3);
  m->emplace<scaletrain::testing::TrackingLayer>("bn");
  m->configure({4});
  return m;
}

std::string fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("scaletrain-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

train::CheckpointState state_of(const nn::Model& m) {
  train::CheckpointState s;
  s.optimizer = "sgd";
  for (int64_t i = 0; i < m.parameter_count(); ++i) s.parameters.push_back(0.25f * static_cast<float>(i));
  s.meta.identity = {{"model.name", m.name()}};
  s.optimizer_buffer_names = {"momentum_buffer"};
  s.optimizer_buffers = {s.parameters};
  s.buffers_f32 = {1.5f, -2.0f, 3.25f};
  s.buffers_i64 = {1234567890123LL};
  return s;
}

void write_all(const std::string& dir, const nn::Model& m, const train::CheckpointState& s) {
  for (const char* f : {train::kCheckpointModelFile, train::kCheckpointOptimizerFile, train::kCheckpointTrainerFile})
    train::write_checkpoint_file(dir, f, m, s);
}

TEST(CheckpointBuffers, WrittenAndReadByName) {
  const auto m = tracked_model();
  const std::string dir = fresh_dir("buffers");
  const train::CheckpointState s = state_of(*m);
  write_all(dir, *m, s);
  const hid_t f = H5Fopen((dir + "/model.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  for (const char* name : {"fc.weight", "fc.bias", "bn.running_mean", "bn.num_batches_tracked"})
    EXPECT_GT(H5Lexists(f, name, H5P_DEFAULT), 0) << name;
  H5Fclose(f);
  const train::CheckpointState back = train::read_checkpoint(dir, *m);
  EXPECT_EQ(back.parameters, s.parameters);
  EXPECT_EQ(back.buffers_f32, s.buffers_f32);
  EXPECT_EQ(back.buffers_i64, s.buffers_i64);
  std::filesystem::remove_all(dir);
}

TEST(CheckpointBuffers, AMissingBufferIsNamed) {
  // Written by a model without the buffers, read by one with them.
  nn::Model plain("tracked", nn::ParameterNaming::node);
  plain.emplace<nn::Dense>("fc", 3);
  plain.configure({4});
  const std::string dir = fresh_dir("no-buffers");
  train::CheckpointState s = state_of(plain);
  s.buffers_f32.clear();
  s.buffers_i64.clear();
  write_all(dir, plain, s);
  try {
    train::read_checkpoint(dir, *tracked_model());
    ADD_FAILURE() << "read a checkpoint without the model's buffers";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("model.h5 has no dataset 'bn.running_mean' (model tracked)"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
