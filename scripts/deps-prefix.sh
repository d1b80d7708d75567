# deps-prefix.sh: sourced by scripts/test-gpu --deps. Unpacks the .deb files of scripts/fetch-deps into
# a private prefix (dpkg -x, never into /) and points the build and the runs at it.
#   unpack_deps DIR ROOT     ROOT/usr/... from every .deb in DIR
#   use_deps_prefix ROOT     exports PATH, LD_LIBRARY_PATH, PKG_CONFIG_PATH, OPAL_PREFIX, PMIX_INSTALL_PREFIX
#                            and sets deps_cmake_args (CMAKE_PREFIX_PATH and the paths CMake would look
#                            for under /usr)
# A runtime library package whose shared libraries the machine already has (every soname found by
# ldconfig) is left out, and the .so links of its -dev package point at the machine's copy, so no
# older library from the prefix shadows one the machine's programs use (OpenBLAS and Open MPI are
# always unpacked, see deps_always). TESSERA_DEPS_UNPACK_ALL=1
# unpacks every package (to try the prefix on a machine that has them all).

deps_arch=$( (gcc -dumpmachine || cc -dumpmachine) 2>/dev/null | sed 's/-pc-/-/')
deps_arch=${deps_arch:-x86_64-linux-gnu}
# Unpacked even when the machine has the sonames: the OpenMP build of OpenBLAS (another build shares
# its soname), and Open MPI with PMIx, whose mpirun, libraries and components must come from one
# installation.
deps_always='openblas|openmpi|pmix'

# The machine's path of a shared library file or soname, or nothing.
deps_system_library() {
  local name=$1 dir
  for dir in /usr/lib/"$deps_arch" /lib/"$deps_arch" /usr/lib64 /usr/lib /lib; do
    [ -e "$dir/$name" ] && { echo "$dir/$name"; return; }
  done
  ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n { print $NF; exit }'
}

unpack_deps() {
  local dir=$1 root=$2 deb pkg sonames s missing kept=0 used=0
  rm -rf "$root" && mkdir -p "$root" || return 1
  local known
  known=$(ldconfig -p 2>/dev/null | awk 'NR > 1 { print $1 }' | sort -u)
  for deb in "$dir"/*.deb; do
    pkg=$(dpkg-deb -f "$deb" Package) || return 1
    if [ "${TESSERA_DEPS_UNPACK_ALL:-0}" != 1 ] && [[ $pkg == lib* && $pkg != *-dev && ! $pkg =~ $deps_always ]]; then
      sonames=$(dpkg-deb -c "$deb" | awk '{ print $6 }' | grep -E '/lib[^/]*\.so\.[0-9]+$' | xargs -r -n1 basename)
      missing=0
      for s in $sonames; do grep -qxF "$s" <<<"$known" || missing=1; done
      if [ -n "$sonames" ] && [ $missing = 0 ]; then
        used=$((used + 1))
        continue
      fi
    fi
    dpkg-deb -x "$deb" "$root" || return 1
    kept=$((kept + 1))
  done
  echo "test-gpu: unpacked $kept packages into $root; $used library packages are the machine's own"
  # .so links to libraries left out: the machine's copy.
  local link target system
  while IFS= read -r link; do
    target=$(basename "$(readlink "$link")")
    system=$(deps_system_library "$target")
    [ -z "$system" ] && system=$(deps_system_library "$(sed -E 's/(\.so\.[0-9]+).*/\1/' <<<"$target")")
    if [ -n "$system" ]; then ln -sfn "$system" "$link"; else echo "test-gpu: warning: $link -> $target: not found"; fi
  done < <(find "$root" -xtype l -name 'lib*.so*')
  # Relocate what records /usr: h5cc, the pkg-config files; the names Debian's alternatives give.
  [ -f "$root/usr/bin/h5cc" ] && sed -i "s|^prefix=\"/usr\"|prefix=\"$root/usr\"|" "$root/usr/bin/h5cc"
  # fetch-deps leaves out static archives that have a shared library: h5cc then links the shared one.
  if [ -f "$root/usr/bin/h5cc" ] && [ ! -e "$root/usr/lib/$deps_arch/hdf5/serial/libhdf5.a" ]; then
    sed -i 's|^STATIC_AVAILABLE="yes"|STATIC_AVAILABLE="no"|' "$root/usr/bin/h5cc"
  fi
  local pc
  for pc in "$root"/usr/lib/"$deps_arch"/pkgconfig/*.pc "$root"/usr/share/pkgconfig/*.pc; do
    [ -f "$pc" ] && sed -E -i "s#^(prefix|exec_prefix|libdir|includedir)( *)=( *)/usr#\1\2=\3$root/usr#" "$pc"
  done
  mkdir -p "$root/bin"
  local alt
  for alt in mpirun mpiexec mpicxx mpic++ mpicc; do
    [ -e "$root/usr/bin/$alt.openmpi" ] && ln -sfn "$root/usr/bin/$alt.openmpi" "$root/bin/$alt"
  done
  [ -e "$root/usr/bin/pkgconf" ] && [ ! -e "$root/usr/bin/pkg-config" ] && ln -sfn pkgconf "$root/usr/bin/pkg-config"
  return 0
}

use_deps_prefix() {
  local root=$1 usr=$1/usr lib=$1/usr/lib/$deps_arch
  export PATH="$root/bin:$usr/bin:$PATH"
  export LD_LIBRARY_PATH="$lib:$lib/openmpi/lib:$lib/hdf5/serial:$lib/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PKG_CONFIG_PATH="$lib/pkgconfig:$usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export OPAL_PREFIX="$usr"                       # Open MPI finds its components and help files here
  export PMIX_INSTALL_PREFIX="$lib/pmix2"         # and PMIx its own
  deps_cmake_args=(
    "-DCMAKE_PREFIX_PATH=$usr"
    "-DMPI_CXX_COMPILER=$usr/bin/mpicxx.openmpi"
    "-DMPI_CXX_HEADER_DIR=$lib/openmpi/include"     # FindMPI drops this one of the wrapper's two -I
    "-DMPI_CXX_ADDITIONAL_INCLUDE_DIRS=$lib/openmpi/include"
    "-DMPIEXEC_EXECUTABLE=$usr/bin/mpirun.openmpi"
    "-DHDF5_C_COMPILER_EXECUTABLE=$usr/bin/h5cc"
    "-DTESSERA_CBLAS_INCLUDE_DIR=$usr/include/$deps_arch/openblas-openmp"
    "-DTESSERA_OPENBLAS_LIBRARY=$lib/openblas-openmp/libopenblas.so"
    "-DPKG_CONFIG_EXECUTABLE=$usr/bin/pkgconf"
  )
}
