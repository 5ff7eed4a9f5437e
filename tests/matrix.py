"""Which test files run on which embedded MPI wheel (noxfile.py reads this file; docs/testing.md gives the
reasons in prose; tests/test_matrix.py fails when a test file is in neither list or in both).

The whole suite runs on the Open MPI wheel, which oversubscribes (any rank count on 2 cores). The MPICH
wheel busy-polls, so it runs at most 2 ranks; it runs the files whose behaviour depends on the library
or its launcher. A file is named by its path under tests/."""

from __future__ import annotations

# file -> why its behaviour depends on the library (or its launcher), so both wheels run it
BOTH_WHEELS = {
    "test_smoke.py": "the README's quick start on each wheel",
    # the MPI tool interface
    "test_mpit.py": "MPI_T: each library's control variables, their names, values and writability",
    "test_onelaunch_mpi.py": "MPI_T: algorithms switched at run time inside one launch, proven by their traces",
    # tuning files: the formats each library reads, and proof that they apply
    "test_tuning_mpi.py": "tuning files: readers' quirks, loading, fingerprints, verdicts, grouped probes",
    # which component serves a collective
    "test_coll_path.py": "served paths: the component each library selects for a collective",
    "test_mpich_composition.py": "served paths: MPICH's CH4 compositions on several nodes (MPICH only)",
    # start-up and the launcher
    "test_early_buffers_mpi.py": "start-up: message buffers before MPI_Init, RssAnon after the library's own",
    "test_launch_retry.py": "start-up: a launcher that fails before any rank runs (Open MPI's session folders)",
    "test_startup.py": "start-up: what each rank imports, the build tools run beside rank 0's set-up",
    "test_console.py": "the launcher: how each one forwards a rank's output to a terminal or a file",
    "test_bad_input_mpi.py": "the launcher: one line and exit 2 under each launcher (banners, non-root ranks)",
    "test_resume.py": "the launcher: a job killed under each launcher, then resumed",
    "test_interrupts.py": "the launcher: SIGTERM, SIGHUP, Ctrl-C to a driver end each launcher's ranks",
    # what tune writes for a site, through each library's reader
    "test_site_files.py": "site files: hostile paths read by Open MPI's ompi_info, MPICH's MPI_Init, shells, Lmod",
    "test_gpu_kernels.py": "the library's answer to MPIX_Query_cuda_support",
    # validation of every collective and algorithm against the library in use
    "test_sweep_mpi.py": "validation: every library collective and test, each library's results",
    "test_nonblocking.py": "validation: the non-blocking and persistent collectives of each library",
    "test_rma.py": "validation: the one-sided tests on each library's windows",
    "test_faults_mpi.py": "validation and the watchdog: planted wrong results, hangs and each library's abort",
    "test_library_mutants.py": "validation: planted wrong library calls; internal errors through each abort",
    "test_algorithms_mpi.py": "validation: the hand-written algorithms against each library's own results",
    "test_sparse_mpi.py": "validation: the sparse algorithms on each library's point-to-point",
    "test_collect.py": "results at scale: each library's MPI_MAXLOC over (time, rank) pairs (MPI_DOUBLE_INT)",
}

# file -> why one wheel (Open MPI) is enough: what it checks is fabricprobe's own code
ONE_WHEEL = {
    "test_matrix.py": "this split",
    "test_decisive.py": "which rules a decisive file keeps: planted checks and before/after rows, no library",
    "test_library_choice.py": "no rule for what the library runs anyway: the models' logic, no library launched",
    "test_library_check.py": "the library mpi4py loaded against the launcher's family, from planted variables",
    "test_hostile_files.py": "what readers are given that no writer makes: files and environment, no MPI job",
    "test_numbers.py": "numbers held against independent computations on planted input, no MPI job",
    "test_compiled_loops.py": "the compiled timing loops against planted C functions, no MPI job",
    "test_allocations.py": "fabricprobe's buffers (tracemalloc sees numpy's, not the library's)",
    "test_architecture.py": "imports and the engine's extension points",
    "test_arena.py": "the early-buffer arena (no MPI)",
    "test_shared_imports.py": "modules rank 0 reads for every rank, both roles in one process (no MPI)",
    "test_bad_input.py": "option and file checks before any MPI",
    "test_bound.py": "the bound's arithmetic and its report",
    "test_budget_mpi.py": "the budgeted search's rounds (the switch itself: test_onelaunch_mpi.py)",
    "test_buffers.py": "buffer alignment and placement",
    "test_compare_plot.py": "compare, plot and the summary on written files",
    "test_crash.py": "the store under kills, full disks and damage",
    "test_docs.py": "the docs against the code",
    "test_doctor.py": "the doctor's schedule and diagnosis",
    "test_economy.py": "the budgeted search (no MPI)",
    "test_economy_fixtures.py": "the search replayed on stored sweeps",
    "test_gpudirect.py": "device buffers under Numba's CUDA simulator",
    "test_gpu_study.py": "the GPU study's script, dry (the simulator, the host trainers)",
    "test_cuda_mpi.py": "the CUDA-aware Open MPI build, loaded by mpi4py's wheel whichever wheel is installed",
    "test_han_tuning.py": "Open MPI's han (Open MPI only)",
    "test_harness.py": "the timing loop's decisions",
    "test_hostile_input.py": "bad input, in process",
    "test_lab.py": "the fabric lab's namespaces, links and doctor",
    "test_verify_groups.py": "the planning of grouped probes, on a fake library (no MPI)",
    "test_lab_ownership.py": "what lab down removes",
    "test_launches.py": "several launches and their spread",
    "test_model.py": "the cost model",
    "test_mutations.py": "validation's planted bugs in hand-written collectives",
    "test_nccl_tests_format.py": "the nccl-tests export",
    "test_osu_format.py": "the OMB export",
    "test_patterns.py": "the oracle's exact results",
    "test_owned_folder.py": "the folder tune writes for a site (no MPI)",
    "test_plan.py": "the sweep plan",
    "test_reliability.py": "the store and readers under damage",
    "test_report.py": "the report and exports",
    "test_selection.py": "the runtime selection file",
    "test_site.py": "Slurm's environment and the site path, without a cluster",
    "test_sizes.py": "size parsing",
    "test_sparse.py": "sparse kernels and formats (no MPI)",
    "test_specs.py": "each spec against a numpy simulation (no MPI)",
    "test_spinning.py": "the spin warning's rule",
    "test_stats.py": "statistics",
    "test_store.py": "the results file",
    "test_trainers.py": "the trainers on the tuned collectives",
    "test_tuning.py": "the tuning formats' writers (no MPI)",
    "test_windows.py": "window mode's clock model and sync",
    "reframe_suite/test_reframe_checks.py": "fabricprobe's ReFrame check under ReFrame (Open MPI wheel)",
}

# Run by `nox -s site` against Debian's Open MPI 4.1 and MPICH 4.0 under the lab's Slurm.
SITE = {
    "site/test_readme_site_path.py": "the README's site path as written: module, venv, mpi4py's wheel, no compiler",
    "site/test_slurm_lab.py": "a site's MPIs under Slurm",
    "site/test_reframe_slurm.py": "the ReFrame check through Slurm",
    "site/test_site_files_lab.py": "the site files read by Debian's MPIs, Lmod and Slurm's TaskProlog",
    "site/test_slow_fs.py": "the lab's slow shared file system (Debian's fuse3)",
    "site/test_startup_calls.py": "a sweep rank's file-system metadata calls against a bare rank's (strace)",
}
