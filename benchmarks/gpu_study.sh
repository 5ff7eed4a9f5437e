#!/usr/bin/env bash
# The GPU run behind docs/gpu.md, for a machine with a GPU (the device tool's H100/H200 image).
# Usage: benchmarks/gpu_study.sh OUTDIR [PHASE ...]     PHASE: env tests n1 n2 n4 kernels (default: all)
# Each phase fits the device tool's 10-minute call; results accumulate in OUTDIR/gpu.h5.
# MPIEXEC=/path/to/mpiexec picks the launcher. For Intel MPI (impi-rt) as the "on" candidate, also
# export I_MPI_OFFLOAD=1 I_MPI_OFFLOAD_MODE=cuda: Intel's own switch, which fabricprobe records and checks.
set -uo pipefail
out=${1:-gpu-study}; shift || true
phases=${*:-env tests n1 n2 n4 kernels}
mpiexec=${MPIEXEC:-mpiexec}; mkdir -p "$out"; f="$out/gpu.h5"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
over=""; "$mpiexec" --version 2>&1 | grep -q "Open MPI" && over="--oversubscribe"
sweep() {  # n, then sweep options
  local n=$1; shift
  "$mpiexec" $over -n "$n" python -m fabricprobe sweep -o "$f" --progress plain --quiet "$@" 2>&1 | tail -5
}
for phase in $phases; do
  echo "== $phase $(date -u +%FT%TZ)"
  case $phase in
    env)  # what is installed: GPU, driver, CUDA, MPI, mpi4py, CuPy, NCCL, and the MPI's CUDA-aware answer
      { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
        "$mpiexec" --version 2>&1 | head -3
        python - <<'PY'
import importlib
for name in ("mpi4py", "numpy", "numba", "cupy", "h5py", "rich"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as exc:  # noqa: BLE001
        print(name, "missing:", exc)
try:
    from cupy.cuda import nccl
    print("nccl available:", getattr(nccl, "available", False))
except Exception as exc:  # noqa: BLE001
    print("nccl missing:", exc)
PY
        "$mpiexec" -n 1 python -m fabricprobe info --json || true
      } > "$out/env.txt" 2>&1; cat "$out/env.txt" ;;
    tests)  # the GPU kernels and device paths: simulator tests plus the ones that need a real GPU
      python -m pytest -q -rs tests/test_gpu_kernels.py tests/test_gpudirect.py 2>&1 | tee "$out/tests.txt" | tail -15 ;;
    n1|n2|n4)  # CuPy buffers, GPUDirect on and off, NCCL, on the one GPU
      sweep "${phase#n}" --buffer cupy --gpudirect both --collectives allreduce,bcast,allgather,reduce_scatter \
        --algorithms library,ring,rabenseifner -b 8 -e 64M -f 4 --max-time 0.5 ;;
    kernels)  # the reduction kernel against a device-to-device copy (target: busbw ≥ 80% of the copy's)
      sweep 1 --buffer cupy --collectives kernels -b 1M -e 1G -f 4
      sweep 1 --buffer numba --collectives kernels -b 1M -e 256M -f 4
      python -m fabricprobe report "$f" --collectives reduce_local,copy_local > "$out/kernels.txt" 2>&1 || true ;;
    *) echo "unknown phase $phase"; exit 2 ;;
  esac
done
python -m fabricprobe report "$f" > "$out/report.txt" 2>&1 || true
