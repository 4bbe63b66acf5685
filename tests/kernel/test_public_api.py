"""The public API: every name plugins, examples and the plugin author's guide imported
before the kernel moved into rooms still imports from the same path (moved modules warn),
and the face (``import onedoor``) has every name a plugin author needs, lazily."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

# What plugins, examples, benches and docs/plugin-authors.md imported from the kernel at the
# last release before the restructuring (module -> names; "" = the module itself).
BEFORE: dict[str, list[str]] = {
    "onedoor": ["hookspecs", "jsonrpc", "plugins"],
    "onedoor.askers": ["Asker", "LiveAsker", "PolicyAsker", "SuspendAsker"],
    "onedoor.builtins.scripted": ["ScriptedOptions", "scripted"],
    "onedoor.builtins.stdio": ["StdioTransport", "protect_stdout"],
    "onedoor.cli": ["main", "read_stdin_message", "RUN_FLAGS", "RUN_VALUE_OPTIONS", "RunRequest", "parse_run_args"],
    "onedoor.cli_app": ["app", "invoke", "run_command"],
    "onedoor.composition": [
        "AsgiMount", "Channel", "ChannelClosed", "ChannelDoor", "Endpoint", "LOCAL_PRINCIPAL", "MessageTooLarge",
        "PRINCIPAL_KEY", "ServeContext", "check_door", "check_transport", "offered_shapes", "shape_for",
        "validate_combination",
    ],
    "onedoor.errors": ["CompositionError", "ContractViolation", "OnedoorError", "OptionsError", "PluginError", "RunRefused"],
    "onedoor.events": [
        "EVENT_TYPES", "Event", "QuestionAnswered", "QuestionAsked", "ReasoningDelta", "RunFailed", "RunFinished",
        "RunStarted", "STOP_CANCELLED", "STOP_END_TURN", "STOP_MAX_TURNS", "STOP_PENDING_TOOLS", "STOP_SUSPENDED",
        "TYPE_NAMES", "TextDelta", "ToolFinished", "ToolStarted", "event_from_dict", "event_from_json", "event_to_dict",
        "event_to_json",
    ],
    "onedoor.hookspecs": ["hookimpl"],
    "onedoor.journal": ["Cursor", "CursorExpired", "RunJournal", "parse_cursor"],
    "onedoor.jsonrpc": ["INVALID_PARAMS", "INVALID_REQUEST", "METHOD_NOT_FOUND", "PARSE_ERROR", "dumps", "parse_message"],
    "onedoor.kernel": ["Backend", "INTERRUPTED_REPLY", "Kernel", "Limits", "RunInfo", "RunStream"],
    "onedoor.messages": ["Message", "ToolCall"],
    "onedoor.options": ["describe", "load_config_file", "parse_options", "redacted", "split_cli_options"],
    "onedoor.plugins": ["IN_PROCESS", "KNOWN_DISTRIBUTIONS", "PluginError", "add_in_process_plugin", "discover",
                        "load", "names", "plugin_manager", "remove_in_process_plugin"],
    "onedoor.port": ["CancelToken", "Message", "RunContext", "ToolCall", "ToolSpec", "collect_text", "normalize_history"],
    "onedoor.questions": [
        "APPROVAL", "Answer", "Question", "QuestionError", "check_answer", "clip", "closing_answer", "policy_answer",
    ],
    "onedoor.requirements_check": ["Unreadable", "evaluate_marker", "unmet_requirements", "version_matches"],
    "onedoor.serve": ["Settings", "kernel_for", "serve"],
    "onedoor.shared_journal": ["JournalPage", "STOPPED"],
    "onedoor.sqlite_store": ["SQLiteThreadStore"],
    "onedoor.stores": ["data_dir", "make_store"],
    "onedoor.testing": [
        "MemoryChannel", "channel_pair", "check_backend", "check_events", "collect", "kernel_for_agent",
        "scripted_kernel", "serve_in_memory",
    ],
    "onedoor.testing.hostile": ["Case", "all_raw", "mutations", "traceback_in"],
    "onedoor.testing.store_conformance": ["CHECKS", "SHARED_CHECKS"],
    "onedoor.threads": [
        "StoreUnavailable", "Thread", "ThreadError", "ThreadStore", "ThreadSummary", "append_turn", "check_append",
        "check_thread_id", "new_thread_id", "title_from", "turn_messages",
    ],
    "onedoor.wire": [
        "WireError", "decode_json", "decode_json_object", "encode_json", "encode_json_text", "encode_text", "json_type",
        "nesting_depth",
    ],
}
MOVED = {  # deprecated path -> where the module lives now
    "onedoor.askers": "onedoor.questions.askers",
    "onedoor.jsonrpc": "onedoor.wire.jsonrpc",
    "onedoor.options": "onedoor.plugins.options",
    "onedoor.serve": "onedoor.plugins.serve",
    "onedoor.sqlite_store": "onedoor.threads.sqlite",
    "onedoor.shared_journal": "onedoor.journal.shared",
    "onedoor.requirements_check": "onedoor.plugins.requirements",
    "onedoor.cli_app": "onedoor.cli.app",
    "onedoor.stores": None,  # its names come from two modules now
}


@pytest.mark.parametrize("module", sorted(BEFORE))
def test_every_name_imported_before_still_imports(module):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        loaded = importlib.import_module(module)
    missing = [name for name in BEFORE[module] if not hasattr(loaded, name)
               and importlib.util.find_spec(f"{module}.{name}") is None]
    assert missing == [], f"{module} lost {missing}"


@pytest.mark.parametrize("old", sorted(MOVED))
def test_a_moved_module_warns_and_is_the_same_module(old):
    code = (
        "import warnings, importlib\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always', DeprecationWarning)\n"
        f"    importlib.import_module({old!r})\n"
        # ours among them (a dependency may warn of its own deprecations too, e.g. an older typer on click)
        "ours = [str(w.message) for w in caught if 'moved to' in str(w.message)]\n"
        "print('WARNED ' + ours[0] if ours else 'SILENT')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert out.startswith("WARNED") and "moved to" in out, out
    new = MOVED[old]
    if new is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            assert importlib.import_module(old) is importlib.import_module(new), "one module, two names"


def test_the_face_exports_every_name_it_lists():
    import onedoor

    assert sorted(onedoor.__all__) == sorted(["__version__", *onedoor._EXPORTS])
    for name in onedoor._EXPORTS:
        value = getattr(onedoor, name)
        home = importlib.import_module(onedoor._EXPORTS[name])
        assert value is getattr(home, name), name
    with pytest.raises(AttributeError):
        onedoor.NoSuchName  # noqa: B018


def test_the_face_has_what_the_plugin_guide_and_a_backend_need():
    from onedoor import (  # noqa: F401 - importing is the test
        AsgiMount,
        Kernel,
        Question,
        RunContext,
        RunFinished,
        RunStarted,
        ServeContext,
        SuspendAsker,
        TextDelta,
        ThreadDesk,
        ToolSpec,
        hookimpl,
    )


def test_importing_the_face_imports_nothing_else():
    code = (
        "import sys\nimport onedoor\n"
        "print(sorted(m for m in sys.modules if m.startswith('onedoor')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert out.strip() == "['onedoor', 'onedoor._foreign', 'onedoor._lazy']", out
