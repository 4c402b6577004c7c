"""One formula for a run's time: the task stops the testbed at its own deadline (which
includes the hosts testbed's provisioning allowance) before Celery's soft and hard limits."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ccbench.jobs import FINISH_ALLOWANCE_S, TESTBED_ALLOWANCE_S, run_budget, spec_budget
from ccbench.settings import Settings, get_settings


def test_celery_limits_come_after_the_tasks_own_deadline() -> None:
    settings = get_settings().model_copy(update={"run_time_margin_s": 60.0, "pack_wait_s": 300.0})
    local = run_budget(20.0, "mininet", settings)
    hosts = run_budget(20.0, "hosts", settings)
    assert local.deadline_s == 20.0 * 1.5 + 60.0
    # Provisioning a fresh host comes first on the hosts testbed: Celery must not stop it.
    assert hosts.deadline_s == local.deadline_s + TESTBED_ALLOWANCE_S["hosts"]
    for budget in (local, hosts):
        # A run may wait for room on its host (workers/packing.py) before its testbed starts.
        assert budget.soft_limit_s == budget.deadline_s + FINISH_ALLOWANCE_S + 300.0
        assert budget.deadline_s < budget.soft_limit_s < budget.hard_limit_s
    stored = {"duration": 20.0, "testbed": {"kind": "hosts"}}
    assert spec_budget(stored, settings) == hosts


def test_a_packing_wait_as_long_as_the_dispatch_lease_is_refused() -> None:
    with pytest.raises(ValidationError, match="pack_wait_s .* must be below dispatch_lease_s"):
        Settings(pack_wait_s=600.0, dispatch_lease_s=600.0)
    assert Settings(pack_wait_s=599.0, dispatch_lease_s=600.0).pack_wait_s == 599.0
