// EnvironmentReport: what a run ran on and was built with — versions, build options, CPU, GPUs —
// in named sections of `key: value` entries, the first thing to paste into a bug report. The
// collection is run/environment_collection.hpp (tessera_env, train_gpt --env); here is its form:
// JSON text as a checkpoint's meta.h5 stores it (config.environment) and the metrics file's
// config record carries it, and the text tessera_env and `tessera_ckpt info` print:
//   build
//     version       0.1.0
//     git revision  1a2b3c4d5e6f
//   ...                             (values two spaces after the longest key of all sections)
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tessera {

struct EnvironmentSection {
  std::string name;                                          // "build", "libraries", "CPU", ...
  std::vector<std::pair<std::string, std::string>> entries;  // key, value, in order
};

struct EnvironmentReport {
  std::vector<EnvironmentSection> sections;

  // Adds `key: value` to section `name` (made at the end when new).
  void add(const std::string& section, const std::string& key, const std::string& value);
  // The value of `key` in `section`, or "" when absent.
  std::string value(const std::string& section, const std::string& key) const;
};

// {"format": 1, "sections": [{"name": ..., "entries": [[key, value], ...]}, ...]}
std::string environment_report_json(const EnvironmentReport& report);
// Throws std::invalid_argument saying what is wrong when `json` is not such a text.
EnvironmentReport environment_report_from_json(const std::string& json);
std::string environment_report_text(const EnvironmentReport& report);
// The text of a stored report; a report that does not parse is shown as stored, with a note.
std::string environment_report_text_of_json(const std::string& json);

}  // namespace tessera
