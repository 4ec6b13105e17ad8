"""The ``acidctl`` console entry point: global options, command registration, error mapping.

Command modules (``acidctl/cli/*_cmd.py``) only parse arguments, call library functions that
return plain data, and render it through :class:`acidctl.cli.output.Output`. They import
pyarrow / pyspark / SQLAlchemy inside the command body, never at module level, so that
``acidctl --help`` and metastore-only commands start fast.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
import traceback
from typing import Annotated, Optional

import typer

from acidctl import __version__
from acidctl.cli.output import OUTPUT_CHOICES, Output, parse_output, set_columns, set_wide
from acidctl.errors import AcidctlError, ExitCode, StorageUnavailable, UsageError, redact
from acidctl.fs import _CREDENTIAL_ERRORS

# ``app`` with every command is this module's attribute ``app`` (see ``__getattr__``); inside,
# ``_app`` holds only the commands loaded so far.
_app = typer.Typer(
    name="acidctl",
    help="Inspect, validate, compact and clean Apache Hive ACID tables.",
    context_settings={"help_option_names": ["-h", "--help"]},
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    add_completion=False,
)

# Each module's ``register(app)`` adds its commands (or its sub-typer) to ``app``; command
# modules never import this module (no import cycle).
COMMAND_MODULES = (
    "acidctl.cli.dump_cmd",
    "acidctl.cli.demo_cmd",
    "acidctl.cli.state_cmd",
    "acidctl.cli.show_cmd",
    "acidctl.cli.metastore_cmd",
    "acidctl.cli.compact_cmd",
    "acidctl.cli.clean_cmd",
    "acidctl.cli.revert_cmd",
    "acidctl.cli.export_cmd",
    "acidctl.cli.worker_cmd",
    "acidctl.cli.abort_cmd",
    "acidctl.cli.abort_compactions_cmd",
    "acidctl.cli.initiator_cmd",
    "acidctl.cli.unlock_cmd",
    "acidctl.cli.doctor_cmd",
    "acidctl.cli.upgrade_cmd",
)

#: the modules behind each top-level command: ``acidctl CMD ...`` imports and registers only
#: those (start-up is a third of a 1M-row ``dump``: bench/dump.py), anything else (``--help``,
#: no or an unknown command) all of COMMAND_MODULES. tests/cli/test_lazy_commands.py checks
#: that this matches what the modules register.
COMMAND_OWNERS: dict[str, tuple[str, ...]] = {
    "dump": ("acidctl.cli.dump_cmd",),
    "demo": ("acidctl.cli.demo_cmd",),
    "state": ("acidctl.cli.state_cmd",),
    "show": ("acidctl.cli.show_cmd",),
    "metastore": ("acidctl.cli.metastore_cmd",),
    "compact": ("acidctl.cli.compact_cmd",),
    "clean": ("acidctl.cli.clean_cmd",),
    "revert": ("acidctl.cli.revert_cmd",),
    "export": ("acidctl.cli.export_cmd",),
    "worker": ("acidctl.cli.worker_cmd",),
    "abort": ("acidctl.cli.abort_cmd", "acidctl.cli.abort_compactions_cmd"),
    "initiator": ("acidctl.cli.initiator_cmd",),
    "unlock": ("acidctl.cli.unlock_cmd",),
    "doctor": ("acidctl.cli.doctor_cmd",),
    "why": ("acidctl.cli.doctor_cmd",),
    "metrics": ("acidctl.cli.doctor_cmd",),
    "upgrade-check": ("acidctl.cli.upgrade_cmd",),
}
#: global options that take a value (the next argument unless written ``--opt=value``)
_VALUE_OPTIONS = frozenset({"-o", "--output", "--fs-option", "--metastore", "--profile"})


@dataclasses.dataclass
class Settings:
    """Global options, available to commands as ``ctx.obj``."""

    output: Output
    verbose: bool = False
    fs_options: dict = dataclasses.field(default_factory=dict)
    metastore_url: Optional[str] = None
    profile: Optional[str] = None
    #: --read-only / ACIDCTL_READ_ONLY; the profile's read_only key is applied by
    #: acidctl.metastore.steps when a write is first checked (writes_forbidden())
    read_only: bool = False
    quiet: bool = False  # -q: no progress lines on stderr

    def table_fs(self, url: str):
        from acidctl.fs import TableFS

        return TableFS(url, self.fs_options)


@dataclasses.dataclass
class _Invocation:
    """What the error handler of one :func:`main` call needs to know of the global options
    (filled in by the callback; before it runs, from argv)."""

    output: str = "text"
    verbose: bool = False


def _complete_output(incomplete: str) -> list[str]:
    """Shell completion of ``-o``: text, json, wide, custom-columns=."""
    return [c for c in OUTPUT_CHOICES if c.startswith(incomplete.lower())]


def _version_callback(value: bool):
    if value:
        typer.echo(f"acidctl {__version__}")
        raise typer.Exit()


@_app.callback()
def _global(
    ctx: typer.Context,
    output: Annotated[
        str,
        typer.Option(
            "--output",
            "-o",
            metavar="FORMAT",
            help=(
                "Result format: text, json, wide (text at full width, as --wide) or "
                "custom-columns=COL1,COL2,... (text tables with only these columns, in this order; "
                "names as in the text header or the JSON key, any case)."
            ),
            envvar="ACIDCTL_OUTPUT",
            autocompletion=_complete_output,
        ),
    ] = "text",
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log progress to stderr; show tracebacks of internal errors.")
    ] = False,
    fs_option: Annotated[
        Optional[list[str]],
        typer.Option("--fs-option", metavar="KEY=VALUE", help="Filesystem (fsspec) storage option, repeatable."),
    ] = None,
    metastore: Annotated[
        Optional[str],
        typer.Option(
            "--metastore",
            envvar="ACIDCTL_METASTORE_URL",
            metavar="URL",
            help="Metastore database URL (SQLAlchemy form), e.g. postgresql://hive@db/metastore.",
            show_envvar=True,
        ),
    ] = None,
    profile: Annotated[
        Optional[str],
        typer.Option(
            "--profile", envvar="ACIDCTL_PROFILE", help="Named profile from the config file (~/.acidctl.toml)."
        ),
    ] = None,
    wide: Annotated[
        bool,
        typer.Option(
            "--wide",
            envvar="ACIDCTL_WIDE",
            help="Text tables at full width (by default they are fitted to the terminal by wrapping the widest cells; pipes get full width).",
        ),
    ] = False,
    read_only: Annotated[
        bool,
        typer.Option(
            "--read-only",
            envvar="ACIDCTL_READ_ONLY",
            show_envvar=True,
            help="Forbid every metastore write (also the profile key read_only = true); compactions then run unregistered only where that is safe, else refuse.",
        ),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            envvar="ACIDCTL_QUIET",
            help="No progress lines on stderr (they are only printed to a terminal anyway); results, warnings and errors unchanged.",
        ),
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version_callback, is_eager=True, help="Print the version and exit.")
    ] = False,
):
    """Inspect, validate, compact and clean Apache Hive ACID tables."""
    from acidctl.cli.options import parse_fs_options

    try:
        mode, wide_output, columns = parse_output(output)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--output") from None
    if isinstance(ctx.obj, _Invocation):
        ctx.obj.output, ctx.obj.verbose = mode, verbose
    set_wide(wide or wide_output)
    set_columns(columns)
    if verbose:
        import logging

        class _Redacting(logging.Formatter):
            # every log line of every library (SQLAlchemy, fsspec, py4j ...) passes here: no
            # password, token or secret in a URL, query string or config ever reaches stderr
            def format(self, record):
                return redact(super().format(record))

        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_Redacting("acidctl: %(name)s: %(message)s"))
        logging.basicConfig(level=logging.INFO, handlers=[handler])
    from acidctl.metastore import steps

    if read_only:
        steps.forbid_writes("--read-only")
    else:
        # the profile key read_only = true: the config file is read when a metastore write is
        # first checked, so commands that never write (--help, dump FILE, state PATH) never read it
        def profile_read_only() -> bool:
            from acidctl.metastore.connection import profile_setting

            return profile_setting("read_only", profile=profile) in (True, "true", "1", 1)

        steps.forbid_writes_if(profile_read_only)
    ctx.obj = Settings(
        output=Output(mode, verbose=verbose),
        verbose=verbose,
        fs_options=parse_fs_options(fs_option),
        metastore_url=metastore,
        profile=profile,
        read_only=read_only,
        quiet=quiet,
    )


_loaded: list[str] = []  # command modules registered on _app, in order


def _load_commands(modules: tuple[str, ...] = COMMAND_MODULES) -> None:
    """Import ``modules`` and register their commands on ``_app`` (each module once). Loading
    every module after only some were loaded registers all again in COMMAND_MODULES order, so
    that ``--help`` lists the commands in the same order however the process got there."""
    if modules == COMMAND_MODULES and _loaded and _loaded != list(COMMAND_MODULES):
        _app.registered_commands.clear()
        _app.registered_groups.clear()
        _loaded.clear()
    for name in modules:
        if name in _loaded:
            continue
        module = importlib.import_module(name)
        register = getattr(module, "register", None)
        if register is not None:  # else the module registered itself on import (older style)
            register(_app)
        _loaded.append(name)


def _requested_command(args: list[str]) -> str | None:
    """The command name in ``args`` (the first argument that is neither a global option nor its
    value), or None. Only used to choose which command modules to import: a wrong guess loads
    all of them, never changes how the arguments are parsed."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return args[i + 1] if i + 1 < len(args) else None
        if not a.startswith("-") or a == "-":
            return a
        if a in _VALUE_OPTIONS:
            i += 1  # its value
        elif not a.startswith("--") and a.find("o", 1) == len(a) - 1:
            i += 1  # a cluster of short flags ending in -o (``-vo json``)
        i += 1
    return None


def __getattr__(name: str):
    """``acidctl.cli.main.app``: the typer app with every command (docgen, tests)."""
    if name == "app":
        _load_commands()
        return _app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _argv_output_mode(argv: list[str]) -> str:
    """The --output mode (text or json) when parsing failed before the callback ran."""
    value = os.environ.get("ACIDCTL_OUTPUT", "text")
    for i, a in enumerate(argv):
        if a in ("-o", "--output") and i + 1 < len(argv):
            value = argv[i + 1]
            break
        if a.startswith("--output="):
            value = a.split("=", 1)[1]
            break
    return "json" if value.strip().lower() == "json" else "text"


def main(argv: Optional[list[str]] = None) -> None:
    """Run the CLI and exit with the documented exit code."""
    from click import exceptions as cx

    args = list(sys.argv[1:] if argv is None else argv)
    run = _Invocation(output=_argv_output_mode(args))
    code: int = ExitCode.OK
    if "_ACIDCTL_COMPLETE" in os.environ:  # shell completion: acidctl's classes (cli/completion.py)
        import acidctl.cli.completion  # noqa: F401
    try:
        _load_commands(COMMAND_OWNERS.get(_requested_command(args) or "", COMMAND_MODULES))
        rv = _app(args=args, prog_name="acidctl", standalone_mode=False, obj=run)
        if isinstance(rv, int):
            code = rv
            if rv == ExitCode.INTERRUPTED:  # typer turns KeyboardInterrupt into Exit(130)
                sys.stderr.write("acidctl: interrupted\n")
    except AcidctlError as e:
        _output(run).error(e)
        code = e.exit_code
    except typer.Exit as e:
        code = e.exit_code
    except SystemExit:
        # click answers EPIPE (`acidctl dump ... | head -1`) with sys.exit(1) after wrapping
        # stdout; the reader going away is not an error
        if type(sys.stdout).__name__.endswith("PacifyFlushWrapper"):
            _silence_stdout()
            code = ExitCode.OK
        else:
            raise
    except typer.Abort:  # click's wrapping of KeyboardInterrupt
        sys.stderr.write("acidctl: interrupted\n")
        code = ExitCode.INTERRUPTED
    except cx.UsageError as e:  # click's usage errors: one line (its message) as a UsageError, exit 2
        hint = f"see '{e.ctx.command_path} --help'" if e.ctx is not None else None
        _output(run).error(UsageError(e.format_message(), hint=hint))
        code = ExitCode.USAGE
    except cx.ClickException as e:
        e.show()
        code = e.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("acidctl: interrupted\n")
        code = ExitCode.INTERRUPTED
    except BrokenPipeError:
        # `acidctl dump ... | head`: the reader went away; that is not an error
        _silence_stdout()
        code = ExitCode.OK
    except PermissionError as e:  # an unreadable file or directory, a read-only table
        _output(run).error(StorageUnavailable(f"permission denied: {e.filename or e}"))
        code = ExitCode.UNAVAILABLE
    except Exception as e:  # a bug: one line, the traceback only with -v
        if type(e).__name__ in _CREDENTIAL_ERRORS:
            _output(run).error(StorageUnavailable(f"no usable object-store credentials: {e}"))
            sys.exit(int(ExitCode.UNAVAILABLE))
        out = _output(run)
        if run.verbose:
            sys.stderr.write(redact("".join(traceback.format_exception(e))))
        out.error(e)
        if not run.verbose:
            sys.stderr.write("acidctl: this is a bug; rerun with -v for the traceback\n")
        code = ExitCode.INTERNAL
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
    sys.exit(int(code))


def _output(run: _Invocation) -> Output:
    return Output(run.output if run.output in ("text", "json") else "text", verbose=run.verbose)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
