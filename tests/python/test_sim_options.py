"""simulate's options and a policy's parameters are separate namespaces: parameters go in
``params=`` (or the spec string), and a keyword that is neither an option nor a parameter of the
policy is an error that suggests the nearest of both, so a misspelt option suggests the option."""
from __future__ import annotations

import pytest

import gpufleet.traces as T
from gpufleet.errors import InvalidInputError
from gpufleet.sim import SIM_OPTIONS, compare, simulate, simulate_summary


@pytest.fixture(scope="module")
def jobs():
    return T.synthetic_jobs(30, seed=5, arrival_rate=1 / 30)


@pytest.mark.parametrize("run", [simulate, simulate_summary])
def test_a_misspelt_option_suggests_the_option(jobs, run):
    with pytest.raises(InvalidInputError, match=r"unknown option 'restore_dealy'; did you mean 'restore_delay'\?"):
        run(jobs, 8, "las", restore_dealy=30)
    with pytest.raises(ValueError, match=r"unknown option 'sceduling_interval'; did you mean 'scheduling_interval'"):
        run(jobs, 8, "dlas-gpu", sceduling_interval=60)


def test_a_misspelt_policy_parameter_suggests_the_parameter(jobs):
    with pytest.raises(ValueError, match=r"unknown option 'servce'; did you mean 'service'\?"):
        simulate(jobs, 8, "las", servce="time")
    # nothing near: the message lists every option and the policy's parameters
    with pytest.raises(ValueError, match=r"unknown option 'zzz'; known: seed, params, .*restore_delay.*, service$"):
        simulate(jobs, 8, "las", zzz=1)


def test_params_are_the_policys_namespace(jobs):
    by_params = simulate(jobs, 8, "las", params={"service": "time"})
    by_keyword = simulate(jobs, 8, "las", service="time")   # still accepted
    assert by_params.policy == by_keyword.policy == 'las(service="time")'
    assert by_params.summary == by_keyword.summary
    assert simulate_summary(jobs, 8, "las", params={"service": "time"}) == by_params.summary
    # an option is not a policy parameter: in params it is the policy's unknown parameter
    with pytest.raises(ValueError, match='las: unknown parameter "restore_delay"'):
        simulate(jobs, 8, "las", params={"restore_delay": 30})
    with pytest.raises(ValueError, match=r"\['service'\] given both in params and as keywords"):
        simulate(jobs, 8, "las", params={"service": "time"}, service="gpu_time")
    with pytest.raises(TypeError, match="params must be a mapping"):
        simulate(jobs, 8, "las", params="service=time")


def test_options_still_take_effect_and_compare_checks_them_too(jobs):
    assert "restore_delay" in SIM_OPTIONS and "racks" in SIM_OPTIONS
    slow = simulate(jobs, 8, "las", restore_delay=600)
    fast = simulate(jobs, 8, "las")
    assert slow.summary["preemptions"] > 0 and slow.summary["avg_jct"] > fast.summary["avg_jct"]
    with pytest.raises(ValueError, match="did you mean 'restore_delay'"):
        compare(jobs, 8, ["las", "fifo"], restore_dealy=30)
