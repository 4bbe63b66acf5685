"""The requirement check behind `onedoor plugins --check`: markers and version specifiers
read without the packaging library, and nothing reported that it cannot read."""

from __future__ import annotations

import pytest
from onedoor.plugins.requirements import Unreadable, evaluate_marker, unmet_requirements, version_matches

ENV = {
    "python_version": "3.11", "python_full_version": "3.11.7", "sys_platform": "linux", "os_name": "posix",
    "platform_system": "Linux", "implementation_name": "cpython", "extra": "",
}


@pytest.mark.parametrize(
    "marker,expected",
    [
        ('python_version < "3.12"', True),
        ('python_version >= "3.12"', False),
        ("python_version=='3.11'", True),
        ('python_version == "3.11.*"', True),
        ('sys_platform == "win32" or python_version > "3.8"', True),
        ('sys_platform == "win32" and python_version > "3.8"', False),
        ('extra == "ask"', False),
        ('(sys_platform == "linux" and extra == "x") or os_name == "posix"', True),
        ('"linux" in sys_platform', True),
        ('platform_system not in "Windows Darwin"', True),
        ('python_full_version >= "3.11.7" and implementation_name == "cpython"', True),
        ('"3.12" > python_version', True),
    ],
)
def test_markers(marker, expected):
    assert evaluate_marker(marker, ENV) is expected


@pytest.mark.parametrize("marker", ['no_such_variable == "1"', "python_version <", '(python_version < "3"', "=="])
def test_a_marker_it_cannot_read_is_unreadable(marker):
    with pytest.raises(Unreadable):
        evaluate_marker(marker, ENV)


@pytest.mark.parametrize(
    "installed,op,wanted,expected",
    [
        ("1.26.0", ">=", "1.26", True),
        ("0.29.2", "<", "0.29", False),
        ("2.0rc1", "<", "2.0", True),
        ("2.0", ">=", "2.0rc1", True),
        ("1.0.dev1", "<", "1.0a1", True),
        ("1.0.post1", ">", "1.0", True),
        ("1.4.5", "~=", "1.4.2", True),
        ("1.5", "~=", "1.4.2", False),
        ("1.2.3", "==", "1.2.*", True),
        ("1.3", "!=", "1.2.*", True),
        ("3.1.0", "<", "3", False),
        ("1.0+local", "==", "1.0", True),
        ("1.0", "===", "1.0", True),
    ],
)
def test_version_specifiers(installed, op, wanted, expected):
    assert version_matches(installed, op, wanted) is expected


def test_an_unknown_distribution_has_no_unmet_requirements():
    assert unmet_requirements("onedoor-test-no-such-distribution") == []


def test_the_kernel_itself_has_every_requirement_installed():
    from importlib.metadata import packages_distributions

    for dist in packages_distributions().get("onedoor", []) or ["onedoor-kernel"]:
        assert unmet_requirements(dist) == []
