// A Python virtual environment for the tests that check Tessera against a Python library
// (TensorBoard, tokenizers, transformers): made on first use under the path in an environment
// variable ctest sets, with the packages pip installs, and kept for later runs. A partial venv
// never takes the cached name, so an interrupted install is redone.
//
// Making one is most of such a test's time on a fresh build directory, so it does no more than the
// tests need: the venv gets no pip of its own when the host's pip can install into it (pip --python,
// pip 22.3 and later; else ensurepip bootstraps one), pip compiles no bytecode ahead (Python
// compiles, once, the modules a test imports; transformers alone is thousands of files), and it
// installs wheels only. Where the request names a lock (tests/support/venv_locks/: the wheels pip
// resolved for the packages, with their hashes), those wheels are installed without resolving: the
// resolution fetches and reads an index page per package, most of the time of an install. Where the
// lock does not serve (another Python or platform, a wheel gone), the packages are installed by name,
// at their latest versions, with their dependencies.
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
  std::string lock = "";  // the lock of those packages, from the repository root ("" for none)
};

// Whether the host's pip can install into another environment (pip --python: pip 22.3 and later);
// asked of the pip package itself (starting pip takes half a second).
inline bool host_pip_installs_elsewhere() {
  return run_bounded(
             "python3 -c 'import pip, sys; v = tuple(int(p) for p in pip.__version__.split(\".\")[:2]); "
             "sys.exit(0 if v >= (22, 3) else 1)'",
             60)
             .exit_code == 0;
}

// The pip command that installs into the venv whose python is `python`: the host's (python3 -m pip
// --python) when it can, else the venv's own after ensurepip; "" with the reason in `why`.
inline std::string venv_pip(const std::string& python, std::string* why) {
  if (host_pip_installs_elsewhere()) return "python3 -m pip --python " + python;
  const auto bootstrapped = run_bounded(python + " -m ensurepip --default-pip", 120);
  if (bootstrapped.exit_code != 0) {
    *why = "python3 has no pip and ensurepip failed (python3-venv is missing?): " + bootstrapped.output;
    return "";
  }
  return python + " -m pip";
}

// The lock file of `request` in the source tree (ctest sets TESSERA_SOURCE_DIR), or "" for none.
inline std::string venv_lock_file(const VenvRequest& request) {
  const char* source = std::getenv("TESSERA_SOURCE_DIR");
  if (request.lock.empty() || source == nullptr) return "";
  const std::string file = std::string(source) + "/" + request.lock;
  return std::filesystem::exists(file) ? file : "";
}

// A fresh venv without pip at `dir` (the interpreter by its real path: the venv records its
// directory as home, for good); "" or why not.
inline std::string make_bare_venv(const std::string& dir) {
  std::filesystem::remove_all(dir);
  const auto made = run_bounded(
      "sh -c '\"$(python3 -c \"import os, sys; print(os.path.realpath(sys.executable))\")\" -m venv --without-pip " +
          dir + "'",
      120);
  if (made.exit_code == 0) return "";
  std::filesystem::remove_all(dir);
  return "python3 -m venv failed (python3-venv is missing?): " + made.output;
}

// Installs the request's lock into the venv at `dir` with `pip` and checks the import; false where
// it cannot (the venv is then to be made again).
inline bool install_lock(const VenvRequest& request, const std::string& dir, const std::string& pip) {
  const std::string lock = venv_lock_file(request);
  if (lock.empty()) return false;
  const auto installed = run_bounded(pip +
                                         " install --disable-pip-version-check --retries 1 --timeout 20 -q "
                                         "--no-compile --no-deps --require-hashes -r " +
                                         lock,
                                     request.install_seconds);
  return installed.exit_code == 0 &&
         run_bounded(dir + "/bin/python -c '" + request.import_check + "'", 120).exit_code == 0;
}

// A bare venv at `dir` and the pip command that installs into it; "" with why not in `why`.
inline std::string bare_venv_with_pip(const std::string& dir, std::string* why) {
  *why = make_bare_venv(dir);
  if (!why->empty()) return "";
  const std::string pip = venv_pip(dir + "/bin/python", why);
  if (pip.empty()) std::filesystem::remove_all(dir);
  return pip;
}

// Makes the venv at `dir` with the request's packages: the lock's wheels where they serve, else the
// packages by name; "" or why not.
inline std::string make_venv(const VenvRequest& request, const std::string& dir) {
  std::string why;
  std::string pip = bare_venv_with_pip(dir, &why);
  if (pip.empty()) return why;
  if (install_lock(request, dir, pip)) return "";
  if (!venv_lock_file(request).empty()) {  // again from a bare venv: what the lock left is not built on
    pip = bare_venv_with_pip(dir, &why);
    if (pip.empty()) return why;
  }
  const auto installed = run_bounded(pip +
                                         " install --disable-pip-version-check --retries 1 --timeout 20 -q "
                                         "--only-binary :all: --no-compile " +
                                         request.pip_install,
                                     request.install_seconds);
  if (installed.exit_code == 0) return "";
  std::filesystem::remove_all(dir);
  return "pip install " + request.pip_install +
         " failed (PyPI unreachable, or a package without a wheel here?): " + installed.output.substr(0, 2000);
}

// The venv's python, or "" with the reason in `why` (the variable unset, python3-venv missing,
// PyPI unreachable): the caller skips, saying why.
inline std::string venv_python(const VenvRequest& request, std::string* why) {
  const char* dir = std::getenv(request.env_var);
  if (dir == nullptr) {
    *why = std::string(request.env_var) + " is not set (ctest sets it)";
    return "";
  }
  const std::string venv = dir, python = venv + "/bin/python";
  if (run_bounded(python + " -c '" + request.import_check + "'", 120).exit_code == 0) return python;
  const std::string partial = venv + ".partial";
  *why = make_venv(request, partial);
  if (!why->empty()) return "";
  std::filesystem::remove_all(venv);
  std::filesystem::rename(partial, venv);
  return python;
}

}  // namespace tessera::testing
