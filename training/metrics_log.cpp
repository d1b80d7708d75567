// MetricsLog: JSON lines through nlohmann-json; resume keeps the records up to the resume step.
#include "tessera/training/metrics_log.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tessera/core/warning.hpp"

namespace tessera {
namespace {

using Json = nlohmann::ordered_json;

// A float as the shortest decimal that reads back as the same float (2.3456, not
// 2.3456000328063965); non-finite values as null, which JSON has instead.
Json number(float value) {
  if (!std::isfinite(value)) return nullptr;
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  *end = '\0';
  return std::strtod(text, nullptr);
}

Json number(double value) { return std::isfinite(value) ? Json(value) : Json(nullptr); }

// "optimizer state" -> "optimizer_state".
std::string json_key(std::string name) {
  std::replace(name.begin(), name.end(), ' ', '_');
  return name;
}

double number_or_nan(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : std::numeric_limits<double>::quiet_NaN();
}

std::int64_t integer_or_zero(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

// A record's step and kind; false when the line is not a record.
bool parse_record(const std::string& line, Json& record) {
  record = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (record.is_discarded() || !record.is_object()) return false;
  const auto step = record.find("step");
  const auto kind = record.find("kind");
  return step != record.end() && step->is_number_integer() && kind != record.end() && kind->is_string();
}

}  // namespace

MetricsLog::MetricsLog(std::string path, std::optional<std::int64_t> continue_from) : path_(std::move(path)) {
  if (continue_from) {
    const KeptRecords kept = keep_until(*continue_from, /*drop_validation_at_step=*/true);
    elapsed_before_ = kept.elapsed;
    last_step_dropped_ = kept.last_train_step_dropped;
  } else {
    out_.open(path_, std::ios::trunc);
    if (!out_)
      throw std::runtime_error("cannot write the metrics file " + path_ +
                               ": check that its directory exists "
                               "and is writable");
  }
}

MetricsLog::KeptRecords MetricsLog::keep_until(std::int64_t step, bool drop_validation_at_step) {
  std::vector<std::string> kept;
  int unreadable = 0;
  double elapsed = 0.0;
  std::int64_t last_train_step_dropped = 0;
  if (std::ifstream in(path_); in) {
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      Json record;
      if (!parse_record(line, record)) {
        ++unreadable;
        continue;
      }
      const auto at = record["step"].get<std::int64_t>();
      if (at > step && record["kind"] == "train") last_train_step_dropped = std::max(last_train_step_dropped, at);
      if (at > step || (drop_validation_at_step && at == step && record["kind"] == "val")) continue;
      const double e = number_or_nan(record, "elapsed_s");
      if (std::isfinite(e)) elapsed = std::max(elapsed, e);
      kept.push_back(line);
    }
  }
  if (out_.is_open()) out_.close();
  const std::string temporary = path_ + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    for (const std::string& line : kept) out << line << '\n';
    out.flush();
    if (!out)
      throw std::runtime_error("cannot write the metrics file " + temporary +
                               ": check that its directory "
                               "exists and is writable");
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path_, ec);
  if (ec) throw std::runtime_error("cannot replace the metrics file " + path_ + ": " + ec.message());
  out_.open(path_, std::ios::app);
  if (!out_) throw std::runtime_error("cannot append to the metrics file " + path_);
  if (unreadable > 0) {
    warn(kLauncherRank,
         path_ + ": dropped " + std::to_string(unreadable) +
             " line(s) that are not metrics records (a run killed while writing one leaves half a line)");
  }
  return {elapsed, last_train_step_dropped};
}

void MetricsLog::rewind(std::int64_t step) { keep_until(step, /*drop_validation_at_step=*/false); }

void MetricsLog::write_line(const std::string& line) {
  out_ << line << '\n';
  out_.flush();
  if (!out_) throw std::runtime_error("writing the metrics file " + path_ + " failed (is the disk full?)");
}

void MetricsLog::append(const TrainRecord& r) {
  Json memory = Json::object();
  for (MemoryCategory c : kAllMemoryCategories) {
    const auto i = static_cast<std::size_t>(c);
    memory[json_key(memory_category_name(c))] = {{"current", r.memory_current[i]}, {"peak", r.memory_peak[i]}};
  }
  memory["total"] = {{"current", r.memory_current_total}, {"peak", r.memory_peak_total}};
  Json j = {{"kind", "train"},
            {"step", r.step},
            {"loss", number(r.loss)},
            {"lr", number(r.lr)},
            {"grad_norm", number(r.grad_norm)},
            {"skipped", r.skipped},
            {"tokens_per_s", number(r.tokens_per_s)},
            {"mfu", number(r.mfu)},
            {"memory", memory},
            {"skipped_steps", r.skipped_steps},
            {"elapsed_s", number(r.elapsed_s)}};
  write_line(j.dump());
}

void MetricsLog::append(const ValidationRecord& r) {
  const Json j = {
      {"kind", "val"}, {"step", r.step}, {"val_loss", number(r.val_loss)}, {"elapsed_s", number(r.elapsed_s)}};
  write_line(j.dump());
}

void MetricsLog::append(const ResumeRecord& r) {
  const Json j = {{"kind", "resume"},
                  {"step", r.step},
                  {"ranks", r.ranks},
                  {"zero_stage", r.zero_stage},
                  {"global_batch", r.global_batch},
                  {"elapsed_s", number(r.elapsed_s)},
                  {"steps_redone", r.steps_redone}};
  write_line(j.dump());
}

std::string resume_label(const ResumeRecord& r) {
  std::string label = std::to_string(r.ranks);
  label += r.ranks == 1 ? " rank, ZeRO-" : " ranks, ZeRO-";
  label += std::to_string(r.zero_stage);
  label += ", global batch ";
  label += std::to_string(r.global_batch);
  return label;
}

void MetricsLog::append_config(std::int64_t step, const std::string& effective_config,
                               const std::string& environment_json) {
  Json j = {{"kind", "config"}, {"step", step}, {"effective_config", effective_config}};
  if (!environment_json.empty()) j["environment"] = Json::parse(environment_json, nullptr, false);
  write_line(j.dump());
}

MetricsSeries read_metrics_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the metrics file " + path);
  MetricsSeries s;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    Json record;
    if (!parse_record(line, record)) {
      ++s.unreadable_lines;
      continue;
    }
    const auto step = static_cast<double>(record["step"].get<std::int64_t>());
    if (record["kind"] == "train") {
      s.train_step.push_back(step);
      s.train_loss.push_back(number_or_nan(record, "loss"));
      s.tokens_per_s.push_back(number_or_nan(record, "tokens_per_s"));
    } else if (record["kind"] == "val") {
      s.val_step.push_back(step);
      s.val_loss.push_back(number_or_nan(record, "val_loss"));
    } else if (record["kind"] == "resume") {
      ResumeRecord r;
      r.step = record["step"].get<std::int64_t>();
      r.ranks = static_cast<int>(integer_or_zero(record, "ranks"));
      r.zero_stage = static_cast<int>(integer_or_zero(record, "zero_stage"));
      r.global_batch = integer_or_zero(record, "global_batch");
      r.elapsed_s = number_or_nan(record, "elapsed_s");
      r.steps_redone = integer_or_zero(record, "steps_redone");
      s.resumes.push_back(r);
    }
  }
  return s;
}

}  // namespace tessera
