// run.cudnn_algorithms resolved for a run (train/algorithm_choice.hpp).
#include "scaletrain/train/algorithm_choice.hpp"

#include <cstdio>

#include "scaletrain/core/error.hpp"
#include "scaletrain/train/pinned_choice.hpp"
#include "scaletrain/train/rank0_choice.hpp"

namespace scaletrain::train {
namespace {

constexpr const char* kSetting = "run.cudnn_algorithms";

nlohmann::json ms_or_null(double ms) { return ms < 0 ? nlohmann::json(nullptr) : nlohmann::json(ms); }
double ms_of(const nlohmann::json& j) { return j.is_null() ? -1 : j.get<double>(); }

AlgorithmMode parse_how(const std::string& name, const std::string& where) {
  for (AlgorithmMode m : {AlgorithmMode::heuristic, AlgorithmMode::timed})
    if (algorithm_mode_name(m) == name) return m;
  ST_FAIL(where, ": an algorithm record's 'how' is '", name, "', not heuristic or timed");
}

// What pin_algorithms gets as `from`.
std::string pinned_from(const std::string& source, const std::string& from) {
  return source == "file" ? std::string(kSetting) + " = " + from : "the resumed checkpoint " + from;
}

}  // namespace

nlohmann::json algorithm_book_json(const AlgorithmBook& book) {
  nlohmann::json records = nlohmann::json::array();
  for (const AlgorithmRecord& r : book.records)
    records.push_back({{"key", r.key},
                       {"op", r.op},
                       {"shape", r.shape},
                       {"algo", r.algo},
                       {"name", r.name},
                       {"math", r.math},
                       {"config", r.config},
                       {"workspace_bytes", r.workspace_bytes},
                       {"deterministic", r.deterministic},
                       {"how", algorithm_mode_name(r.how)},
                       {"time_ms", ms_or_null(r.time_ms)},
                       {"heuristic_name", r.heuristic_name},
                       {"heuristic_time_ms", ms_or_null(r.heuristic_time_ms)}});
  return {{"library", book.library}, {"device", book.device}, {"records", records}};
}

AlgorithmBook algorithm_book_of_json(const nlohmann::json& j, const std::string& where) {
  AlgorithmBook book;
  try {
    book.library = j.at("library").get<std::string>();
    book.device = j.at("device").get<std::string>();
    for (const nlohmann::json& e : j.at("records")) {
      AlgorithmRecord r;
      r.key = e.at("key").get<std::string>();
      r.op = e.at("op").get<std::string>();
      r.shape = e.at("shape").get<std::string>();
      r.algo = e.at("algo").get<int>();
      r.name = e.at("name").get<std::string>();
      r.math = e.at("math").get<std::string>();
      r.config = e.at("config").get<std::string>();
      r.workspace_bytes = e.at("workspace_bytes").get<int64_t>();
      r.deterministic = e.at("deterministic").get<bool>();
      r.how = parse_how(e.at("how").get<std::string>(), where);
      r.time_ms = ms_of(e.at("time_ms"));
      r.heuristic_name = e.at("heuristic_name").get<std::string>();
      r.heuristic_time_ms = ms_of(e.at("heuristic_time_ms"));
      book.put(std::move(r));
    }
  } catch (const nlohmann::json::exception& e) {
    ST_FAIL(where, ": not an algorithm book (", e.what(), ")");
  }
  return book;
}

nlohmann::json algorithm_choice_json(const AlgorithmChoice& c) {
  return {{"setting", c.setting},
          {"source", c.source},
          {"from", c.from},
          {"probe_ms", c.source == "timed" ? nlohmann::json(c.probe_s * 1e3) : nlohmann::json(nullptr)},
          {"problems", c.book.records.size()},
          {"timed_ms", ms_or_null(c.book.timed_ms())},
          {"heuristic_ms", ms_or_null(c.book.heuristic_ms())},
          {"differ", c.book.differ_from_heuristic()},
          {"book", algorithm_book_json(c.book)}};
}

std::string algorithm_choice_line(const AlgorithmChoice& c) {
  const std::string head = "algorithms: " + std::string(kSetting) + " = " + c.setting + " -> ";
  const std::string problems = std::to_string(c.book.records.size()) + " problems";
  if (c.source == "heuristic") return head + "the libraries' heuristic, untimed (" + problems + ")";
  if (c.source == "checkpoint")
    return head + "as the resumed checkpoint " + c.from + " ran (" + problems + "), so that it continues bit for bit";
  if (c.source == "file") return head + "pinned to " + c.from + "'s choices (" + problems + ")";
  char buf[200];
  const double timed = c.book.timed_ms(), heuristic = c.book.heuristic_ms();
  if (timed >= 0 && heuristic >= 0)
    std::snprintf(buf, sizeof buf, "; %.3f ms against the heuristic's %.3f ms, once per problem", timed, heuristic);
  else
    buf[0] = '\0';
  char probe[48];
  std::snprintf(probe, sizeof probe, "; %.1f s", c.probe_s);
  return head + "timed on rank 0 (" + problems + ", " + std::to_string(c.book.differ_from_heuristic()) +
         " not the heuristic's first" + buf + probe + ")";
}

bool pin_algorithms_before_build(comm::Communicator& comm, AlgorithmTuning& tuning, const std::string& setting,
                                 const std::function<std::pair<std::string, std::string>()>& checkpoint_book,
                                 AlgorithmChoice& choice) {
  choice = {};
  choice.setting = setting;
  const bool file = setting != "auto" && setting != "heuristic";
  // Each source gives {"from", "book"} as text, its book checked on rank 0.
  const auto pinned = [](const std::string& from, const nlohmann::json& book, const std::string& where) {
    (void)algorithm_book_of_json(book, where);
    return nlohmann::json{{"from", from}, {"book", book}}.dump();
  };
  std::vector<ChoiceSource> sources;
  if (file)
    sources.push_back({"file", [&] {
                         const nlohmann::json j = read_pinned_choice(setting, kSetting, "algorithms");
                         return pinned(setting, j.at("book"), std::string(kSetting) + " = " + setting);
                       }});
  else
    sources.push_back({"checkpoint", [&] {
                         const auto [dir, text] = checkpoint_book();
                         if (text.empty()) return std::string();
                         return pinned(dir, nlohmann::json::parse(text), "checkpoint " + dir);
                       }});
  const Rank0Choice r = choose_on_rank0(comm, sources);
  if (r.text.empty()) {
    tuning.choose_algorithms(AlgorithmMode::heuristic);
    choice.source = "heuristic";
    return false;
  }
  const nlohmann::json j = nlohmann::json::parse(r.text);
  choice.source = r.source;
  choice.from = j.at("from").get<std::string>();
  tuning.pin_algorithms(algorithm_book_of_json(j.at("book"), choice.from), pinned_from(choice.source, choice.from));
  return true;
}

bool time_algorithms_after_build(comm::Communicator& comm, AlgorithmTuning& tuning, AlgorithmChoice& choice) {
  if (choice.setting != "auto" || choice.source != "heuristic") return false;
  const Rank0Choice r =
      choose_on_rank0(comm, {{"timed", [&] { return algorithm_book_json(tuning.time_algorithms()).dump(); }}});
  choice.source = "timed";
  choice.probe_s = r.seconds;
  tuning.pin_algorithms(algorithm_book_of_json(nlohmann::json::parse(r.text), "rank 0's timing"), "rank 0's timing");
  return true;
}

}  // namespace scaletrain::train
