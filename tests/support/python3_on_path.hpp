// The python3 that PATH names, started directly: where "python3" on PATH is a version manager's shim
// (pyenv's is a shell script that works out, at every start, which interpreter to run: ~0.3 s a
// start), a link named python3 to the interpreter it runs is put first on PATH, once per test
// process, so later starts of "python3" (the SVG reader's, a reference script's) skip the shim. The
// interpreter is the same; only python3 is affected; the link's directory goes with the process (a
// venv made meanwhile names the interpreter by its real path: python_venv.hpp does).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera::testing {

// The first line `command` prints, or "" when it fails.
inline std::string first_line_of(const std::string& command) {
  const ProcessResult r = run_bounded(command, 60);
  return r.exit_code == 0 ? r.output.substr(0, r.output.find('\n')) : "";
}

// Links python3 to the interpreter "python3" runs, first on PATH; nothing when there is no python3
// or PATH names the interpreter itself.
inline void start_python3_directly() {
  namespace fs = std::filesystem;
  static const std::unique_ptr<ScratchDir> link_dir = []() -> std::unique_ptr<ScratchDir> {
    const std::string interpreter = first_line_of("python3 -c 'import sys; print(sys.executable)'");
    const std::string on_path = first_line_of("sh -c 'command -v python3'");
    std::error_code ec;
    if (interpreter.empty() || on_path.empty() || fs::equivalent(interpreter, on_path, ec)) return nullptr;
    auto dir = std::make_unique<ScratchDir>("python3");
    fs::create_symlink(interpreter, *dir / "python3", ec);
    if (ec) return nullptr;
    const char* path = std::getenv("PATH");
    ::setenv("PATH", (dir->path().string() + ":" + (path == nullptr ? "" : path)).c_str(), 1);
    return dir;
  }();
}

}  // namespace tessera::testing
