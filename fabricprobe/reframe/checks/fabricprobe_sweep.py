"""fabricprobe's sweep as a ReFrame check: run it with the system's launcher, pass only if every point
is validated (no wrong result, no error), take every library point's median as a performance variable
(fabricprobe.report.reframe.perf_name) and compare it with the references of a stored good run.

Variables (`-S name=value`): collectives, sizes (fabricprobe's --sizes), options (more sweep options),
num_tasks, references_file (`fabricprobe report GOOD.h5 --format reframe-references`; also the
FABRICPROBE_REFERENCES environment variable), python (the interpreter that has fabricprobe; the one
running ReFrame by default), launcher_options (e.g. --oversubscribe).
"""

from __future__ import annotations

import json
import os
import sys

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import performance_function, run_before, sanity_function, variable  # noqa: F401

RESULTS, EXPORT = "sweep.h5", "sweep.json"


@sn.deferrable
def _points(path: str) -> list:
    with open(path) as f:
        return json.load(f)["runs"][-1]["points"]


@sn.deferrable
def _all_validated(path: str) -> bool:
    points = [p for p in _points(path).evaluate() if p["collective"] != "empty"]
    bad = [f"{p['collective']} {p['bytes']} B: {p['status']} {p['note']}" for p in points if p["status"] != "ok"]
    return sn.assert_true(points and not bad, msg=f"not validated: {'; '.join(bad[:5]) or 'no point measured'}")


@sn.deferrable
def _median_us(path: str, name: str) -> float:
    from fabricprobe.report.reframe import measured

    return measured(_points(path).evaluate())[name]["median_s"] * 1e6


@rfm.simple_test
class fabricprobe_sweep(rfm.RunOnlyRegressionTest):
    descr = "fabricprobe sweep: every point validated, medians against a good run's references"
    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    num_tasks = 2
    collectives = variable(str, value="allreduce,bcast,latency,bw")
    sizes = variable(str, value="8,64K,1M")
    options = variable(str, value="")
    references_file = variable(str, value=os.environ.get("FABRICPROBE_REFERENCES", ""))
    python = variable(str, value=sys.executable)
    launcher_options = variable(str, value="")
    tags = {"fabricprobe", "network"}
    keep_files = [RESULTS, EXPORT]  # the results stay in ReFrame's output folder, as a site keeps them

    @run_before("run")
    def the_sweep(self):
        self.executable = self.python
        self.executable_opts = ["-m", "fabricprobe", "sweep", "-o", RESULTS, "--collectives", self.collectives]
        self.executable_opts += ["--sizes", self.sizes, "--progress", "none", "--quiet", *self.options.split()]
        self.job.launcher.options = self.launcher_options.split()
        self.postrun_cmds = [f"{self.python} -m fabricprobe report {RESULTS} --format json -o {EXPORT}"]

    @sanity_function
    def validated(self):
        return _all_validated(os.path.join(self.stagedir, EXPORT))

    @run_before("performance")
    def the_medians_and_their_references(self):
        from fabricprobe.report.reframe import measured

        path = os.path.join(self.stagedir, EXPORT)
        names = sorted(measured(_points(path).evaluate()))
        self.perf_variables = {n: sn.make_performance_function(_median_us(path, n), "us") for n in names}
        if self.references_file:
            with open(self.references_file) as f:
                refs = json.load(f)["references"]
            self.reference = {"*": {n: tuple(r) for n, r in refs.items() if n in self.perf_variables}}
