"""The typer application behind the ``onedoor`` command: the built-in commands (run, chat,
serve, threads, plugins) and those that hook plugins add (pluggy hook ``onedoor_cli``).

:func:`invoke` runs it in typer's non-standalone mode, so that every outcome comes back
here: typer's usage errors are shown as typer shows them (exit 2), the rest is left to
:func:`onedoor.cli.run_cli`'s error policy. Commands import what they use inside their
body: `onedoor plugins` never imports a server library. A command whose stdout closes
(`| head`) ends quietly, exit 0 (:mod:`onedoor.builtins.closed_stdout`).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any, Callable, List, Sequence

import typer

from .. import __version__
from .fast import RunRequest, run_command

BUILT_IN_COMMANDS = ("run", "chat", "serve", "threads", "plugins")

app = typer.Typer(
    name="onedoor",
    help="One agent, every door: terminal, REST, AG-UI, MCP, ACP over stdio, HTTP or SLIM. "
         "A command whose stdout closes early (`| head`) stops there quietly, exit 0.",
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

OptionPairs = typer.Option(
    None, "--option", "-o", metavar="NAME=VALUE",
    help="plugin option NAME=VALUE (or PLUGIN.NAME=VALUE, limits.NAME=VALUE); repeatable",
)
ConfigPath = typer.Option(None, "--config", metavar="FILE", help="config file (default: ./onedoor.toml if present)")
BackendName = typer.Option(None, "--backend", "-b", metavar="NAME", help="backend plugin (default: scripted)")
AskFallback = typer.Option(
    None, "--ask-fallback", metavar="deny|allow|fail",
    help="when stdin is not a terminal, the agent's questions are answered: deny (default), allow "
         "(tools allowed once) or fail (the run fails); the terminal door's option ask_fallback",
)


def _ends_quietly_when_stdout_closes(command: Callable[..., Any]) -> Callable[..., Any]:
    """The command, flushing stdout at its end; a closed stdout ends it with exit 0
    (click would exit 1, and Python's flush at exit would print a BrokenPipeError)."""

    @functools.wraps(command)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            try:
                return command(*args, **kwargs)
            finally:
                if sys.stdout is not None:
                    sys.stdout.flush()
        except BrokenPipeError:
            from ..builtins.closed_stdout import stdout_closed

            raise typer.Exit(stdout_closed()) from None

    return guarded


def _version(value: bool) -> None:
    if value:
        print(f"onedoor {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    ctx: typer.Context,
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="show the version"),
) -> None:
    """One agent, every door."""
    if ctx.invoked_subcommand is None:  # `onedoor` alone: the usage, as for any usage mistake
        print(ctx.get_help(), file=sys.stderr)
        raise typer.Exit(2)


@app.command()
@_ends_quietly_when_stdout_closes
def run(
    message: str = typer.Argument(..., metavar="MESSAGE", help="what to say to the agent ('-' reads stdin)"),
    backend: str | None = BackendName,
    json_lines: bool = typer.Option(False, "--json", help="print every event as one JSON object a line"),
    reasoning: bool = typer.Option(False, "--reasoning", help="show the agent's reasoning on stderr"),
    option: List[str] | None = OptionPairs,
    config: Path | None = ConfigPath,
    ask_fallback: str | None = AskFallback,
    attach: List[str] | None = typer.Option(
        None, "--attach", metavar="FILE",
        help="send this file with the message (an image, a document, a text file…); repeatable",
    ),
) -> None:
    """Send one message and stream the reply as it is written. On a terminal, the agent's
    questions (tool approvals, free-form questions) are asked there. Exit code: 0 done
    (and when stdout closes first, as with `| head`: the run is cancelled), 1 failed,
    130 cancelled."""
    request = RunRequest(message, backend, json_lines, reasoning, tuple(option or ()), config, ask_fallback,
                         tuple(attach or ()))
    raise typer.Exit(run_command(request))


@app.command()
@_ends_quietly_when_stdout_closes
def chat(
    backend: str | None = BackendName,
    thread: str | None = typer.Option(
        None, "--thread", metavar="ID|new",
        help="continue this stored thread ('new' starts one and prints its id on stderr)",
    ),
    option: List[str] | None = OptionPairs,
    config: Path | None = ConfigPath,
    ask_fallback: str | None = AskFallback,
) -> None:
    """Talk to the agent in this terminal, keeping the conversation
    (the same as `onedoor serve --door terminal --transport stdio`). The agent's questions
    are asked in the conversation. With --thread the conversation is a stored thread,
    shared with every door (`onedoor threads` lists them)."""
    from ..plugins.serve import Settings
    from ..plugins.serve import serve as do_serve
    from ..threads import ThreadError

    pairs = list(option or [])
    if ask_fallback is not None:
        pairs.append(f"terminal.ask_fallback={ask_fallback}")
    if thread is not None:
        pairs.append(f"terminal.thread={thread}")
    settings = Settings(doors=["terminal"], transport="stdio", backend=backend, options=pairs, config=config)
    try:
        code = do_serve(settings)
    except ThreadError as exc:  # no such thread (1); an id that cannot be one, no store (2)
        print(f"onedoor: error: {exc}", file=sys.stderr)
        code = 1 if exc.reason == "not_found" else 2
    raise typer.Exit(code)


@app.command()
def serve(
    door: List[str] | None = typer.Option(
        None, "--door", "-d", metavar="NAME", help="door to serve; repeatable (default: rest, agui, mcp)"
    ),
    transport: str | None = typer.Option(None, "--transport", "-t", metavar="NAME", help="transport (default: http)"),
    backend: str | None = BackendName,
    host: str | None = typer.Option(None, "--host", metavar="ADDRESS", help="address to bind (http; default 127.0.0.1)"),
    port: int | None = typer.Option(
        None, "--port", metavar="N", help="port to bind (http; default 8000; 0: any free port)"
    ),
    token: str | None = typer.Option(
        None, "--token", metavar="TOKEN", help="bearer token every request must carry (http)"
    ),
    store: str | None = typer.Option(
        None, "--store", metavar="NAME", help="thread store (default: sqlite; none: keep no threads)"
    ),
    option: List[str] | None = OptionPairs,
    config: Path | None = ConfigPath,
) -> None:
    """Serve the agent through one or more doors over a transport."""
    from ..plugins.serve import Settings
    from ..plugins.serve import serve as do_serve

    pairs = list(option or [])
    for name, value in (("host", host), ("port", port), ("token", token)):
        if value is not None:
            pairs.append(f"{name}={value}")
    settings = Settings(
        doors=list(door or []), transport=transport, backend=backend, store=store, options=pairs, config=config
    )
    raise typer.Exit(do_serve(settings))


threads_app = typer.Typer(
    name="threads",
    help="List, show and delete your stored threads, and see or change their shared state: the conversations "
         "every door shares "
         "(yours: the principal 'local').",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
app.add_typer(threads_app)
StoreOptions = typer.Option(
    None, "--option", "-o", metavar="STORE.NAME=VALUE", help="thread store option STORE.NAME=VALUE, e.g. sqlite.path=FILE"
)


@threads_app.command("ls")
@_ends_quietly_when_stdout_closes
def threads_ls(
    limit: int = typer.Option(50, "--limit", min=1, max=1000, metavar="N", help="show at most this many, newest first"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
    option: List[str] | None = StoreOptions,
    config: Path | None = ConfigPath,
) -> None:
    """List your threads, the most recently changed first."""
    from ..builtins.thread_commands import list_threads, with_store

    raise typer.Exit(with_store(list(option or []), config, lambda s: list_threads(s, limit=limit, as_json=as_json)))


@threads_app.command("show")
@_ends_quietly_when_stdout_closes
def threads_show(
    thread_id: str = typer.Argument(..., metavar="ID", help="the thread's id"),
    as_json: bool = typer.Option(False, "--json", help="the whole thread as JSON"),
    option: List[str] | None = StoreOptions,
    config: Path | None = ConfigPath,
) -> None:
    """Show one thread's messages."""
    from ..builtins.thread_commands import show_thread, with_store

    raise typer.Exit(with_store(list(option or []), config, lambda s: show_thread(s, thread_id, as_json=as_json)))


@threads_app.command("state")
@_ends_quietly_when_stdout_closes
def threads_state(
    thread_id: str = typer.Argument(..., metavar="ID", help="the thread's id"),
    set_to: str | None = typer.Option(None, "--set", metavar="JSON", help="replace the state with this JSON object"),
    patch: str | None = typer.Option(
        None, "--patch", metavar="JSON", help='change the state with this JSON Patch, e.g. \'[{"op": "add", '
        '"path": "/todo", "value": []}]\''
    ),
    option: List[str] | None = StoreOptions,
    config: Path | None = ConfigPath,
) -> None:
    """Show a thread's shared state (JSON on stdout, its version on stderr), or change it."""
    from ..builtins.thread_commands import thread_state, with_desk

    raise typer.Exit(with_desk(list(option or []), config,
                               lambda desk: thread_state(desk, thread_id, set_to=set_to, patch=patch)))


@threads_app.command("rm")
@_ends_quietly_when_stdout_closes
def threads_rm(
    thread_ids: List[str] = typer.Argument(..., metavar="ID", help="the threads to delete"),
    option: List[str] | None = StoreOptions,
    config: Path | None = ConfigPath,
) -> None:
    """Delete threads, for good."""
    from ..builtins.thread_commands import remove_threads, with_store

    raise typer.Exit(with_store(list(option or []), config, lambda s: remove_threads(s, list(thread_ids))))


@app.command()
@_ends_quietly_when_stdout_closes
def plugins(
    check: bool = typer.Option(
        False, "--check", help="also import every plugin, check its requirements and hooks, and report the broken ones"
    ),
    show_options: bool = typer.Option(False, "--options", help="list each plugin's options"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """List installed backends, doors, transports and hooks (reads metadata; imports
    nothing unless --check or --options)."""
    import json

    from .. import plugins as plugin_registry

    infos = plugin_registry.check_all() if (check or show_options) else plugin_registry.discover()
    option_rows = _option_rows(infos) if show_options else {}
    if as_json:
        print(json.dumps([
            {
                "kind": i.kind, "name": i.name, "target": i.target, "distribution": i.distribution,
                "version": i.version, "enabled": i.enabled, "error": i.error, "warnings": i.warnings,
                **({"options": [list(r) for r in option_rows.get((i.kind, i.name), [])]} if show_options else {}),
            }
            for i in infos
        ], indent=2))
    else:
        kind = None
        for info in infos:
            if info.kind != kind:
                kind = info.kind
                print(f"{kind}s:")
            state = "" if info.enabled else "  (disabled)"
            if info.error:
                state = f"  BROKEN: {info.error}"
            elif check and info.loaded:
                state = "  ok"
            print(f"  {info.name:<14} {info.distribution} {info.version}{state}")
            for warning in info.warnings:
                print(f"      warning: {warning}")
            for name, default, help_text in option_rows.get((info.kind, info.name), []):
                print(f"      -o {name}={default}  {help_text}")
    troubled = [i for i in infos if i.error or (check and i.warnings)]
    if troubled and plugin_registry.strict_mode():
        raise typer.Exit(1)


def _option_rows(infos: list[Any]) -> dict[tuple[str, str], list[tuple[str, str, str]]]:
    """(name, default, help) of each loaded plugin's options; a plugin whose ``Options``
    is not a dataclass gets an error instead."""
    from ..plugins.options import describe

    rows: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for info in infos:
        if not info.loaded or info.kind == "hook":
            continue
        try:
            rows[(info.kind, info.name)] = describe(getattr(info.obj, "Options", None))
        except TypeError as exc:
            info.error = info.error or f"its Options cannot be listed: {exc}"
    return rows


def add_plugin_commands(target: Any = app) -> None:
    """Let hook plugins add commands (pluggy hook ``onedoor_cli``). A plugin whose hook
    raises is reported on stderr (an error in strict mode); the other commands stay."""
    from ..errors import PluginError
    from ..plugins import plugin_manager, strict_mode

    for impl in plugin_manager().hook.onedoor_cli.get_hookimpls():
        try:
            impl.function(app=target)
        except Exception as exc:  # noqa: BLE001 - one plugin's commands must not take the CLI down
            message = f"{impl.plugin_name}: could not add its commands: {type(exc).__name__}: {exc}"
            if strict_mode():
                raise PluginError(message) from None
            print(f"onedoor: warning: {message}", file=sys.stderr)


def _usage_error_types() -> tuple[type[BaseException], ...]:
    """The exceptions typer raises for a mistyped command line.

    typer 0.28 and later carry their own copy of click, whose exceptions derive from
    ``typer.TyperException``; older typer raises those of the click package (imported
    by then, as typer uses it). A plugin's command may raise click's own too.
    """
    types: list[type[BaseException]] = []
    own = getattr(typer, "TyperException", None)
    if own is not None:
        types.append(own)
    click = sys.modules.get("click")
    if click is not None:
        types.append(click.ClickException)
    return tuple(types)


def _abort_types() -> tuple[type[BaseException], ...]:
    click = sys.modules.get("click")
    return (typer.Abort,) + ((click.Abort,) if click is not None else ())


def invoke(args: Sequence[str]) -> int:
    """Run the typer application on ``args``; the exit code."""
    if not args or args[0] not in (*BUILT_IN_COMMANDS, "--version"):
        add_plugin_commands()  # built-in commands do not pay for loading hook plugins twice
    try:
        result = app(args=list(args), prog_name="onedoor", standalone_mode=False)
    except _usage_error_types() as exc:
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            print(f"Error: {exc}", file=sys.stderr)
        code = getattr(exc, "exit_code", 2)
        return code if isinstance(code, int) else 2
    except _abort_types():
        print("onedoor: interrupted", file=sys.stderr)
        return 130
    return result if isinstance(result, int) else 0
