// ProgramOptions: command line, then the --config file (scanned once for its line numbers, parsed
// by Boost's parse_config_file), stored option by option so that each error names its line.
#include "flags/program_options.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <typeinfo>

#include "tessera/core/build_info.hpp"
#include "tessera/core/nearest_name.hpp"
#include "tessera/core/parse_number.hpp"

namespace tessera {
namespace {

// One `key = value` line of a config file, as Boost will read it.
struct ConfigLine {
  int line = 0;
  std::string section;  // "" outside any [section]
  std::string key, value;
};

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// Reads `path` once: the `key = value` lines with their numbers and sections, and the text Boost
// parses (carriage returns dropped). Refuses a line that is neither a comment, a [section] nor
// `key = value`, as Boost would, but with its number.
// A config file is read up to this many bytes, its lines up to this many characters: /dev/zero or a
// binary file named by mistake ends in an error, not in memory running out.
constexpr std::size_t kMaxConfigBytes = 1 << 20;
constexpr std::size_t kMaxConfigLine = 4096;

// The whole file, refused when it is larger than kMaxConfigBytes.
std::string read_bounded(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("--config " + path + ": cannot open the file (missing or unreadable)");
  std::string data(kMaxConfigBytes + 1, '\0');
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  if (in.bad()) throw std::invalid_argument("--config " + path + ": read error");
  data.resize(static_cast<std::size_t>(in.gcount()));
  if (data.size() > kMaxConfigBytes) {
    throw std::invalid_argument("--config " + path + ": larger than " + std::to_string(kMaxConfigBytes >> 20) +
                                " MiB; a config file holds `key = value` lines (is it the right file?)");
  }
  return data;
}

// A value as a message shows it: as written when short and printable, else quoted and cut.
std::string shown_value(const std::string& value) {
  const bool plain = value.size() <= 40 && std::all_of(value.begin(), value.end(), [](char c) {
                       return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
                     });
  return plain ? value : quote_excerpt(value);
}

std::vector<ConfigLine> scan_config_file(const std::string& path, std::string& text) {
  std::istringstream in(read_bounded(path));
  std::vector<ConfigLine> lines;
  std::string raw, section;
  for (int number = 1; std::getline(in, raw); ++number) {
    if (raw.size() > kMaxConfigLine) {
      throw std::invalid_argument(path + ":" + std::to_string(number) + ": a line of " + std::to_string(raw.size()) +
                                  " characters (at most " + std::to_string(kMaxConfigLine) + "), starting " +
                                  quote_excerpt(raw));
    }
    if (raw.find('\0') != std::string::npos) {
      throw std::invalid_argument(path + ":" + std::to_string(number) + ": a NUL byte in " + quote_excerpt(raw) +
                                  " (a config file is text)");
    }
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    text += raw + "\n";
    std::string s = raw;
    if (const auto hash = s.find('#'); hash != std::string::npos) s.resize(hash);
    s = trim(s);
    if (s.empty()) continue;
    if (s.front() == '[' && s.back() == ']') {
      section = s.substr(1, s.size() - 2);
      continue;
    }
    const auto eq = s.find('=');
    if (eq == std::string::npos) {
      throw std::invalid_argument(path + ":" + std::to_string(number) + ": " + quote_excerpt(s) +
                                  " is not a `key = value` line (nor a [section] or a # comment)");
    }
    lines.push_back({number, section, trim(s.substr(0, eq)), trim(s.substr(eq + 1))});
  }
  return lines;
}

const std::type_info* value_type(const po::option_description& d) {
  const auto* typed = dynamic_cast<const po::typed_value_base*>(d.semantic().get());
  return typed == nullptr ? nullptr : &typed->value_type();
}

bool is_unsigned(const po::option_description& d) {
  const std::type_info* t = value_type(d);
  return t != nullptr && (*t == typeid(unsigned) || *t == typeid(unsigned long) || *t == typeid(unsigned long long));
}

// What an option accepts, for messages.
std::string accepted_values(const po::option_description& d) {
  const std::type_info* t = value_type(d);
  if (t == nullptr) return "a value";
  if (*t == typeid(bool)) return "true or false";
  if (*t == typeid(int)) return "a whole number from -2147483648 to 2147483647";
  if (*t == typeid(long) || *t == typeid(long long)) return "a whole number";
  if (is_unsigned(d)) return "a whole number >= 0";
  if (*t == typeid(double) || *t == typeid(float)) return "a number (e.g. 0.5 or 1e-3)";
  if (*t == typeid(std::vector<std::string>)) return "one or more values separated by spaces";
  return "text";
}

std::string any_text(const boost::any& v) {
  if (const auto* x = boost::any_cast<bool>(&v)) return option_value_text(*x);
  if (const auto* x = boost::any_cast<int>(&v)) return option_value_text(*x);
  if (const auto* x = boost::any_cast<long>(&v)) return option_value_text(*x);
  if (const auto* x = boost::any_cast<long long>(&v)) return option_value_text(*x);
  if (const auto* x = boost::any_cast<unsigned>(&v)) return option_value_text(*x);
  if (const auto* x = boost::any_cast<unsigned long>(&v)) return option_value_text(*x);
  if (const auto* x = boost::any_cast<unsigned long long>(&v)) return option_value_text(*x);
  if (const auto* x = boost::any_cast<double>(&v)) return option_value_text(*x);
  if (const auto* x = boost::any_cast<float>(&v)) return option_value_text(*x);
  if (const auto* x = boost::any_cast<std::string>(&v)) return *x;
  if (const auto* x = boost::any_cast<std::vector<std::string>>(&v)) return option_value_text(*x);
  return "?";
}

// "layers takes a whole number (e.g. layers = 4)": `spelled` is how the user wrote the name.
std::string takes(const po::option_description& d, const std::string& spelled, const std::string& separator) {
  std::string text = spelled + " takes " + accepted_values(d);
  boost::any default_value;
  if (d.semantic()->apply_default(default_value)) {
    text += " (default " + spelled + separator + any_text(default_value) + ")";
  }
  return text;
}

// The option nearest to a mistyped name (core/nearest_name.hpp), among the long names.
std::string nearest_option(const po::options_description& all, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& d : all.options()) names.push_back(d->long_name());
  return nearest_name(names, name);
}

// Values refused by the type: unsigned options do not take negative numbers (which Boost's
// lexical_cast would wrap around). `where` spells the value as the user wrote it; `what`, what the
// option takes.
void check_sign(const po::option_description& d, const std::vector<std::string>& tokens, const std::string& where,
                const std::string& what) {
  if (!is_unsigned(d)) return;
  for (const std::string& t : tokens) {
    if (!t.empty() && t.front() == '-') throw std::invalid_argument(where + t + ": " + what);
  }
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

bool names_flag(const std::string& message, const std::string& name) {
  const std::string flag = "--" + name;
  auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; };
  for (auto at = message.find(flag); at != std::string::npos; at = message.find(flag, at + 1)) {
    const bool starts = at == 0 || !name_char(message[at - 1]);
    const std::size_t end = at + flag.size();
    const bool ends = end == message.size() || !name_char(message[end]);
    if (starts && ends) return true;
  }
  return false;
}

}  // namespace

std::string effective_config_text(const std::string& program, const std::vector<OptionSetting>& settings) {
  std::string text = "# " + program + " effective configuration (--config reads this back)\n";
  std::size_t width = 0;
  for (const OptionSetting& s : settings) width = std::max(width, s.name.size() + 3 + s.value.size());
  for (const OptionSetting& s : settings) {
    if (s.origin == OptionOrigin::kUnset) {
      text += "# " + s.name + " (not set)\n";
      continue;
    }
    std::string line = s.name + " = " + s.value;
    line.resize(std::max(line.size(), width), ' ');
    const std::string where = s.file + ":" + std::to_string(s.line);
    switch (s.origin) {
      case OptionOrigin::kDefault: line += "  # default"; break;
      case OptionOrigin::kConfigFile: line += "  # " + where; break;
      case OptionOrigin::kCommandLine:
        line += "  # command line" + (s.file.empty() ? "" : " (over " + where + ")");
        break;
      case OptionOrigin::kUnset: break;
    }
    text += line + "\n";
  }
  return text;
}

std::string locate_config_values(const std::vector<OptionSetting>& settings, const std::string& message) {
  std::string prefix;
  for (const OptionSetting& s : settings) {
    if (s.origin != OptionOrigin::kConfigFile || !names_flag(message, s.name)) continue;
    prefix += (prefix.empty() ? "" : "; ") + s.file + ":" + std::to_string(s.line) + ": " + s.name + " = " + s.value;
  }
  return prefix.empty() ? message : prefix + ": " + message;
}

ProgramOptions::ProgramOptions(std::string program, std::string usage)
    : program_(std::move(program)), usage_(std::move(usage)), visible_("General") {
  // clang-format off
  visible_.add_options()
      ("help,h", "print this help and exit")
      ("version", "print the version and the git revision it was built from, and exit")
      ("config", po::value<std::string>()->value_name("FILE"),
       "read options from an INI file: `key = value` lines, keys are the long option names (a [section] "
       "only groups them); options on the command line win");
  // clang-format on
  all_.add(visible_);
}

void ProgramOptions::add(const po::options_description& group) {
  visible_.add(group);
  all_.add(group);
}

void ProgramOptions::add_hidden(const po::options_description& group) { all_.add(group); }

void ProgramOptions::set_positional(const po::positional_options_description& positional) { positional_ = positional; }

std::string ProgramOptions::help() const {
  std::ostringstream out;
  out << usage_ << (!usage_.empty() && usage_.back() == '\n' ? "\n" : "\n\n") << visible_ << "\n";
  return out.str();
}

std::string ProgramOptions::version_text() const {
  const BuildInfo& b = build_info();
  return version_line(program_) + "\nbuilt " + b.build_type + " with " + b.compiler + (b.cuda ? ", CUDA " + b.cuda_toolkit : ", without CUDA") +
         "\n";
}

bool ProgramOptions::given(const std::string& name) const {
  const auto it = values_.find(name);
  return it != values_.end() && !it->second.defaulted();
}

bool ProgramOptions::parse(int argc, const char* const* argv, bool print_help) {
  po::parsed_options command_line(&all_);
  try {
    // No prefix guessing: `--ste 10` is refused (with a did-you-mean), not taken as --steps.
    const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    command_line = po::command_line_parser(argc, argv).options(all_).positional(positional_).style(style).run();
    for (const po::option& o : command_line.options) {
      const std::string flag = "--" + o.string_key;
      if (const po::option_description* d = all_.find_nothrow(o.string_key, false)) {
        check_sign(*d, o.value, flag + " ", takes(*d, flag, " "));
      }
    }
    po::store(command_line, values_);
  } catch (const po::error_with_option_name& e) {
    std::string message = e.what();
    std::string name = e.get_option_name();
    name.erase(0, name.find_first_not_of('-'));
    const po::option_description* d = all_.find_nothrow(name, false);
    if (d != nullptr && dynamic_cast<const po::invalid_option_value*>(&e) != nullptr) {
      message += "; " + takes(*d, "--" + name, " ");
    }
    if (dynamic_cast<const po::unknown_option*>(&e) != nullptr) {
      if (const std::string near = nearest_option(all_, name); !near.empty()) message += "; did you mean --" + near + "?";
    }
    throw std::invalid_argument(message + " (see " + program_ + " --help)");
  } catch (const po::error& e) {
    throw std::invalid_argument(std::string(e.what()) + " (see " + program_ + " --help)");
  }
  if (values_.count("help") != 0) {
    if (print_help) std::cout << help() << std::flush;
    return false;
  }
  if (values_.count("version") != 0) {
    if (print_help) std::cout << version_text() << std::flush;
    return false;
  }
  if (values_.count("config") != 0) read_config_file(values_["config"].as<std::string>());
  try {
    po::notify(values_);
  } catch (const po::error& e) {
    throw std::invalid_argument(std::string(e.what()) + " (see " + program_ + " --help)");
  }
  return true;
}

void ProgramOptions::read_config_file(const std::string& path) {
  std::string text;
  const std::vector<ConfigLine> lines = scan_config_file(path, text);
  std::istringstream in(text);
  const po::parsed_options parsed = po::parse_config_file(in, all_, /*allow_unregistered=*/true);
  if (parsed.options.size() != lines.size()) {
    throw std::logic_error(path + ": read " + std::to_string(lines.size()) + " key = value lines but Boost parsed " +
                           std::to_string(parsed.options.size()));
  }
  std::map<std::string, int> first_line;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const ConfigLine& l = lines[i];
    const std::string where = path + ":" + std::to_string(l.line) + ": ";
    // The option is the whole key when it is one, else the part after the last dot ([model] layers
    // reads as model.layers).
    std::string name = parsed.options[i].string_key;
    const po::option_description* d = all_.find_nothrow(name, false);
    if (d == nullptr) {
      name = name.substr(name.rfind('.') + 1);
      d = all_.find_nothrow(name, false);
    }
    if (d == nullptr) {
      const std::string near = nearest_option(all_, name);
      throw std::invalid_argument(where + "unknown key " + quote_excerpt(l.key) +
                                  (l.section.empty() ? "" : " (in section [" + l.section + "])") + "; " +
                                  (near.empty() ? "" : "did you mean '" + near + "'? ") +
                                  "The keys are the long option "
                                  "names of " +
                                  program_ + " --help");
    }
    if (name == "config" || name == "help" || name == "version") {
      throw std::invalid_argument(where + name + " can only be given on the command line");
    }
    if (const auto first = first_line.find(name); first != first_line.end()) {
      throw std::invalid_argument(where + name + " is set again (first at line " + std::to_string(first->second) +
                                  "); give each key once");
    }
    first_line[name] = l.line;
    std::vector<std::string> tokens = d->semantic()->max_tokens() > 1 ? split_words(l.value) : std::vector{l.value};
    const std::string shown = l.key + " = " + shown_value(l.value);
    check_sign(*d, tokens, where + l.key + " = ", takes(*d, name, " = "));
    po::parsed_options one(&all_);
    po::option option(name, tokens);
    option.original_tokens = {l.key, l.value};
    one.options.push_back(option);
    const std::string refusal = where + shown + ": not a valid value; " + takes(*d, name, " = ");
    if (given(name)) {  // the command line wins; the file's value must still be one the option takes
      po::variables_map scratch;
      try {
        po::store(one, scratch);
      } catch (const po::error&) {
        throw std::invalid_argument(refusal);
      }
      from_file_.push_back({name, l.value, OptionOrigin::kCommandLine, path, l.line});
      continue;
    }
    try {
      po::store(one, values_);
    } catch (const po::error&) {
      throw std::invalid_argument(refusal);
    }
    from_file_.push_back({name, l.value, OptionOrigin::kConfigFile, path, l.line});
  }
}

std::vector<OptionSetting> ProgramOptions::settings() const {
  std::vector<OptionSetting> out;
  for (const auto& d : all_.options()) {
    const std::string& name = d->long_name();
    if (name == "help" || name == "config" || name == "version") continue;
    OptionSetting s;
    s.name = name;
    const auto it = values_.find(name);
    if (it != values_.end() && !it->second.empty()) {
      s.value = any_text(it->second.value());
      s.origin = it->second.defaulted() ? OptionOrigin::kDefault : OptionOrigin::kCommandLine;
    }
    for (const OptionSetting& f : from_file_) {
      if (f.name != name) continue;
      s.file = f.file;
      s.line = f.line;
      if (f.origin == OptionOrigin::kConfigFile) s.origin = OptionOrigin::kConfigFile;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tessera
