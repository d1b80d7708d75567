// EnvLookup: how Tessera reads environment variables. launch/ is the only layer that reads the
// environment, always through an EnvLookup, so tests (and embedding programs) can pass a fixed one.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

namespace tessera {

// Returns the variable's value, or nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

EnvLookup process_environment();                                       // getenv, at each lookup
EnvLookup environment_snapshot();                                      // the process environment as of now
EnvLookup fixed_environment(std::map<std::string, std::string> vars);  // exactly these variables

// Parses a variable holding an integer; nullopt when unset or empty. Throws std::invalid_argument
// naming the variable when the value is not an integer.
std::optional<int> env_int(const EnvLookup& env, const std::string& name);

// Parses an on/off switch: 1/true/yes/on or 0/false/no/off (any case); nullopt when unset or empty.
// Throws std::invalid_argument naming the variable and saying what 1 does (`meaning`) otherwise.
std::optional<bool> env_switch(const EnvLookup& env, const std::string& name, const std::string& meaning);

}  // namespace tessera
