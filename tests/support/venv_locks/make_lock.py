#!/usr/bin/env python3
"""Writes the lock of a test venv: the wheels pip resolves for the packages, as pip requirements
("name @ URL --hash=sha256:..."), for tests/support/python_venv.hpp to install without resolving
(no index page fetched: most of a venv's making). Usage, from the repository root:

    python3 tests/support/venv_locks/make_lock.py tests/support/venv_locks/tensorboard.txt tensorboard
"""
import json
import subprocess
import sys
import tempfile


def resolved(packages):
    """pip's report of what it would install for `packages` (wheels only) into a fresh venv."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", d + "/venv"], check=True)
        subprocess.run([sys.executable, "-m", "pip", "--python", d + "/venv/bin/python", "install", "-q",
                        "--only-binary", ":all:", "--dry-run", "--report", d + "/report.json", *packages],
                       check=True)
        with open(d + "/report.json") as f:
            return json.load(f)


def lock_text(output, packages, report):
    env = report["environment"]
    lines = [f"# The wheels pip resolves for `pip install {' '.join(packages)}` on Python "
             f"{env['python_full_version']}, {env['sys_platform']} {env['platform_machine']}: installed",
             "# without resolving by tests/support/python_venv.hpp (which, elsewhere or should a wheel be",
             "# gone, installs the packages by name). Made with:",
             f"#   python3 tests/support/venv_locks/make_lock.py {output} {' '.join(packages)}"]
    for item in sorted(report["install"], key=lambda i: i["metadata"]["name"].lower()):
        download = item["download_info"]
        lines.append(f"{item['metadata']['name']} @ {download['url']} "
                     f"--hash=sha256:{download['archive_info']['hashes']['sha256']}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    output, packages = sys.argv[1], sys.argv[2:]
    text = lock_text(output, packages, resolved(packages))
    with open(output, "w") as f:
        f.write(text)
