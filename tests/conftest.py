"""Shared by every test folder: in CI, a test skipped for a missing tool is a failure.

Tests that need an outside tool (Chromium, Node and its npm packages, strace, openssl)
skip with the reason when it is missing, so the suite runs anywhere. CI installs them
all and sets ONEDOOR_REQUIRE_TOOLS=1: then such a skip fails the run, so the matrix
really runs those tests somewhere.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

import pytest

# onedoor_test_support (shared helpers) lives beside this file.
sys.path.insert(0, str(Path(__file__).parent))

# A runner started in the background (nohup, `cmd &` in a script) ignores SIGINT, and an
# ignored signal is inherited across exec: the servers these tests start would then ignore
# the Ctrl-C the tests send them. A handler (unlike SIG_IGN) resets to the default in a
# child, so every child starts as it would from a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Servers the tests start keep threads (and ACP sessions) in onedoor's data directory:
# one throwaway directory per test process, never the user's own.
if "ONEDOOR_DATA_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    os.environ["ONEDOOR_DATA_DIR"] = tempfile.mkdtemp(prefix="onedoor-test-data-")
    atexit.register(shutil.rmtree, os.environ["ONEDOOR_DATA_DIR"], True)

TOOL_SKIP = re.compile(r"chromium|\bnode\b|node_modules|npm|strace|openssl|initdb|postgres|nginx|haproxy", re.IGNORECASE)
_tool_skips: list[str] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2])
        if TOOL_SKIP.search(reason):
            _tool_skips.append(f"{item.nodeid}: {reason}")


def pytest_sessionfinish(session, exitstatus):
    if _tool_skips and os.environ.get("ONEDOOR_REQUIRE_TOOLS") == "1":
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    if _tool_skips and os.environ.get("ONEDOOR_REQUIRE_TOOLS") == "1":
        terminalreporter.write_line("ONEDOOR_REQUIRE_TOOLS=1 and these tests skipped for a missing tool:", red=True)
        for line in _tool_skips:
            terminalreporter.write_line(f"  {line}", red=True)
