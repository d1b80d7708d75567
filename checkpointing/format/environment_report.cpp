// EnvironmentReport: JSON (nlohmann) and text forms.
#include "tessera/checkpointing/format/environment_report.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace tessera {

void EnvironmentReport::add(const std::string& section, const std::string& key, const std::string& value) {
  auto it = std::find_if(sections.begin(), sections.end(), [&](const EnvironmentSection& s) { return s.name == section; });
  if (it == sections.end()) it = sections.insert(sections.end(), EnvironmentSection{section, {}});
  it->entries.emplace_back(key, value);
}

std::string EnvironmentReport::value(const std::string& section, const std::string& key) const {
  for (const EnvironmentSection& s : sections) {
    if (s.name != section) continue;
    for (const auto& [k, v] : s.entries) {
      if (k == key) return v;
    }
  }
  return "";
}

std::string environment_report_json(const EnvironmentReport& report) {
  nlohmann::json sections = nlohmann::json::array();
  for (const EnvironmentSection& s : report.sections) {
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& [key, value] : s.entries) entries.push_back({key, value});
    sections.push_back({{"name", s.name}, {"entries", entries}});
  }
  return nlohmann::json{{"format", 1}, {"sections", sections}}.dump();
}

EnvironmentReport environment_report_from_json(const std::string& json) {
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw std::invalid_argument("the environment report is not a JSON object");
  const auto sections = j.find("sections");
  if (sections == j.end() || !sections->is_array()) {
    throw std::invalid_argument("the environment report has no \"sections\" array");
  }
  EnvironmentReport report;
  for (const nlohmann::json& s : *sections) {
    if (!s.is_object() || !s.contains("name") || !s["name"].is_string() || !s.contains("entries") ||
        !s["entries"].is_array()) {
      throw std::invalid_argument("an environment report section is not {\"name\": ..., \"entries\": [...]}");
    }
    EnvironmentSection section{s["name"].get<std::string>(), {}};
    for (const nlohmann::json& e : s["entries"]) {
      if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_string()) {
        throw std::invalid_argument("an entry of environment report section " + section.name +
                                    " is not [key, value]");
      }
      section.entries.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
    }
    report.sections.push_back(std::move(section));
  }
  return report;
}

std::string environment_report_text(const EnvironmentReport& report) {
  std::size_t width = 0;
  for (const EnvironmentSection& s : report.sections) {
    for (const auto& entry : s.entries) width = std::max(width, entry.first.size());
  }
  std::string text;
  for (const EnvironmentSection& s : report.sections) {
    text += s.name + "\n";
    for (const auto& [key, value] : s.entries) {
      std::string line = "  " + key;
      line.resize(width + 4, ' ');
      text += line + value + "\n";
    }
  }
  return text;
}

std::string environment_report_text_of_json(const std::string& json) {
  try {
    return environment_report_text(environment_report_from_json(json));
  } catch (const std::invalid_argument& e) {
    return std::string("(as stored: ") + e.what() + ")\n" + json + "\n";
  }
}

}  // namespace tessera
