#!/usr/bin/env bash
# The GPU study of issue 55, in phases that each fit one device call, what was never measured first:
#
#   bash benchmarks/gpu/study.sh OUT [PHASE ...]     PHASE: env direct train repeat (default: all four)
#   DRY=1 bash benchmarks/gpu/study.sh OUT           the same here, without a GPU (see below)
#
# env     what is there: GPU, driver, MPI, mpi4py, CuPy, and the provenance's CUDA line
# direct  GPUDirect on (device buffers to the CUDA-aware MPI) against staged and pipelined, on 1 and 2
#         ranks (two ranks share the one GPU under MPS), allreduce, bcast, alltoall (library; allreduce
#         also ring and Rabenseifner, for the tuning), latency and bw, 8 B to 256 MiB, every point validated
# train   `fabricprobe tune` on direct's n = 2 points, then dp_sgd (2 ranks) on CuPy with the tuned allreduce,
#         hybrid (4: 2 stages x 2 replicas) with the library's (the selection holds the 2-rank shape only),
#         each step's compute / communication / wait split recorded
# repeat  the n = 2 rows of direct twice more (the spread between launches is the interval's)
# Results: OUT/gpu-n1.h5 and OUT/gpu-n2.h5 (sweeps), OUT/train.h5, OUT/tuned/ (selection), OUT/*.txt (each phase's output).
# Tables: python benchmarks/gpu/study_tables.py OUT. Every phase stops at its cap (CAP_<phase>=seconds)
# and the store keeps what was measured before; what a phase cannot do here it says (one line each).
#
# The MPI: the CUDA-aware Open MPI of benchmarks/gpu/build_cuda_mpi.sh, carried in .cuda-mpi/ (the
# device tool's `carry`), else the mpiexec on PATH (then GPUDirect on is "not runnable", and says why).
# DRY=1 (no GPU): Numba's CUDA simulator for the device buffers (--buffer numba, its arrays host memory,
# so "on" is claimed with --assume-cuda-aware), the trainers on --device host (their CuPy path is tested
# with numpy standing in: tests/test_trainers.py), sizes to 64 KiB and no MPS: it proves the script, the
# carried files and the tables, not one figure.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
out=${1:-gpu-study}; shift || true
phases=${*:-env direct train repeat}
mkdir -p "$out"; out="$(cd "$out" && pwd)"
py=${PYTHON:-python3}
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
declare -A cap=([env]=${CAP_env:-40} [direct]=${CAP_direct:-300} [train]=${CAP_train:-150} [repeat]=${CAP_repeat:-150})

mpiexec=${MPIEXEC:-mpiexec}
if [ -x "$ROOT/.cuda-mpi/bin/mpiexec" ] && [ -z "${MPIEXEC:-}" ]; then  # the build travels; its prefix moves
  prefix="$ROOT/.cuda-mpi"; mpiexec="$prefix/bin/mpiexec"
  export OPAL_PREFIX="$prefix" LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export MPI4PY_LIBMPI="$prefix/lib/libmpi.so.40" MPI4PY_MPIABI=openmpi
  if [ "${DRY:-0}" != 1 ] && ls "$prefix"/wheels/mpi4py-*.whl >/dev/null 2>&1; then  # the wheel that loads it
    "$py" -m pip install -q --no-index --no-deps --target /tmp/fabricprobe-site "$prefix"/wheels/mpi4py-*.whl \
      && export PYTHONPATH="/tmp/fabricprobe-site:$PYTHONPATH"
  fi
fi
over=""; "$mpiexec" --version 2>&1 | grep -qE "Open MPI|OpenRTE" && over="--oversubscribe"  # 4.1 says OpenRTE

if [ "${DRY:-0}" = 1 ]; then
  export NUMBA_ENABLE_CUDASIM=1
  buffer=numba; device=host; claim="--assume-cuda-aware"; sizes=${SIZES:-8,1K,64K}; mps=0; chunk="--stage-chunk 16K"
  model=(--dataset digits --epochs 2)
  export OMPI_MCA_opal_warn_on_missing_libcuda=0  # no driver here: the build says so at every start
else
  buffer=cupy; device=cupy; claim=""; sizes=${SIZES:-8,64,1K,16K,256K,1M,4M,16M,64M,256M}; mps=${MPS:-1}; chunk=""
  model=(--dataset mnist5k --hidden 512,512 --epochs 3)  # 2.6 MB of gradient a step (docs/trainers.md)
fi
if [ "$mps" = 1 ]; then  # two ranks on the one GPU time-slice it without MPS (docs/gpu.md: 10x at 8 B)
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/fabricprobe-mps CUDA_MPS_LOG_DIRECTORY=/tmp/fabricprobe-mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if nvidia-cuda-mps-control -d; then trap 'echo quit | nvidia-cuda-mps-control' EXIT
  else echo "not done: MPS (nvidia-cuda-mps-control -d failed): n = 2 ranks time-slice the GPU"; fi
fi

launch() {  # n, then fabricprobe's arguments; SIGTERM at the phase's cap, SIGKILL 15 s later
  local n=$1; shift
  timeout -k 15 "${cap[$phase]}" "$mpiexec" $over -n "$n" "$py" -m fabricprobe "$@"
}
collectives() {  # n: the device sweep of direct and repeat, one file per job shape (tune takes one)
  launch "$1" sweep -o "$out/gpu-n$1.h5" --buffer "$buffer" --gpudirect both $claim $chunk \
    --collectives allreduce,bcast,alltoall,latency,bw --algorithms library,ring,rabenseifner \
    --sizes "$sizes" --max-time "${MAX_TIME:-0.2}" --progress plain --quiet
}

for phase in $phases; do
  echo "== $phase $(date -u +%FT%TZ) (cap ${cap[$phase]:-?} s)"
  case $phase in
    env)
      { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || echo "not done: nvidia-smi"
        "$mpiexec" --version 2>&1 | head -1
        "$py" -c "import mpi4py, numpy, numba; print('mpi4py', mpi4py.__version__, 'numpy', numpy.__version__, 'numba', numba.__version__)"
        "$py" -c "import cupy; print('cupy', cupy.__version__)" 2>&1 | tail -1
        launch 1 info --json | grep -E '"(mpi_library_version|cuda|cuda_aware|cuda_aware_method|cuda_library|gpu)"'
      } 2>&1 | tee "$out/env.txt" ;;
    direct)
      { echo "not done: NCCL at n = 2 (the machine has one GPU; NCCL needs a GPU per rank)"
        for n in 1 2; do collectives "$n" 2>&1 | tail -4; done; } | tee "$out/direct.txt" ;;
    train)
      { sel="$out/tuned/fabricprobe_selection.json"
        "$py" -m fabricprobe tune "$out/gpu-n2.h5" -o "$out/tuned" --collectives allreduce 2>&1 | tail -3
        allreduce=(--allreduce tuned --selection "$sel")
        if [ ! -f "$sel" ]; then
          echo "not done: the tuned allreduce (tune wrote no selection: its line above says why); the library's"
          allreduce=(--allreduce library)
        fi
        # dp_sgd on 2 ranks; hybrid on 4: 2 pipeline stages x 2 replicas, whose gradients the allreduce sums
        launch 2 train dp_sgd --device "$device" $claim "${allreduce[@]}" "${model[@]}" -o "$out/train.h5" --progress none
        echo "not done: hybrid on the tuned allreduce (tuned for 2 ranks; hybrid's 4 need a tune of their own): the library's"
        launch 4 train hybrid --stages 2 --device "$device" $claim --allreduce library "${model[@]}" -o "$out/train.h5" \
          --progress none
      } 2>&1 | tee "$out/train.txt" ;;
    repeat)
      for rep in 1 2; do collectives 2 2>&1 | tail -2; done | tee "$out/repeat.txt" ;;
    *) echo "unknown phase $phase"; exit 2 ;;
  esac
done
echo "== tables"
"$py" "$ROOT/benchmarks/gpu/study_tables.py" "$out" | tee "$out/tables.md"
