"""The ``acidctl`` console entry point: global options, command registration, error mapping.

Command modules (``acidctl/cli/*_cmd.py``) only parse arguments, call library functions that
return plain data, and render it through :class:`acidctl.cli.output.Output`. They import
pyarrow / pyspark / SQLAlchemy inside the command body, never at module level, so that
``acidctl --help`` and metastore-only commands start fast.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import os
import sys
import traceback
from typing import Annotated, Optional

import click
import typer
import typer.core

from acidctl import __version__
from acidctl.cli.output import OUTPUT_CHOICES, Output, parse_output, set_columns, set_wide
from acidctl.errors import AcidctlError, ExitCode, StorageUnavailable, UsageError, redact
from acidctl.fs import _CREDENTIAL_ERRORS

#: the one preview-and-act rule (top-level ``--help`` epilog; changes/grammar.md for the README)
PREVIEW_RULE = (
    "Commands that delete or abort something (clean, revert, abort transactions|compactions, "
    "unlock, upgrade-check's compactions) only print their plan unless --execute. Commands that "
    "create something (compact, worker, initiator, export, migrate, changes --to parquet, metastore init, demo) act unless "
    "--dry-run. Every command that writes anything accepts --dry-run: it prints what it would do, "
    "writes nothing (no file, no metastore row), and exits with the code the real run would "
    "(--dry-run wins over --execute)."
)
GLOBAL_RULE = (
    "Global options (-o, -v, -q, --metastore, --profile, --wide, --read-only, --fs-option) may be "
    "given before or after the command, as in 'acidctl state T -o json'; '--' ends option parsing."
)
ENVIRONMENT = (
    "Environment: ACIDCTL_METASTORE_URL, ACIDCTL_PROFILE, ACIDCTL_OUTPUT, ACIDCTL_WIDE, "
    "ACIDCTL_READ_ONLY, ACIDCTL_QUIET as the options above; ACIDCTL_CONFIG: the config file of "
    'the profiles (default ~/.acidctl.toml: [profiles.NAME] metastore = "URL", read_only = true).'
)

#: each command's line in the top-level ``--help`` (one short phrase that fits 80 columns; the
#: full help stays in ``acidctl CMD --help``); tests/cli/test_grammar.py checks every command has one
SUMMARIES: dict[str, str] = {
    "dump": "Print ORC rows as JSON lines (as Hive's orcfiledump)",
    "demo": "Create a local demo warehouse and metastore",
    "state": "Classify a table's directories as Hive's reader does",
    "show": "Show transactions, locks, compactions, write ids, tables",
    "metastore": "Create a Hive metastore schema (metastore init)",
    "compact": "Compact a table or partitions as Hive's compactor",
    "clean": "Remove obsolete directories, as Hive's Cleaner",
    "revert": "Undo a compaction acidctl published",
    "export": "Write a table's current rows as Parquet or ORC",
    "changes": "Change events (inserts, deletes) of write ids A..B",
    "migrate": "Copy a table into Iceberg or Delta, then keep it in sync",
    "worker": "Run queued compaction requests (Hive's Worker)",
    "initiator": "Enqueue due compactions (one Initiator cycle)",
    "unlock": "Release a lock that belongs to no transaction",
    "doctor": "Check every ACID table the metastore knows",
    "why": "Replay Hive's compaction decisions for a table",
    "metrics": "Hive 4's compaction metrics (Prometheus)",
    "upgrade-check": "Is a Hive 2 metastore ready for Hive 3?",
    "abort": "Abort transactions or compaction requests",
    "show transactions": "SHOW TRANSACTIONS: open and aborted transactions",
    "show locks": "SHOW LOCKS: the lock table, as Hive prints it",
    "show compactions": "SHOW COMPACTIONS: the queue and the history",
    "show tables": "The ACID tables of a database",
    "show write-ids": "A table's write-id snapshot for a fresh reader",
    "abort transactions": "ABORT TRANSACTIONS: open txns become aborted",
    "abort compactions": "ABORT COMPACTIONS: remove initiated requests",
    "metastore init": "Create Hive's metastore schema in an empty database",
}


def _unbroken_help_words() -> None:
    """Help text is wrapped at spaces only: click's wrapper (Python's ``textwrap``) otherwise
    splits a word longer than the line (``co`` / ``mpactorthreshold.hive...``) and breaks at
    hyphens (``--allow-non-`` / ``atomic-publish``). ``click.formatting.wrap_text`` builds its
    wrapper from ``click._textwrap.TextWrapper`` on each call; this narrows its defaults."""
    import click._textwrap as _tw

    base = _tw.TextWrapper
    if getattr(base, "_acidctl_unbroken", False):
        return

    class _WholeWords(base):  # type: ignore[valid-type,misc]
        _acidctl_unbroken = True

        def __init__(self, *args, **kwargs):
            kwargs.setdefault("break_long_words", False)
            kwargs.setdefault("break_on_hyphens", False)
            super().__init__(*args, **kwargs)

    _tw.TextWrapper = _WholeWords  # type: ignore[misc]


_unbroken_help_words()


def _option_arity(param) -> int:
    """How many following arguments an option consumes (0 for flags and counters)."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return 0
    return max(1, param.nargs)


class _OptionTable:
    """Option spellings of one command → their arity (arguments consumed)."""

    def __init__(self, params) -> None:
        self.long: dict[str, int] = {}
        self.short: dict[str, int] = {}
        for p in params:
            if not isinstance(p, click.Option):
                continue
            n = _option_arity(p)
            for name in [*p.opts, *p.secondary_opts]:
                if name.startswith("--"):
                    self.long[name] = n
                elif name.startswith("-") and len(name) == 2:
                    self.short[name[1]] = n

    def consumed(self, args: list[str], i: int) -> int | None:
        """If ``args[i]`` is one of these options: how many tokens it takes with its values
        (1 when the value is attached: ``--x=v``, ``-xv``); else None."""
        a = args[i]
        if a.startswith("--"):
            name, eq, _ = a.partition("=")
            if name not in self.long:
                return None
            return 1 if eq or self.long[name] == 0 else 1 + self.long[name]
        if a.startswith("-") and len(a) > 1:
            # a cluster of short options: all must be ours; the first taking a value ends it
            for j, c in enumerate(a[1:], start=1):
                if c not in self.short:
                    return None
                if self.short[c]:
                    return 1 if j < len(a) - 1 else 1 + self.short[c]
            return 1
        return None


class _AcidctlWarnings(logging.Handler):
    """acidctl's own warnings without -v: ``acidctl: warning: ...``, redacted, on the current
    sys.stderr (looked up per record: tests swap it)."""

    def emit(self, record):
        try:
            sys.stderr.write(f"acidctl: warning: {redact(record.getMessage())}\n")
        except Exception:  # noqa: BLE001 (logging must never raise)
            self.handleError(record)


def _quiet_library_logs(*, undo: bool = False) -> None:
    """Without -v, a library's log records never reach stderr: Python's last-resort handler
    printed them raw, unredacted, beside the one-line error (thrift's ``Could not connect to any
    of [...]`` above ``cannot reach the Thrift metastore``). acidctl's own warnings (a compaction
    it could not hand back, a delegation token not cancelled) still print through
    :class:`_AcidctlWarnings`. Idempotent (tests run many commands in one process)."""
    root = logging.getLogger()
    own = logging.getLogger("acidctl")
    if undo:  # -v: every record through -v's handler (an earlier command of this process quieted)
        for lg, kind in ((root, logging.NullHandler), (own, _AcidctlWarnings)):
            for h in [h for h in lg.handlers if isinstance(h, kind)]:
                lg.removeHandler(h)
        return
    if not any(isinstance(h, logging.NullHandler) for h in root.handlers):
        root.addHandler(logging.NullHandler())
    if not any(isinstance(h, _AcidctlWarnings) for h in own.handlers):
        own.addHandler(_AcidctlWarnings(logging.WARNING))


class AcidctlGroup(typer.core.TyperGroup):
    """The top-level group: global options anywhere after the command (kubectl's rule).

    ``acidctl state T -o json`` is parsed as ``acidctl -o json state T``: before click parses the
    arguments, every global option (and its value) found after the command name — and after a
    group's subcommand, or between the two — is moved in front of the command, after any global
    options already there (so the last one given wins, as for any repeated option). A command's
    own options are skipped with their values, so a value that looks like a global option
    (``--columns -o``) stays where it is; ``--`` ends the moving. No command option has the name
    of a global one (tests/cli/test_grammar.py), so moving never changes what a command gets."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if ctx.parent is None:
            args = self.hoist_global_options(ctx, list(args))
        return super().parse_args(ctx, args)

    def hoist_global_options(self, ctx: click.Context, args: list[str]) -> list[str]:
        glob = _OptionTable(self.params)
        # the leading global options, up to the command name
        i = 0
        while i < len(args):
            n = glob.consumed(args, i)
            if n is None:
                break
            i += n
        if i >= len(args) or args[i] == "--" or args[i].startswith("-"):
            return args  # no command (or an unknown option: click reports it)
        head, moved, rest = args[:i], [], []
        command: click.Command | None = self.get_command(ctx, args[i])
        rest.append(args[i])
        i += 1
        own = _OptionTable(command.params) if command is not None else None
        while i < len(args):
            a = args[i]
            if a == "--":
                rest.extend(args[i:])
                break
            n = own.consumed(args, i) if own is not None else None
            if n is not None:  # the command's own option (and its values) stays
                rest.extend(args[i : i + n])
                i += n
                continue
            n = glob.consumed(args, i)
            if n is not None:
                moved.extend(args[i : i + n])
                i += n
                continue
            if isinstance(command, click.Group) and not a.startswith("-"):
                # the subcommand of a group (``show compactions``): its options from here on
                command = command.get_command(ctx, a)
                own = _OptionTable(command.params) if command is not None else None
            rest.append(a)
            i += 1
        return head + moved + rest


# ``app`` with every command is this module's attribute ``app`` (see ``__getattr__``); inside,
# ``_app`` holds only the commands loaded so far.
_app = typer.Typer(
    name="acidctl",
    cls=AcidctlGroup,
    help="Inspect, validate, compact and clean Apache Hive ACID tables.",
    epilog="\n\n".join((PREVIEW_RULE, GLOBAL_RULE, ENVIRONMENT)),
    context_settings={"help_option_names": ["-h", "--help"]},
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    add_completion=False,
    suggest_commands=False,  # click's NoSuchCommand already suggests (typer's added it twice)
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
    "acidctl.cli.changes_cmd",
    "acidctl.cli.migrate_cmd",
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
    "changes": ("acidctl.cli.changes_cmd",),
    "migrate": ("acidctl.cli.migrate_cmd",),
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
                "Result format: text, json, wide (text with every column, nothing wrapped; also --wide) or "
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
            "--profile",
            metavar="NAME",
            envvar="ACIDCTL_PROFILE",
            help="Named profile from the config file (~/.acidctl.toml).",
        ),
    ] = None,
    wide: Annotated[
        bool,
        typer.Option(
            "--wide",
            envvar="ACIDCTL_WIDE",
            help="Text as -o wide: every column of each table (Hive's full SHOW layouts) and nothing wrapped. Without it, tables show the columns needed first, and only free text (reasons, messages) wraps to $COLUMNS or the terminal; names, paths and ids never split.",
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
        _quiet_library_logs(undo=True)
        logging.basicConfig(level=logging.INFO, handlers=[handler])
    else:
        _quiet_library_logs()
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
    for info in _app.registered_commands:
        if info.name in SUMMARIES:
            info.short_help = SUMMARIES[info.name]
    for group in _app.registered_groups:
        if group.name in SUMMARIES:
            group.short_help = SUMMARIES[group.name]
        for sub in group.typer_instance.registered_commands if group.typer_instance else ():
            key = f"{group.name} {sub.name}"
            if key in SUMMARIES:
                sub.short_help = SUMMARIES[key]


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
        if a.startswith("-o") and len(a) > 2 and not a.startswith("--"):  # -ojson
            value = a[2:]
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
    except getattr(cx, "NoArgsIsHelpError", ()) as e:
        # `acidctl`, `acidctl show`: the help exactly as --help prints it (Click 8.2+ raises it
        # as a usage error, exit 2; flattened into one error line it was a wall of text)
        code = ExitCode.USAGE
        if _argv_output_mode(args) == "json":
            _output(run).error(UsageError(f"missing command (see '{e.ctx.command_path} --help')"))
        else:
            sys.stderr.write(e.ctx.get_help() + "\n")
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
    fs_module = sys.modules.get("acidctl.fs")
    if fs_module is not None:  # delegation tokens the command fetched for its workers: cancelled
        fs_module.release_delegation_tokens()
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
