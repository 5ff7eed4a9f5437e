#!/usr/bin/env bash
# OMB 7.4's osu_acc_latency in four builds, for one MPI (its mpicc first on PATH):
#   released        as published: MPI_CHAR (OMB's default type), two MPI_Wtime per iteration
#   uchar           MPI_UNSIGNED_CHAR, fabricprobe's type (MPI_SUM allows it; MPI_CHAR is not a C integer type)
#   uchar-oneclock  and one MPI_Wtime per iteration, as fabricprobe's loop reads
#   uchar-noclock   and none
#   bash build_variants.sh OMB_SOURCE PREFIX       (OMB_SOURCE: a checkout of the 7.4 tarball)
set -euo pipefail
src="$(realpath "$1")"; prefix="$(realpath -m "$2")"
bin=libexec/osu-micro-benchmarks/mpi/one-sided/osu_acc_latency
cd "$src"
./configure CC=mpicc CXX=mpicxx --prefix="$prefix/released" > /dev/null && make -j"$(nproc)" > /dev/null && make install > /dev/null
git checkout -q -- c/util/osu_util_mpi.c c/mpi/one-sided/osu_acc_latency.c 2>/dev/null || true
variant() {  # NAME: rebuild after the edits made so far, and install the binary beside a copy of released
  make -j"$(nproc)" > /dev/null
  rm -rf "${prefix:?}/$1" && cp -r "$prefix/released" "$prefix/$1" && cp c/mpi/one-sided/osu_acc_latency "$prefix/$1/$bin"
}
sed -i 's/mpi_type_list\[i\] = MPI_CHAR;/mpi_type_list[i] = MPI_UNSIGNED_CHAR;/' c/util/osu_util_mpi.c
variant uchar
sed -i 's/t_graph_end = MPI_Wtime();/t_graph_end = 0;/' c/mpi/one-sided/osu_acc_latency.c
variant uchar-oneclock
sed -i 's/t_graph_start = MPI_Wtime();/t_graph_start = 0;/' c/mpi/one-sided/osu_acc_latency.c
variant uchar-noclock
