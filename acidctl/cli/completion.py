"""Shell completion: Click 8's protocol, with what acidctl's options need on top.

The scripts in ``completions/`` (written by ``make docs``, acidctl/cli/docgen.py) are Click 8's
own bash/zsh/fish scripts, generated from the classes below, so the scripts and the answers
(``_ACIDCTL_COMPLETE=bash_complete|zsh_complete|fish_complete acidctl``) always speak the same
protocol. On top of Click's answers:

* an option whose metavar lists its choices (``--engine auto|local|spark``, ``--to parquet|orc``)
  completes those choices;
* a ``PATH``/``FILE``/``DIR``/``DEST`` argument or option completes file names (Click does so
  only for ``click.Path`` types);
* after the command, the global options (``-o``, ``--metastore``, ...) are offered too, and
  their values (``acidctl state T -o <TAB>``) complete as they do before the command.

Importing this module registers the classes under ``bash``, ``zsh`` and ``fish``
(``click.shell_completion.add_completion_class``); :func:`acidctl.cli.main.main` imports it only
when the completion variable is set.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import click
from click.shell_completion import (
    BashComplete,
    CompletionItem,
    FishComplete,
    ZshComplete,
    _resolve_context,
    _resolve_incomplete,
    add_completion_class,
)

COMPLETE_VAR = "_ACIDCTL_COMPLETE"
#: a metavar that is a list of literal choices: lower-case words joined by ``|``, or one
#: lower-case word (``--timestamp-precision us``: placeholders are upper case, ``DIR``, ``URL``)
_CHOICES = re.compile(r"^[a-z0-9][a-z0-9_.-]*(\|[a-z0-9][a-z0-9_.-]*)*$")
#: metavars (or parameter names) whose values are local paths
_PATHY = re.compile(r"(^|[^A-Z])(PATH|FILE|DIR|DEST|DIRECTORY)([^A-Z]|$)")


def _metavar(param: click.Parameter) -> str:
    return param.metavar or (param.name or "").upper()


def _value_completions(param: click.Parameter, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
    """Completions of ``param``'s value: its own (Click's choices, typer's autocompletion), else
    the choices its metavar lists, else file names for a path-like parameter."""
    items = param.shell_complete(ctx, incomplete)
    if items:
        return items
    metavar = _metavar(param)
    if _CHOICES.match(metavar):
        return [CompletionItem(c) for c in metavar.split("|") if c.startswith(incomplete)]
    if _PATHY.search(metavar):
        return [CompletionItem(incomplete, type="file")]
    return []


#: root options not offered after a command (they act only before it)
_NOT_AFTER_COMMAND = frozenset({"--version"})


def _option_items(command: click.Command, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
    out = []
    for p in command.get_params(ctx):
        if not isinstance(p, click.Option) or p.hidden:
            continue
        for name in [*p.opts, *p.secondary_opts]:
            if name.startswith(incomplete):
                out.append(CompletionItem(name, help=p.help))
    return out


class _Acidctl:
    """The shared ``get_completions`` of the three shell classes (a mixin before Click's class)."""

    cli: click.Command
    ctx_args: Any
    prog_name: str
    complete_var: str
    name: str
    source_template: str

    if TYPE_CHECKING:

        def source_vars(self) -> Any: ...  # Click's ShellComplete.source_vars (next in the MRO)

    def source(self) -> str:
        """Click's script, asking with typer's instruction order: typer (which runs the CLI)
        answers ``_ACIDCTL_COMPLETE=complete_bash``, where Click's scripts say ``bash_complete``
        (typer/completion.py ``shell_complete``). No bash version probe."""
        text = self.source_template % self.source_vars()
        text = text.replace(f"{self.complete_var}={self.name}_complete", f"{self.complete_var}=complete_{self.name}")
        # fish: split "type,value<TAB>help" at the first comma only, so a help text keeps its commas
        return text.replace('(string split "," $completion)', '(string split -m 1 "," $completion)')

    def get_completions(self, args: list[str], incomplete: str) -> list[CompletionItem]:
        ctx = _resolve_context(self.cli, self.ctx_args, self.prog_name, args)
        obj, incomplete = _resolve_incomplete(ctx, args, incomplete)
        root = ctx.find_root()
        in_command = ctx.parent is not None
        if in_command and ("--" not in args) and args:
            # the value of a global option given after the command (``state T -o <TAB>``)
            prev = args[-1]
            own = {n for p in ctx.command.get_params(ctx) if isinstance(p, click.Option) for n in p.opts}
            if prev not in own:
                for p in root.command.get_params(root):
                    if isinstance(p, click.Option) and not p.is_flag and prev in p.opts:
                        return _value_completions(p, root, incomplete)
        if isinstance(obj, click.Parameter):
            return _value_completions(obj, ctx, incomplete)
        items = obj.shell_complete(ctx, incomplete)
        if in_command and incomplete.startswith("-"):
            have = {i.value for i in items}
            items += [
                i
                for i in _option_items(root.command, root, incomplete)
                if i.value not in have and i.value not in _NOT_AFTER_COMMAND
            ]
        return items


class AcidctlBash(_Acidctl, BashComplete):
    pass


class AcidctlZsh(_Acidctl, ZshComplete):
    pass


class AcidctlFish(_Acidctl, FishComplete):
    pass


SHELLS: dict[str, type] = {"bash": AcidctlBash, "zsh": AcidctlZsh, "fish": AcidctlFish}


def script(shell: str) -> str:
    """The completion script for ``shell`` (what ``_ACIDCTL_COMPLETE=source_bash acidctl``
    prints)."""
    return str(SHELLS[shell](click.Command("acidctl"), {}, "acidctl", COMPLETE_VAR).source())


for _name, _cls in SHELLS.items():
    add_completion_class(_cls, _name)
