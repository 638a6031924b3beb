// Staging figures gathered over the ranks, for people and run.json (train/staging_summary.hpp).
#include "scaletrain/train/staging_summary.hpp"

#include <algorithm>
#include <cstdio>

#include "scaletrain/data/stage_space.hpp"

namespace scaletrain::train {

namespace {
// The fixed-size part of a report, as it travels in the allgather.
struct Figures {
  double start, seconds, read_seconds, exchange_seconds;
  int64_t split_bytes, stored_bytes, read_bytes, node_read_bytes, node_bytes, exchanged_bytes, process_read_bytes;
  int32_t nodes, node_index, node_size, pad;
};
}  // namespace

double StagingSummary::seconds() const {
  double s = 0;
  for (const auto& r : ranks) s = std::max(s, r.seconds);
  return s;
}

int64_t StagingSummary::file_bytes() const {
  int64_t b = 0;
  for (const auto& r : ranks) b += r.read_bytes;
  return b;
}

int64_t StagingSummary::process_read_bytes() const {
  int64_t b = 0;
  for (const auto& r : ranks) {
    if (r.process_read_bytes < 0) return -1;
    b += r.process_read_bytes;
  }
  return b;
}

int64_t StagingSummary::exchanged_bytes_per_node() const {
  int64_t b = 0;
  for (const auto& r : ranks) b = std::max(b, r.exchanged_bytes);
  return b;
}

StagingSummary gather_staging(comm::Communicator& comm, const std::string& split, const data::StagingReport& mine) {
  const Figures f{mine.start,
                  mine.seconds,
                  mine.read_seconds,
                  mine.exchange_seconds,
                  mine.split_bytes,
                  mine.stored_bytes,
                  mine.read_bytes,
                  mine.node_read_bytes,
                  mine.node_bytes,
                  mine.exchanged_bytes,
                  mine.process_read_bytes,
                  mine.nodes,
                  mine.node_index,
                  mine.node_size,
                  0};
  std::vector<Figures> all(static_cast<size_t>(comm.size()));
  comm.allgather(&f, sizeof f, all.data());
  StagingSummary s;
  s.split = split;
  s.where = mine.where;
  for (const Figures& a : all) {
    data::StagingReport r;
    r.start = a.start;
    r.seconds = a.seconds;
    r.read_seconds = a.read_seconds;
    r.exchange_seconds = a.exchange_seconds;
    r.split_bytes = a.split_bytes;
    r.stored_bytes = a.stored_bytes;
    r.read_bytes = a.read_bytes;
    r.node_read_bytes = a.node_read_bytes;
    r.node_bytes = a.node_bytes;
    r.exchanged_bytes = a.exchanged_bytes;
    r.process_read_bytes = a.process_read_bytes;
    r.nodes = a.nodes;
    r.node_index = a.node_index;
    r.node_size = a.node_size;
    s.ranks.push_back(r);
  }
  return s;
}

std::string staging_line(const StagingSummary& s) {
  if (s.ranks.empty()) return "";
  const data::StagingReport& r0 = s.ranks.front();
  const double secs = s.seconds();
  const int ranks = static_cast<int>(s.ranks.size());
  int64_t node_read_max = 0;
  for (const auto& r : s.ranks) node_read_max = std::max(node_read_max, r.node_read_bytes);
  char buf[640];
  const int64_t rchar = s.process_read_bytes();
  std::snprintf(buf, sizeof buf,
                "staging %s: %s in %s, %d node(s) of %d rank(s): %.2f s, %.2f GB/s | read from the file %s in all "
                "(%s per rank, %s per node at most; the kernel counted %s) | exchanged %s per node",
                s.split.c_str(), data::byte_size(r0.split_bytes).c_str(), s.where.c_str(), r0.nodes, ranks, secs,
                secs > 0 ? static_cast<double>(r0.split_bytes) / secs / 1e9 : 0.0,
                data::byte_size(s.file_bytes()).c_str(), data::byte_size(s.file_bytes() / ranks).c_str(),
                data::byte_size(node_read_max).c_str(), rchar < 0 ? "n/a" : data::byte_size(rchar).c_str(),
                data::byte_size(s.exchanged_bytes_per_node()).c_str());
  return buf;
}

nlohmann::json staging_json(const StagingSummary& s) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : s.ranks)
    ranks.push_back({{"seconds", r.seconds},
                     {"read_seconds", r.read_seconds},
                     {"exchange_seconds", r.exchange_seconds},
                     {"read_bytes", r.read_bytes},
                     {"process_read_bytes", r.process_read_bytes},
                     {"node", r.node_index},
                     {"node_read_bytes", r.node_read_bytes},
                     {"node_bytes", r.node_bytes},
                     {"exchanged_bytes", r.exchanged_bytes}});
  const data::StagingReport r0 = s.ranks.empty() ? data::StagingReport{} : s.ranks.front();
  const double secs = s.seconds();
  return {{"split", s.split},
          {"where", s.where},
          {"nodes", r0.nodes},
          {"split_bytes", r0.split_bytes},
          {"stored_bytes", r0.stored_bytes},
          {"seconds", secs},
          {"gb_per_s", secs > 0 ? static_cast<double>(r0.split_bytes) / secs / 1e9 : 0.0},
          {"file_bytes", s.file_bytes()},
          {"process_read_bytes", s.process_read_bytes()},
          {"exchanged_bytes_per_node", s.exchanged_bytes_per_node()},
          {"ranks", ranks}};
}

}  // namespace scaletrain::train
