// A Python virtual environment for the tests that check Tessera against a Python library
// (TensorBoard, tokenizers, transformers): made on first use under the path in an environment
// variable ctest sets, with the packages pip installs, and kept for later runs. A partial venv
// never takes the cached name, so an interrupted install is redone.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/support/train_gpt_process.hpp"

namespace tessera::testing {

struct VenvRequest {
  const char* env_var;       // names the venv's directory, e.g. "TESSERA_TENSORBOARD_VENV"
  std::string import_check;  // the Python import that proves it complete, e.g. "import tensorboard"
  std::string pip_install;   // pip's arguments, e.g. "tensorboard"
  int install_seconds = 480;
};

// The venv's python, or "" with the reason in `why` (the variable unset, python3-venv missing,
// PyPI unreachable): the caller skips, saying why.
inline std::string venv_python(const VenvRequest& request, std::string* why) {
  namespace fs = std::filesystem;
  const char* dir = std::getenv(request.env_var);
  if (dir == nullptr) {
    *why = std::string(request.env_var) + " is not set (ctest sets it)";
    return "";
  }
  const std::string venv = dir, python = venv + "/bin/python";
  if (run_bounded(python + " -c '" + request.import_check + "'", 120).exit_code == 0) return python;
  const std::string partial = venv + ".partial";
  fs::remove_all(partial);
  const auto made = run_bounded("python3 -m venv " + partial, 120);
  if (made.exit_code != 0) {
    fs::remove_all(partial);
    *why = "python3 -m venv failed (python3-venv is missing?): " + made.output;
    return "";
  }
  const auto installed = run_bounded(
      partial + "/bin/pip install --disable-pip-version-check --retries 1 --timeout 20 -q " + request.pip_install,
      request.install_seconds);
  if (installed.exit_code != 0) {
    fs::remove_all(partial);
    *why = "pip install " + request.pip_install + " failed (PyPI unreachable?): " + installed.output.substr(0, 2000);
    return "";
  }
  fs::remove_all(venv);
  fs::rename(partial, venv);
  return python;
}

}  // namespace tessera::testing
