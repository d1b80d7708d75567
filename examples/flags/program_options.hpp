// ProgramOptions: how every Tessera program reads its options — Boost.Program_options on the
// command line, plus `--config FILE` (an INI file read with parse_config_file) for whatever the
// command line does not set. What it adds to Boost:
//  * config-file keys are the long option names; [section] headers and dotted prefixes only group
//    them: `layers = 6` at the top, under `[model]` or as `model.layers = 6` all set --layers;
//  * bad input names the file and line (Boost reports none): an unknown key (with the nearest
//    option name), a value of the wrong type (with what the option accepts), a key given twice, a
//    line that is not `key = value`; errors found later by the program's own checks
//    (locate_errors) get the file and line of the options they name;
//  * where each value came from (default, file and line, command line) and the effective
//    configuration as an INI text that --config reads back;
//  * no prefix guessing (`--ste` is not --steps), and a did-you-mean for a mistyped flag or key;
//  * --help, --version and --config for every program, and defaults printed as written (0.1, not
//    0.10000000000000001; value_with_default).
// Values in a file are taken as written (no quotes; '#' starts a comment); an option that takes
// several values (train_gpt's data) takes them separated by spaces.
#pragma once

#include <boost/program_options.hpp>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessera/core/number_text.hpp"

namespace tessera {

namespace po = boost::program_options;

// How a value reads in --help, in the effective configuration and in a config file: floating
// values in the shortest form that reads back as the same number ("0.1", "1e-05"), booleans as
// true/false, the rest as operator<< prints them.
template <typename T>
std::string option_value_text(const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_floating_point_v<T>) {
    return shortest_number_text(value);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return value;
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    std::string text;
    for (const std::string& v : value) text += (text.empty() ? "" : " ") + v;
    return text;
  } else {
    return std::to_string(value);
  }
}

// po::value(target) whose default is the target's current value, shown as option_value_text.
template <typename T>
po::typed_value<T>* value_with_default(T* target) {
  return po::value(target)->default_value(*target, option_value_text(*target));
}

// Where an option's final value came from.
enum class OptionOrigin { kDefault, kConfigFile, kCommandLine, kUnset };

struct OptionSetting {
  std::string name;   // long name: "layers"
  std::string value;  // as option_value_text spells it; "" when unset
  OptionOrigin origin = OptionOrigin::kUnset;
  std::string file;  // the config file that set it (kConfigFile), or whose value the command line overrode
  int line = 0;      // its line there; 0: none
};

// settings as an INI file --config reads back: "name = value  # origin" per option, unset
// options as comments, under a first comment line naming `program`.
std::string effective_config_text(const std::string& program, const std::vector<OptionSetting>& settings);

// `message` with "FILE:LINE: key = value: " in front for each option set by a config file that it
// names as --key (what the command line set, the user named already); unchanged when none.
std::string locate_config_values(const std::vector<OptionSetting>& settings, const std::string& message);

// Runs `body`; a std::invalid_argument escaping it is rethrown with locate_config_values' prefix,
// so that a value refused by the program's own checks names its file and line.
template <class Body>
decltype(auto) locate_config_errors(const std::vector<OptionSetting>& settings, Body&& body) {
  try {
    return body();
  } catch (const std::invalid_argument& e) {
    std::string located = locate_config_values(settings, e.what());
    if (located == e.what()) throw;
    throw std::invalid_argument(located);
  }
}

class ProgramOptions {
 public:
  // program: the program's name in messages; usage: what --help prints above the options.
  ProgramOptions(std::string program, std::string usage);

  // A group of options --help shows (in the order added, after the general --help and --config).
  void add(const po::options_description& group);
  // Options parsed (on the command line and in config files) but not shown: positional arguments.
  void add_hidden(const po::options_description& group);
  void set_positional(const po::positional_options_description& positional);

  // Parses argv, then the --config file for the options the command line did not set, and stores
  // the values in the bound targets. Returns false when --help or --version was asked for (printed
  // on stdout when print_help). Throws std::invalid_argument naming the option — and the file and line for
  // a config file — and what it accepts.
  bool parse(int argc, const char* const* argv, bool print_help = true);

  const po::variables_map& values() const { return values_; }
  // Set on the command line or in the config file (not a default).
  bool given(const std::string& name) const;
  // Every option's final value and its origin, in --help order (help and config left out).
  std::vector<OptionSetting> settings() const;
  std::string effective_config() const { return effective_config_text(program_, settings()); }
  std::string help() const;
  // What --version prints: version_line (core/build_info.hpp) and how the build was made.
  std::string version_text() const;
  // Runs `body`, locating its errors in the config file (locate_config_errors).
  template <class Body>
  decltype(auto) locate_errors(Body&& body) const {
    return locate_config_errors(settings(), std::forward<Body>(body));
  }

 private:
  void read_config_file(const std::string& path);

  std::string program_, usage_;
  po::options_description visible_, all_;
  po::positional_options_description positional_;
  po::variables_map values_;
  std::vector<OptionSetting> from_file_;  // what the config file set, or the command line overrode
};

}  // namespace tessera
