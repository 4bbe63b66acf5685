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
    assert listed[("backend", "scripted")]["distribution"] == "onedoor-kernel"
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
        {"onedoor.doors": {"terminal2": "onedoor.builtins.terminal_door:door"}}, {},
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


# ---------------------------------------------------------------------------------------
# Plugins that end the process at import, misspelled hooks, missing requirements


EXITING_MODULES = {
    "od_exits.py": "import sys\nsys.exit(3)\n",
    "od_base.py": "class Boom(BaseException):\n    pass\n\nraise Boom('a BaseException at import')\n",
    "od_good.py": BROKEN_MODULES["od_good.py"],
}
EXITING_EPS = {
    "onedoor.backends": {"exits": "od_exits:Anything", "good": "od_good:Good"},
    "onedoor.doors": {"exitdoor": "od_exits:Door", "basedoor": "od_base:Door"},
    "onedoor.transports": {"basetransport": "od_base:Transport"},
    "onedoor.hooks": {"exithook": "od_exits", "basehook": "od_base"},
}


@pytest.fixture
def exiting_env(tmp_path):
    return make_dist(tmp_path / "exiting", "onedoor-test-exiting", EXITING_EPS, EXITING_MODULES)


def test_plugins_that_exit_at_import_are_reported_and_the_rest_work(exiting_env):
    listing = run_cli("plugins", extra_path=exiting_env)
    assert listing.returncode == 0 and "exithook" in listing.stdout, listing.stderr
    checked = run_cli("plugins", "--check", "--json", extra_path=exiting_env)
    assert checked.returncode == 0, checked.stderr
    listed = {(p["kind"], p["name"]): p for p in json.loads(checked.stdout)}
    for key in [("backend", "exits"), ("door", "exitdoor"), ("hook", "exithook")]:
        assert "failed to load: SystemExit: 3" in listed[key]["error"], listed[key]
    for key in [("door", "basedoor"), ("transport", "basetransport"), ("hook", "basehook")]:
        assert "failed to load: Boom: a BaseException at import" in listed[key]["error"], listed[key]
    assert listed[("backend", "good")]["error"] is None
    options = run_cli("plugins", "--options", extra_path=exiting_env)
    assert options.returncode == 0 and "BROKEN" in options.stdout and "-o delay=" in options.stdout, options.stderr


def test_commands_that_do_not_use_a_plugin_that_exits_still_work(exiting_env):
    result = run_cli("run", "-b", "good", "hello", extra_path=exiting_env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "good:hello"
    assert "exithook" in result.stderr and "basehook" in result.stderr and "Traceback" not in result.stderr
    chosen = run_cli("run", "-b", "exits", "hello", extra_path=exiting_env)
    assert chosen.returncode == 2 and "backend 'exits' failed to load: SystemExit: 3" in chosen.stderr
    door = run_cli("serve", "--door", "basedoor", "--transport", "stdio", extra_path=exiting_env)
    assert door.returncode == 2 and "door 'basedoor' failed to load: Boom" in door.stderr


def test_the_help_lists_the_commands_despite_a_hook_that_exits(exiting_env):
    result = run_cli("--help", extra_path=exiting_env)
    assert result.returncode == 0 and "serve" in result.stdout, result.stderr
    assert "hook 'exithook' failed to load: SystemExit: 3" in result.stderr


def test_ctrl_c_while_a_plugin_loads_interrupts_the_command(tmp_path):
    """KeyboardInterrupt is the one exception a plugin's import passes on: the user asked."""
    site = make_dist(tmp_path / "ctrlc", "onedoor-test-ctrlc", {"onedoor.hooks": {"ctrlc": "od_ctrlc"}},
                     {"od_ctrlc.py": "raise KeyboardInterrupt\n"})
    result = run_cli("run", "hi", extra_path=site)
    assert result.returncode == 130 and result.stderr.strip() == "onedoor: interrupted", result.stderr


def test_strict_mode_makes_a_hook_that_exits_an_error(exiting_env):
    result = run_cli("run", "-b", "good", "hi", env={"ONEDOOR_STRICT_PLUGINS": "1"}, extra_path=exiting_env)
    assert result.returncode == 2 and "failed to load: " in result.stderr and "Traceback" not in result.stderr


HOOK_MODULES = {
    "od_typo.py": """
        from onedoor.hookspecs import hookimpl

        @hookimpl
        def onedoor_run_startd(run):
            pass

        @hookimpl
        def onedoor_run_finished(run, outcome):
            print("typo plugin saw the run finish", flush=True)
    """,
    "od_badargs.py": """
        from onedoor.hookspecs import hookimpl

        @hookimpl
        def onedoor_run_started(runn):
            pass
    """,
    "od_badcli.py": """
        from onedoor.hookspecs import hookimpl

        @hookimpl
        def onedoor_cli(app):
            raise RuntimeError("cannot add my command")
    """,
}
HOOK_EPS = {"onedoor.hooks": {"typo": "od_typo", "badargs": "od_badargs", "badcli": "od_badcli"}}


@pytest.fixture
def hooks_env(tmp_path):
    return make_dist(tmp_path / "hooks", "onedoor-test-hooks", HOOK_EPS, HOOK_MODULES)


def test_a_misspelled_hook_is_a_warning_and_the_rest_of_the_plugin_works(hooks_env):
    result = run_cli("run", "hi", extra_path=hooks_env)
    assert result.returncode == 0, result.stderr
    assert "hook 'typo' implements onedoor_run_startd, which is not a onedoor hook" in result.stderr
    assert "did you mean onedoor_run_started?" in result.stderr
    assert "hook 'badargs' has a bad hook implementation" in result.stderr and "runn" in result.stderr
    assert "typo plugin saw the run finish" in result.stdout
    assert "Traceback" not in result.stderr


def test_plugins_check_reports_misspelled_hooks(hooks_env):
    result = run_cli("plugins", "--check", "--json", extra_path=hooks_env)
    assert result.returncode == 0, result.stderr
    listed = {(p["kind"], p["name"]): p for p in json.loads(result.stdout)}
    assert listed[("hook", "typo")]["error"] is None
    assert any("onedoor_run_startd" in w and "onedoor_run_started?" in w for w in listed[("hook", "typo")]["warnings"])
    assert "bad hook implementation" in listed[("hook", "badargs")]["error"]
    text = run_cli("plugins", "--check", extra_path=hooks_env)
    assert "warning: implements onedoor_run_startd" in text.stdout
    strict = run_cli("plugins", "--check", env={"ONEDOOR_STRICT_PLUGINS": "1"}, extra_path=hooks_env)
    assert strict.returncode == 1


def test_strict_mode_refuses_a_misspelled_hook(hooks_env):
    result = run_cli("run", "hi", env={"ONEDOOR_STRICT_PLUGINS": "1", "ONEDOOR_BLOCK_PLUGINS": "badargs"},
                     extra_path=hooks_env)
    assert result.returncode == 2 and "onedoor_run_startd" in result.stderr and "Traceback" not in result.stderr


def test_a_plugin_whose_commands_fail_leaves_the_others(hooks_env):
    result = run_cli("--help", extra_path=hooks_env)
    assert result.returncode == 0 and "serve" in result.stdout
    assert "badcli" in result.stderr and "cannot add my command" in result.stderr and "Traceback" not in result.stderr


def test_plugins_check_reports_requirements_that_are_not_installed(tmp_path):
    site = make_dist(tmp_path / "needs", "onedoor-test-needs", {"onedoor.backends": {"needy": "od_needy:Needy"}},
                     {"od_needy.py": BROKEN_MODULES["od_good.py"].replace("class Good", "class Needy")})
    metadata = site / "onedoor_test_needs-0.0.1.dist-info" / "METADATA"
    metadata.write_text(metadata.read_text() + "".join(f"Requires-Dist: {r}\n" for r in [
        "onedoor-test-surely-not-installed>=1.0",
        "pluggy>=999",
        "pluggy>=1",
        'onedoor-test-only-with-an-extra; extra == "more"',
        'onedoor-test-only-on-old-python; python_version < "3.0"',
    ]))
    result = run_cli("plugins", "--check", "--json", extra_path=site)
    assert result.returncode == 0, result.stderr
    error = {(p["kind"], p["name"]): p for p in json.loads(result.stdout)}[("backend", "needy")]["error"]
    assert "onedoor-test-surely-not-installed>=1.0 (not installed)" in error
    assert "pluggy>=999 (" in error and "is installed)" in error
    assert "pluggy>=1 " not in error and "only-with-an-extra" not in error and "old-python" not in error
    still_runs = run_cli("run", "-b", "needy", "hi", extra_path=site)
    assert still_runs.returncode == 0 and "good:hi" in still_runs.stdout


def test_plugins_options_with_options_that_are_not_a_dataclass(tmp_path):
    site = make_dist(tmp_path / "opts", "onedoor-test-opts", {"onedoor.backends": {"oddopts": "od_opts:factory"}},
                     {"od_opts.py": "def factory(options=None):\n    return None\n\nfactory.Options = dict\n"})
    result = run_cli("plugins", "--options", extra_path=site)
    assert result.returncode == 0, result.stderr
    assert "oddopts" in result.stdout and "its Options cannot be listed" in result.stdout


# ---------------------------------------------------------------------------------------
# Default doors: a broken one is skipped with a warning (unless strict)

DEFAULT_DOORS_LAUNCHER = """
import sys
from onedoor import plugins
from onedoor.cli import main


class FakeHttp:
    shape = "asgi"
    max_doors = None
    Options = None

    def serve(self, doors, ctx):
        print("SERVING " + ",".join(sorted(d.name for d in doors)))
        return 0


class Web:
    shapes = frozenset({"asgi"})

    def asgi_mount(self, ctx):
        raise AssertionError("not mounted by the fake transport")


class BrokenWeb(Web):
    def __init__(self):
        raise SystemExit("cannot start")


plugins.add_in_process_plugin("transport", "fakehttp", FakeHttp())
plugins.add_in_process_plugin("door", "agui", Web)
plugins.add_in_process_plugin("door", "rest", BrokenWeb)
plugins.add_in_process_plugin("door", "mcp", Web)
plugins.add_in_process_plugin("door", "a2a", Web)
sys.argv = ["onedoor", "serve", "--transport", "fakehttp"] + sys.argv[1:]
main()
"""


def _serve_defaults(env=None, *args):
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", DEFAULT_DOORS_LAUNCHER, *args], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **(env or {})})


def test_a_broken_default_door_is_skipped_with_a_warning():
    result = _serve_defaults()
    assert result.returncode == 0, result.stderr
    assert "SERVING a2a,agui,mcp" in result.stdout
    assert "warning: skipping the default door 'rest'" in result.stderr and "cannot start" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_broken_default_door_fails_in_strict_mode_and_a_named_one_always():
    strict = _serve_defaults({"ONEDOOR_STRICT_PLUGINS": "1"})
    assert strict.returncode == 2 and "door 'rest' could not be created: SystemExit" in strict.stderr
    named = _serve_defaults(None, "--door", "rest")
    assert named.returncode == 2 and "door 'rest' could not be created" in named.stderr


# ---------------------------------------------------------------------------------------
# The in-process seam for tests


def test_in_process_plugins_are_listed_loaded_and_removed():
    from onedoor import plugins
    from onedoor.hookspecs import hookimpl

    seen = []

    class Observer:
        @hookimpl
        def onedoor_run_started(self, run):
            seen.append(run)

    class Door:
        shapes = frozenset({"channel"})

        async def serve_channel(self, channel, ctx):
            return None

    def factory():
        raise AssertionError("not called here")

    observer = Observer()
    plugins.add_in_process_plugin("backend", "test-inproc", factory)
    plugins.add_in_process_plugin("door", "test-inproc", Door)
    plugins.add_in_process_plugin("hook", "test-inproc", observer)
    try:
        assert plugins.load("backend", "test-inproc") is factory
        door = plugins.load("door", "test-inproc")
        assert isinstance(door, Door) and door.name == "test-inproc"
        assert "test-inproc" in plugins.names("backend") and "test-inproc" in plugins.names("door")
        listed = {(i.kind, i.name): i for i in plugins.discover()}
        assert listed[("hook", "test-inproc")].distribution == plugins.IN_PROCESS
        assert plugins.plugin_manager().is_registered(observer)
    finally:
        for kind in ("backend", "door", "hook"):
            plugins.remove_in_process_plugin(kind, "test-inproc")
    assert "test-inproc" not in plugins.names("backend")
    with pytest.raises(plugins.PluginError, match="no backend named 'test-inproc'"):
        plugins.load("backend", "test-inproc")


def test_an_in_process_plugin_of_the_wrong_kind_is_refused():
    from onedoor import plugins

    plugins.add_in_process_plugin("door", "test-notadoor", 42)
    try:
        with pytest.raises(plugins.PluginError, match="is not a door"):
            plugins.load("door", "test-notadoor")
    finally:
        plugins.remove_in_process_plugin("door", "test-notadoor")
