# packages.sh: the Debian 12 packages Tessera is built, run and tested with; one list, sourced by
# scripts/setup (which installs them) and scripts/fetch-deps (which downloads them for a machine
# without a package registry).

# The toolchain: a machine that builds from carried packages brings its own.
toolchain_packages=(build-essential cmake ninja-build pkg-config)
# The libraries the library and its programs build and run against.
library_packages=(
  libopenmpi-dev openmpi-bin
  libhdf5-dev
  libboost-program-options-dev libboost-dev
  libopenblas-openmp-dev
  libxxhash-dev
  liburing-dev
  nlohmann-json3-dev
  libicu-dev
  libprotobuf-dev protobuf-compiler
)
# What the tests link: GoogleTest.
test_library_packages=(libgtest-dev)
# The rest of the test suite's own: h5dump, python3 with numpy for reference computations and venv
# (TensorBoard's reader, from PyPI), a one-node Slurm cluster.
test_tool_packages=(
  hdf5-tools
  python3-numpy python3-venv
  slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge
  iproute2 util-linux  # ip, tc, nsenter, unshare: the multi-node tests' simulated nodes
)
