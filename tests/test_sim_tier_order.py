"""How ``scripts/test-sim`` lays the sim tier out over its workers (``tests/sim/conftest.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tests.sim import conftest


@dataclass
class FakeItem:
    nodeid: str
    fixturenames: tuple[str, ...]
    markers: list[str] = field(default_factory=list)

    def add_marker(self, marker: pytest.MarkDecorator) -> None:
        self.markers.append(marker.name)


def test_the_tests_that_need_the_engine_are_marked_and_run_last_and_the_rest_keep_their_order() -> None:
    items = [
        FakeItem("tests/sim/test_autoscalers.py::a", ("session_cluster",)),
        FakeItem("tests/sim/test_engine.py::deploy", ("session_cluster", "engine_bin")),
        FakeItem("tests/sim/test_engine.py::destroy", ("session_cluster", "engine_bin")),
        FakeItem("tests/sim/test_stacks.py::b", ("session_cluster",)),
        FakeItem("tests/sim/test_engine_warm.py::c", ("engine_bin",)),
        FakeItem("tests/sim/test_warm.py::d", ("sim_build",)),
    ]
    conftest.pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    assert [i.nodeid.rsplit("::", 1)[1] for i in items] == ["a", "b", "d", "deploy", "destroy", "c"]
    assert [i.nodeid.rsplit("::", 1)[1] for i in items if i.markers == ["engine"]] == ["deploy", "destroy", "c"]
    assert all(i.markers == [] for i in items[:3])


@pytest.mark.parametrize(
    ("worker", "name"), [(None, "pytest-session"), ("gw0", "pytest-session-gw0"), ("gw1", "pytest-session-gw1")]
)
def test_each_worker_gets_a_control_plane_of_its_own(monkeypatch: pytest.MonkeyPatch, worker: str | None, name: str) -> None:
    if worker is None:
        monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    else:
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    assert conftest.session_cluster_name() == name
