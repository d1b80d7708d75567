// A Python virtual environment for the tests that check Tessera against a Python library
// (TensorBoard, tokenizers, transformers): made on first use under the path in an environment
// variable ctest sets, with the packages pip installs, and kept for later runs. A partial venv
// never takes the cached name, so an interrupted install is redone.
//
// Making one is most of such a test's time on a fresh build directory, so it does no more than the
// tests need: the venv gets no pip of its own when the host's pip can install into it (pip --python,
// pip 22.3 and later; else ensurepip bootstraps one), pip installs wheels only and compiles no
// bytecode ahead (Python compiles, once, the modules a test imports; transformers alone is thousands
// of files), and the packages are those asked for with their dependencies, at their latest versions.
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

// The pip command that installs into the venv whose python is `python`: the host's (python3 -m pip
// --python) when it can, else the venv's own after ensurepip; "" with the reason in `why`.
inline std::string venv_pip(const std::string& python, std::string* why) {
  const std::string host_pip = "python3 -m pip --python " + python;
  if (run_bounded(host_pip + " --version", 60).exit_code == 0) return host_pip;
  const auto bootstrapped = run_bounded(python + " -m ensurepip --default-pip", 120);
  if (bootstrapped.exit_code != 0) {
    *why = "python3 has no pip and ensurepip failed (python3-venv is missing?): " + bootstrapped.output;
    return "";
  }
  return python + " -m pip";
}

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
  // The interpreter by its real path: the venv records its directory as home, for good.
  const auto made = run_bounded(
      "sh -c '\"$(python3 -c \"import os, sys; print(os.path.realpath(sys.executable))\")\" -m venv --without-pip " +
          partial + "'",
      120);
  if (made.exit_code != 0) {
    fs::remove_all(partial);
    *why = "python3 -m venv failed (python3-venv is missing?): " + made.output;
    return "";
  }
  const std::string pip = venv_pip(partial + "/bin/python", why);
  if (pip.empty()) {
    fs::remove_all(partial);
    return "";
  }
  const auto installed = run_bounded(pip +
                                         " install --disable-pip-version-check --retries 1 --timeout 20 -q "
                                         "--only-binary :all: --no-compile " +
                                         request.pip_install,
                                     request.install_seconds);
  if (installed.exit_code != 0) {
    fs::remove_all(partial);
    *why = "pip install " + request.pip_install +
           " failed (PyPI unreachable, or a package without a wheel here?): " + installed.output.substr(0, 2000);
    return "";
  }
  fs::remove_all(venv);
  fs::rename(partial, venv);
  return python;
}

}  // namespace tessera::testing
