"""The registry manifest and its icon follow the ACP registry's rules."""

from __future__ import annotations

import json
import re
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "plugins" / "door-acp"
ENTRY = DIST / "registry" / "onedoor"


def test_agent_json_matches_the_registry_schema_and_the_package() -> None:
    manifest = json.loads((ENTRY / "agent.json").read_text())
    assert {"id", "name", "version", "description", "distribution"} <= set(manifest)
    assert set(manifest) <= {"id", "name", "version", "description", "repository", "website", "authors",
                             "license", "license_url", "icon", "distribution"}
    assert re.fullmatch(r"[a-z][a-z0-9-]*", manifest["id"]) and manifest["id"] == ENTRY.name
    project = tomllib.loads((DIST / "pyproject.toml").read_text())["project"]
    assert manifest["version"] == project["version"]
    uvx = manifest["distribution"]["uvx"]
    assert set(uvx) <= {"package", "args", "env"}
    assert uvx["package"] == f"{project['name']}=={project['version']}"
    assert project["name"] in project["scripts"]  # uvx runs the script named like the package


def test_icon_is_16px_monochrome_current_color() -> None:
    svg = ET.parse(ENTRY / "icon.svg").getroot()
    assert svg.get("width") == "16" and svg.get("height") == "16" and svg.get("viewBox") == "0 0 16 16"
    colours = {el.get(attr) for el in svg.iter() for attr in ("fill", "stroke") if el.get(attr) is not None}
    assert colours and colours <= {"currentColor", "none"}
