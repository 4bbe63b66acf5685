"""An onedoor.toml with values of the wrong type: one line naming the value, exit 2."""

from __future__ import annotations

import pytest
from kernel_test_helpers import run_cli

BAD_CONFIGS = [
    ('backend = 3\n', "backend must be a name"),
    ('transport = ["stdio"]\n', "transport must be a name"),
    ('doors = "terminal"\n', "doors must be a list of names"),
    ('doors = [1, 2]\n', "doors must be a list of names"),
    ('options = 5\n', "options must be a table"),
    ('limits = [1]\n', "limits must be a table"),
    ('[options]\nscripted = 5\n', "options.scripted must be a table"),
    ('[options.scripted]\ndelay = "soon"\n', "expected a number, got 'soon'"),
    ('[options.scripted]\ndelay = true\n', "expected a number, got True"),
    ('[options.scripted]\nreply = {text = "x"}\n', "expected text"),
    ('[options.scripted]\nreasoning = "perhaps"\n', "expected true or false"),
    ('[options.scripted]\ncolour = "red"\n', "unknown option 'colour'"),
    ('[limits]\nmax_message_chars = "many"\n', "expected a whole number"),
    ('[limits]\nmax_message_chars = 1.5\n', "expected a whole number"),
    ('[limits]\nmax_message_chars = false\n', "expected a whole number"),
    ('[limits]\nrun_timeout = [1]\n', "limit 'run_timeout'"),
    ('[limits]\nno_such_limit = 1\n', "unknown limit 'no_such_limit'"),
    ('backend = "scripted\n', "is not valid TOML"),
]


def _check_one_line(result, needle):
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("onedoor: error:")]
    assert len(errors) == 1 and needle in errors[0], result.stderr


@pytest.mark.parametrize("text,needle", BAD_CONFIGS, ids=[c[0].strip().replace("\n", " ") for c in BAD_CONFIGS])
def test_run_with_a_badly_typed_config_is_one_line(tmp_path, text, needle):
    config = tmp_path / "onedoor.toml"
    config.write_text(text)
    _check_one_line(run_cli("run", "--config", str(config), "hi"), needle)


@pytest.mark.parametrize("text,needle", BAD_CONFIGS, ids=[c[0].strip().replace("\n", " ") for c in BAD_CONFIGS])
def test_serve_with_a_badly_typed_config_is_one_line(tmp_path, text, needle):
    config = tmp_path / "onedoor.toml"
    config.write_text(text)
    result = run_cli("serve", "--door", "terminal", "--transport", "stdio", "--config", str(config), input="")
    _check_one_line(result, needle)


def test_the_config_is_found_in_the_working_directory(tmp_path):
    (tmp_path / "onedoor.toml").write_text("backend = 7\n")
    import os
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "onedoor", "run", "hi"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60, env={**os.environ})
    _check_one_line(result, "onedoor.toml: backend must be a name")


def test_a_config_that_is_not_utf8_or_not_a_file(tmp_path):
    latin = tmp_path / "latin.toml"
    latin.write_bytes('backend = "caf\xe9"\n'.encode("latin-1"))
    _check_one_line(run_cli("run", "--config", str(latin), "hi"), "is not UTF-8 text")
    _check_one_line(run_cli("run", "--config", str(tmp_path), "hi"), "cannot be read")


def test_a_well_typed_config_still_works(tmp_path):
    config = tmp_path / "onedoor.toml"
    config.write_text('backend = "scripted"\n[options.scripted]\nreply = "fine"\ndelay = 0\n[limits]\nmax_message_chars = 50\n')
    result = run_cli("run", "--config", str(config), "hi")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "fine"
