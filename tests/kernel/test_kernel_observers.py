"""The lifecycle hooks go through pluggy: wrappers run, ordering holds, and a broken
observer (plain or wrapper, before or after its yield) breaks neither the run nor the
other observers."""

from __future__ import annotations

import logging

import pluggy
import pytest
from onedoor import hookspecs
from onedoor.events import RunFailed, RunFinished
from onedoor.hookspecs import hookimpl
from onedoor.testing import collect, scripted_kernel


def manager(*plugins: object) -> pluggy.PluginManager:
    pm = pluggy.PluginManager("onedoor")
    pm.add_hookspecs(hookspecs)
    for plugin in plugins:
        pm.register(plugin)
    return pm


class Observer:
    def __init__(self, seen: list, name: str = "observer") -> None:
        self.seen = seen
        self.name = name

    @hookimpl
    def onedoor_run_started(self, run):
        self.seen.append((self.name, "started", run.run_id))

    @hookimpl
    def onedoor_run_finished(self, run, outcome):
        self.seen.append((self.name, "finished", type(outcome).__name__))


class Wrapper:
    def __init__(self, seen: list) -> None:
        self.seen = seen

    @hookimpl(wrapper=True)
    def onedoor_run_finished(self, run, outcome):
        self.seen.append(("wrapper", "before", type(outcome).__name__))
        result = yield
        self.seen.append(("wrapper", "after", len(result)))
        return result


class OldStyleWrapper:
    def __init__(self, seen: list) -> None:
        self.seen = seen

    @hookimpl(hookwrapper=True)
    def onedoor_run_started(self, run):
        self.seen.append(("old-wrapper", "before", run.run_id))
        outcome = yield
        outcome.get_result()
        self.seen.append(("old-wrapper", "after", run.run_id))


class BrokenPlain:
    @hookimpl(tryfirst=True)
    def onedoor_run_started(self, run):
        raise RuntimeError("observer bug at start")

    @hookimpl(trylast=True)
    def onedoor_run_finished(self, run, outcome):
        raise RuntimeError("observer bug at the end")


class BrokenBeforeYield:
    @hookimpl(wrapper=True)
    def onedoor_run_finished(self, run, outcome):
        raise RuntimeError("wrapper bug before its yield")
        yield  # pragma: no cover


class BrokenAfterYield:
    @hookimpl(wrapper=True)
    def onedoor_run_finished(self, run, outcome):
        yield
        raise RuntimeError("wrapper bug after its yield")


async def test_a_wrapper_runs_around_the_observers():
    seen: list = []
    kernel = scripted_kernel()
    kernel.hooks = manager(Observer(seen), Wrapper(seen), OldStyleWrapper(seen)).hook
    events = await collect(kernel, "hello", door="test")
    run_id = events[0].run_id
    assert seen == [
        ("old-wrapper", "before", run_id),
        ("observer", "started", run_id),
        ("old-wrapper", "after", run_id),
        ("wrapper", "before", "RunFinished"),
        ("observer", "finished", "RunFinished"),
        ("wrapper", "after", 0),
    ]


@pytest.mark.parametrize("broken", [BrokenPlain, BrokenBeforeYield, BrokenAfterYield])
async def test_a_broken_observer_breaks_neither_the_run_nor_the_others(broken, caplog):
    caplog.set_level(logging.ERROR, logger="onedoor.kernel")
    seen: list = []
    kernel = scripted_kernel()
    # registered between two good observers and a wrapper, so it has someone on each side
    kernel.hooks = manager(Observer(seen, "first"), broken(), Observer(seen, "second"), Wrapper(seen)).hook
    ok = await collect(kernel, "fine", door="test")
    failed = await collect(kernel, "/fail now", door="test")
    assert isinstance(ok[-1], RunFinished) and ok[-1].stop_reason == "end_turn"
    assert isinstance(failed[-1], RunFailed)
    for outcome in ("RunFinished", "RunFailed"):
        for name in ("first", "second"):
            assert (name, "finished", outcome) in seen, f"{name} saw the {outcome}"
        assert ("wrapper", "before", outcome) in seen
    assert [name for name, step, _ in seen if step == "started"].count("first") == 2
    failures = [r for r in caplog.records if r.name == "onedoor.kernel" and "failed" in r.getMessage()]
    assert failures and all(r.exc_info for r in failures), "each failure is logged with its traceback"
    assert kernel.active_runs == 0


async def test_observers_registered_after_the_first_run_are_fenced_in_too():
    seen: list = []
    pm = manager(Observer(seen, "first"))
    kernel = scripted_kernel()
    kernel.hooks = pm.hook
    await collect(kernel, "one")
    pm.register(BrokenPlain())
    pm.register(Observer(seen, "late"))
    events = await collect(kernel, "two")
    assert isinstance(events[-1], RunFinished)
    assert ("late", "finished", "RunFinished") in seen and seen.count(("first", "finished", "RunFinished")) == 2
