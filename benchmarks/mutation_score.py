"""The mutation score of docs/testing.md: every planted bug the suite plants, and whether it is caught.

    python benchmarks/mutation_score.py [--pytest .nox/tests-openmpi/bin/pytest] [--ranks 2,3,5,8]

Two tables, in Markdown on stdout:
1. the twelve mutants of tests/drivers/mutants.py under the unchanged sweep at each p: caught,
   equivalent (the code path cannot show the bug at that p) or MISSED;
2. every class of planted bug (validation, algorithms, sparse, reused results, non-root buffers, tuning
   proofs, store): the tests that plant one, each caught when its test passes.
Exits 1 when a mutant that can show is MISSED, or a planted class is missed or ran no test.

Run it in an environment with the Open MPI wheel (it needs p = 3, 5, 8) from the project's root, on two
commits to compare them (docs/testing.md gives the commands and the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

# class -> the tests (file::function, every parametrisation) that plant a bug of that class
PLANTED = {
    "validation": [
        "test_faults_mpi.py::test_validation_catches_a_planted_wrong_result",
        "test_nonblocking.py::test_a_planted_wrong_result_is_caught",
        "test_rma.py::test_a_planted_wrong_result_is_caught",
        "test_rma.py::test_a_put_that_lands_elsewhere_is_caught",
        "test_specs.py::test_a_library_that_ignores_the_displacements_is_caught",
        "test_specs.py::test_unwritten_output_is_wrong",
        "test_gpudirect.py::test_the_device_checker_catches_a_wrong_result",
        "reframe_suite/test_reframe_checks.py::test_a_wrong_result_fails_the_sanity_check",
    ],
    "algorithms": [
        "test_algorithms_mpi.py::test_the_checker_catches_a_wrong_algorithm",
        "test_algorithms_mpi.py::test_a_rank_that_raises_ends_the_check_at_once_and_names_the_case",
        "test_mutations.py::test_every_planted_bug_is_caught",
    ],
    "sparse": [
        "test_sparse_mpi.py::test_the_checker_catches_a_wrong_algorithm",
        "test_allocations.py::test_no_timed_call_allocates",
    ],
    "wrong library calls (issue 53), p = 2, 3, 4": [
        "test_library_mutants.py::test_a_call_that_ignores_its_root_is_caught",
        "test_library_mutants.py::test_a_collective_that_moves_the_wrong_block_is_caught",
        "test_library_mutants.py::test_a_window_transfer_that_moves_the_wrong_block_is_caught",
        "test_library_mutants.py::test_a_receive_count_one_too_large_is_caught",
        "test_library_mutants.py::test_a_write_into_an_untouched_buffer_is_named_and_never_counts_above_checked",
        "test_library_mutants.py::test_an_internal_error_is_not_the_status_of_wrong_results",
    ],
    "reused results": ["test_sparse_mpi.py::test_the_checker_catches_an_algorithm_that_adds_onto_a_reused_result"],
    "non-root buffers": ["test_algorithms_mpi.py::test_the_checker_catches_a_changed_nonroot_input"],
    "tuning proofs": [
        "test_tuning_mpi.py::test_a_file_the_library_ignores_is_never_verified",
        "test_tuning_mpi.py::test_verification",
        "test_coll_path.py::test_a_tuned_rule_han_keeps_from_being_read_is_not_consulted_never_verified",
        "test_han_tuning.py::test_a_planted_han_rules_file_changes_the_inter_node_step",
    ],
    "numbers (issue 67): 16 wrong numbers planted in timed regions, statistics, units, busbw factors": [
        "test_numbers.py::test_every_number_holds_against_its_independent_computation",
        "test_numbers.py::test_each_planted_wrong_number_is_caught",
    ],
    "store": [
        "test_reliability.py::test_one_flipped_bit_loses_that_record_only",
        "test_reliability.py::test_a_damaged_sample_header_is_damage_not_missing_samples",
        "test_reliability.py::test_a_damaged_point_row_costs_that_row_only",
        "test_reliability.py::test_a_damaged_root_header_is_one_line_naming_repair",
        "test_crash.py::test_every_reader_names_a_damaged_file_and_repair_salvages",
        "test_crash.py::test_hundreds_of_kills_lose_nothing_short_form",
    ],
}


def mutants(ranks: list[int]) -> tuple[str, bool]:
    """The table of the twelve mutants at each p, and whether every one that can show was caught."""
    from mpirun import mpi_env, need_ranks
    from test_mutations import EQUIVALENT, MUTANTS

    rows = {m: [] for m in MUTANTS}
    for p in ranks:
        with tempfile.TemporaryDirectory() as tmp:
            argv = need_ranks(p).argv(p) + [sys.executable, str(ROOT / "tests/drivers/mutants.py"), f"{tmp}/m.h5"]
            out = subprocess.run(argv, capture_output=True, text=True, env=mpi_env(), timeout=900)
        verdicts = json.loads(out.stdout.strip().splitlines()[-1])["verdicts"]
        for m in MUTANTS:
            caught = verdicts[m]["wrong"] > 0
            rows[m].append("equivalent" if (m, p) in EQUIVALENT and not caught else "caught" if caught else "MISSED")
    lines = ["| mutant | " + " | ".join(f"p = {p}" for p in ranks) + " |", "|---" * (len(ranks) + 1) + "|"]
    lines += [f"| `{m}` | " + " | ".join(v) + " |" for m, v in rows.items()]
    possible = sum(v != "equivalent" for vs in rows.values() for v in vs)
    caught = sum(v == "caught" for vs in rows.values() for v in vs)
    score = f"\n\nScore: {caught} of {possible} (mutant, p) pairs where the bug can show.\n"
    return "\n".join(lines) + score, caught == possible


def planted(pytest: str) -> tuple[str, bool]:
    """The table of planted classes, and whether every class ran and was caught whole (a pytest that
    collected nothing, e.g. ReFrame not installed, once printed zeros and exited 0)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "r.xml"
        ids = [f"tests/{t}" for tests in PLANTED.values() for t in tests]
        env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
        subprocess.run([pytest, "-q", "-p", "no:cacheprovider", f"--junitxml={report}", *ids], cwd=ROOT, env=env)
        cases = list(ET.parse(report).iter("testcase"))
    lines = ["| class | planted (test cases) | caught | missed or not run |", "|---|--:|--:|---|"]
    whole = True
    for name, tests in PLANTED.items():
        mine = [c for c in cases if any(_matches(c, t) for t in tests)]
        bad = [c.get("name") for c in mine if len(c)]  # a child element: failure, error or skipped
        whole = whole and bool(mine) and not bad
        missed = ", ".join(bad) or ("—" if mine else "none ran")
        lines.append(f"| {name} | {len(mine)} | {len(mine) - len(bad)} | {missed} |")
    return "\n".join(lines) + "\n", whole


def _matches(case: ET.Element, test: str) -> bool:
    path, function = test.split("::")
    module = "tests." + path.removesuffix(".py").replace("/", ".")
    return case.get("classname") == module and case.get("name").split("[")[0] == function


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pytest", default=str(Path(sys.executable).parent / "pytest"))
    parser.add_argument("--ranks", default="2,3,5,8")
    args = parser.parse_args()
    results = [mutants([int(p) for p in args.ranks.split(",")]), planted(args.pytest)]
    for table, _ in results:
        print(table)
    if not all(whole for _, whole in results):
        print("mutation_score: a bug was missed, or a planted class ran no test (above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
