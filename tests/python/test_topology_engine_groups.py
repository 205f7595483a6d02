"""The engine places a gang's sub-groups by topology: a YAML job whose task list names a leader
and workers, each with its own `topology`, inside the job's own."""
from __future__ import annotations

import pytest
import yaml

from gpufleet.engine import default_config, engine_from_scenario

RACK = "topo/rack"
BLOCK = "topo/block"
HOST = "kubernetes.io/hostname"

# Two blocks of two racks of two 8-GPU nodes. Block b0 has no rack with two free nodes; in b1,
# b1-r0-n0 has 4 GPUs free and rack b1-r1 is empty.
SCENARIO = """
nodes:
{nodes}
jobs:
  - {{name: p0, replicas: 1, requests: {{nvidia.com/gpu: 4}}, node_selector: {{{host}: b0-r0-n0}}}}
  - {{name: p1, replicas: 1, requests: {{nvidia.com/gpu: 4}}, node_selector: {{{host}: b0-r1-n0}}}}
  - {{name: p2, replicas: 1, requests: {{nvidia.com/gpu: 4}}, node_selector: {{{host}: b1-r0-n0}}}}
"""

TRAIN = """
name: train
creation: 10
topology: {required: block}
tasks:
  - name: leader
    replicas: 2
    requests: {nvidia.com/gpu: 1}
    topology: {required: host}
  - name: worker
    replicas: 2
    requests: {nvidia.com/gpu: 8}
    topology:
      annotations: {kueue.x-k8s.io/podset-required-topology: rack}
"""


def _engine():
    nodes = "\n".join(
        f"  - {{name: b{b}-r{r}-n{n}, cpu: '64', memory: 512Gi, "
        f"gpus: {{count: 8, model: H100, memory: 80Gi}}, "
        f"labels: {{{BLOCK}: b{b}, {RACK}: b{b}-r{r}, {HOST}: b{b}-r{r}-n{n}}}}}"
        for b in range(2) for r in range(2) for n in range(2))
    config = default_config()
    config["tiers"][-1]["plugins"].append(
        {"name": "gang-topology", "arguments": {"levels": f"block={BLOCK}, rack={RACK}, host={HOST}"}})
    eng = engine_from_scenario(yaml.safe_load(SCENARIO.format(nodes=nodes, host=HOST)), config=config)
    eng.run_cycle()
    return eng


def test_leader_and_workers_each_keep_their_level_inside_the_jobs_block():
    eng = _engine()
    eng.submit(yaml.safe_load(TRAIN))
    assert eng.job_tasks("train") == ["leader-0", "leader-1", "worker-0", "worker-1"]
    r = eng.run_cycle()
    binds = r.binds[r.binds.job == "train"]
    where = dict(zip(binds.task, binds.node))
    assert where == {"leader-0": "b1-r0-n0", "leader-1": "b1-r0-n0",
                     "worker-0": "b1-r1-n0", "worker-1": "b1-r1-n1"}, r.pending.get("train")


def test_a_slice_size_that_does_not_divide_a_tasks_replicas_is_refused_naming_job_and_task():
    eng = _engine()
    before = eng.jobs()
    job = yaml.safe_load(TRAIN)
    job["tasks"][1]["topology"] = {"slice_level": "host", "slice_size": 3}
    with pytest.raises(ValueError, match=r"^job train task worker: topology.slice_size: 3 does not "
                                         r"divide the task's 2 replicas$"):
        eng.submit(job)
    assert eng.jobs().equals(before)
