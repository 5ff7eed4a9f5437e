#!/usr/bin/env bash
# The GPU run behind docs/gpu.md, for a machine with a GPU (the device tool's H100/H200 image).
# Usage: benchmarks/gpu_study.sh OUTDIR [MPIEXEC]      Results: OUTDIR/gpu.h5, OUTDIR/env.txt, OUTDIR/tests.txt
# With Intel MPI (impi-rt), run it with I_MPI_OFFLOAD=1 I_MPI_OFFLOAD_MODE=cuda in the environment:
# that is Intel MPI's own statement of CUDA-awareness, which fabricprobe records and checks.
set -uo pipefail
out=${1:-gpu-study}; mpiexec=${2:-mpiexec}; mkdir -p "$out"; f="$out/gpu.h5"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
over=""; "$mpiexec" --version 2>&1 | grep -q "Open MPI" && over="--oversubscribe"
# 1. what is installed: GPU, driver, CUDA, MPI, mpi4py, CuPy, and whether the MPI says it is CUDA-aware
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
  "$mpiexec" --version 2>&1 | head -3
  python - <<'PY'
import importlib
for name in ("mpi4py", "numpy", "numba", "cupy", "h5py"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as exc:  # noqa: BLE001
        print(name, "missing:", exc)
PY
  python -m fabricprobe info || true
} > "$out/env.txt" 2>&1
# 2. the GPU kernels and the device paths on the real device (the same tests CI runs under the simulator)
python -m pytest -q tests/test_gpu_kernels.py tests/test_gpudirect.py > "$out/tests.txt" 2>&1
# 3. the sweep on CuPy buffers, GPUDirect on and off, at 1, 2 and 4 ranks on the one GPU
for n in 1 2 4; do
  "$mpiexec" $over -n "$n" python -m fabricprobe sweep -o "$f" --buffer cupy --gpudirect both \
    --collectives allreduce,bcast,allgather,reduce_scatter --algorithms library,ring,rabenseifner \
    -b 8 -e 256M -f 4 --progress none --quiet
done
# 4. the reduction kernel against a device-to-device copy (target: ≥ 80% of the copy's bandwidth)
python -m fabricprobe sweep -o "$f" --buffer cupy --collectives kernels -b 1M -e 1G -f 4 --progress none --quiet
python -m fabricprobe sweep -o "$f" --buffer numba --collectives kernels -b 1M -e 1G -f 4 --progress none --quiet
python -m fabricprobe report "$f" --summary > "$out/summary.txt" 2>&1 || true
