"""Plugin discovery: broken plugins are reported by name and never take the CLI down;
allow/block lists and strict mode; composition errors explain themselves."""

from __future__ import annotations

import json

import pytest
from kernel_test_helpers import make_dist, run_cli

BROKEN_MODULES = {
    "od_raises.py": "raise ImportError('this plugin needs a missing library')\n",
    "od_wrongtype.py": "not_a_door = 42\nnot_a_transport = 'x'\n",
    "od_good.py": """
        from onedoor.events import RunFinished, RunStarted, TextDelta

        class Good:
            def run(self, message, *, history=None):
                yield RunStarted("r")
                yield TextDelta("good:" + message)
                yield RunFinished("r", "good:" + message)
    """,
}
BROKEN_EPS = {
    "onedoor.backends": {
        "raises": "od_raises:Anything",
        "missing": "od_good:NoSuchThing",
        "good": "od_good:Good",
        "notcallable": "od_wrongtype:not_a_door",
    },
    "onedoor.doors": {"wrongdoor": "od_wrongtype:not_a_door"},
    "onedoor.transports": {"wrongtransport": "od_wrongtype:not_a_transport"},
    "onedoor.hooks": {"brokenhook": "od_raises"},
}


@pytest.fixture
def broken_env(tmp_path):
    return make_dist(tmp_path / "site", "onedoor-test-broken", BROKEN_EPS, BROKEN_MODULES)


def test_listing_reads_metadata_only(broken_env):
    result = run_cli("plugins", "--json", extra_path=broken_env)
    assert result.returncode == 0, result.stderr
    listed = {(p["kind"], p["name"]): p for p in json.loads(result.stdout)}
    assert listed[("backend", "raises")]["error"] is None, "listing must not import plugins"
    assert listed[("backend", "scripted")]["distribution"] == "onedoor"
    assert listed[("backend", "good")]["distribution"] == "onedoor-test-broken"
    assert listed[("backend", "good")]["version"] == "0.0.1"


def test_check_reports_each_broken_plugin_and_the_rest_work(broken_env):
    result = run_cli("plugins", "--check", "--json", extra_path=broken_env)
    assert result.returncode == 0, result.stderr
    listed = {(p["kind"], p["name"]): p for p in json.loads(result.stdout)}
    assert "ImportError: this plugin needs a missing library" in listed[("backend", "raises")]["error"]
    assert "NoSuchThing" in listed[("backend", "missing")]["error"]
    assert "not a factory" in listed[("backend", "notcallable")]["error"]
    assert "not a door" in listed[("door", "wrongdoor")]["error"]
    assert "not a transport" in listed[("transport", "wrongtransport")]["error"]
    for ok in [("backend", "good"), ("backend", "scripted"), ("door", "terminal"), ("transport", "stdio")]:
        assert listed[ok]["error"] is None
    text = run_cli("plugins", "--check", extra_path=broken_env)
    assert "BROKEN" in text.stdout and "Traceback" not in text.stdout + text.stderr


def test_strict_mode_fails_on_broken_plugins(broken_env):
    result = run_cli("plugins", "--check", env={"ONEDOOR_STRICT_PLUGINS": "1"}, extra_path=broken_env)
    assert result.returncode == 1
    strict_run = run_cli("run", "hi", env={"ONEDOOR_STRICT_PLUGINS": "1"}, extra_path=broken_env)
    assert strict_run.returncode == 2 and "brokenhook" in strict_run.stderr


def test_a_broken_hook_plugin_only_warns_and_runs_go_on(broken_env):
    result = run_cli("run", "-b", "good", "hello", extra_path=broken_env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "good:hello"
    assert "warning" in result.stderr and "brokenhook" in result.stderr


@pytest.mark.parametrize(
    "backend,needle",
    [("raises", "failed to load: ImportError"), ("missing", "NoSuchThing"), ("nope", "no backend named 'nope'")],
)
def test_choosing_a_broken_backend_is_one_clear_line(broken_env, backend, needle):
    result = run_cli("run", "-b", backend, "hi", extra_path=broken_env)
    assert result.returncode == 2
    assert needle in result.stderr and "Traceback" not in result.stderr
    assert len([line for line in result.stderr.splitlines() if line.startswith("onedoor: error")]) == 1


def test_allow_and_block_lists(broken_env):
    blocked = run_cli("run", "-b", "good", "hi", env={"ONEDOOR_BLOCK_PLUGINS": "good"}, extra_path=broken_env)
    assert blocked.returncode == 2 and "disabled" in blocked.stderr
    allowed = run_cli(
        "plugins", "--check", "--json", env={"ONEDOOR_PLUGINS": "scripted,terminal,stdio"}, extra_path=broken_env
    )
    listed = {(p["kind"], p["name"]): p for p in json.loads(allowed.stdout)}
    assert listed[("backend", "scripted")]["enabled"] and not listed[("backend", "raises")]["enabled"]
    assert listed[("backend", "raises")]["error"] is None, "a disabled plugin is never imported"
    also_kind = run_cli("run", "-b", "good", "hi", env={"ONEDOOR_PLUGINS": "backend:good"}, extra_path=broken_env)
    assert also_kind.returncode == 0 and "good:hi" in also_kind.stdout


def test_serve_explains_impossible_combinations(broken_env):
    result = run_cli("serve", "--door", "terminal", "--transport", "wrongtransport", extra_path=broken_env)
    assert result.returncode == 2 and "not a transport" in result.stderr
    from onedoor.plugins import KNOWN_DISTRIBUTIONS, names

    missing = [n for (k, n) in KNOWN_DISTRIBUTIONS if k == "door" and n not in names("door")]
    name = missing[0] if missing else "no-such-door"
    unknown = run_cli("serve", "--door", name, "--transport", "stdio")
    assert unknown.returncode == 2 and f"no door named {name!r}" in unknown.stderr
    if missing:
        assert f"pip install {KNOWN_DISTRIBUTIONS[('door', name)]}" in unknown.stderr
    two = run_cli("serve", "--door", "terminal", "--door", "terminal2", "--transport", "stdio", extra_path=make_dist(
        broken_env.parent / "two", "onedoor-test-door2",
        {"onedoor.doors": {"terminal2": "onedoor.builtins.chat:door"}}, {},
    ))
    assert two.returncode == 2 and "serves 1 door at a time" in two.stderr


def test_a_door_over_a_transport_of_the_wrong_shape(tmp_path):
    site = make_dist(
        tmp_path / "asgi", "onedoor-test-asgi",
        {"onedoor.doors": {"webonly": "od_webdoor:WebDoor"}},
        {"od_webdoor.py": """
            class WebDoor:
                shapes = frozenset({"asgi"})
                def asgi_mount(self, ctx):
                    raise AssertionError("never mounted in this test")
        """},
    )
    result = run_cli("serve", "--door", "webonly", "--transport", "stdio", extra_path=site)
    assert result.returncode == 2
    assert "door 'webonly' cannot be served over transport 'stdio'" in result.stderr
    assert "no installed transport offers asgi" in result.stderr or "it can use: http" in result.stderr
