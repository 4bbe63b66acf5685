"""Plugin discovery and loading.

Five entry-point groups (:data:`GROUPS`). Listing reads installed metadata and imports
nothing; :func:`load` imports exactly the one named plugin (through stevedore) and
checks it is the right kind of object. A broken plugin becomes a :class:`PluginError`
naming it; it never takes the CLI down. That holds for a plugin whose import raises
``SystemExit`` or any other ``BaseException`` too; only ``KeyboardInterrupt`` goes
through, because the user asked for it.

Hook implementations are checked when they are registered: one that names no onedoor
hook (``onedoor_run_startd``) is reported, with the hook it most likely meant.

Environment:

``ONEDOOR_PLUGINS``        allow-list, comma-separated ``name`` or ``kind:name``; when set,
                           nothing else loads
``ONEDOOR_BLOCK_PLUGINS``  block-list, same syntax
``ONEDOOR_STRICT_PLUGINS`` ``1``: a hook plugin that fails to load or names an unknown
                           hook is an error, not a warning; a broken default door too

Tests can put plugin objects in place of installed ones for the current process with
:func:`add_in_process_plugin` (what stevedore's ``make_test_instance`` is to a manager).

The rest of this package: :mod:`.options` (one way to configure any plugin),
:mod:`.serve` (what ``onedoor serve`` does: pick, check and compose the plugins) and
:mod:`.requirements` (are a distribution's requirements installed?).
"""

from ..errors import PluginError
from .discovery import (
    GROUPS,
    IN_PROCESS,
    KNOWN_DISTRIBUTIONS,
    PluginInfo,
    add_in_process_plugin,
    check_all,
    discover,
    installed_hook_names,
    is_enabled,
    load,
    make_backend,
    names,
    plugin_manager,
    register_hooks,
    remove_in_process_plugin,
    strict_mode,
    unknown_hooks,
)

__all__ = [
    "PluginError",
    "GROUPS",
    "IN_PROCESS",
    "KNOWN_DISTRIBUTIONS",
    "PluginInfo",
    "add_in_process_plugin",
    "check_all",
    "discover",
    "installed_hook_names",
    "is_enabled",
    "load",
    "make_backend",
    "names",
    "plugin_manager",
    "register_hooks",
    "remove_in_process_plugin",
    "strict_mode",
    "unknown_hooks",
]
