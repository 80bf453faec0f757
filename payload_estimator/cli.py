"""The ``payload-estimator`` command line and its commands.

The commands: ``estimate``, ``excite``, ``demo``, ``simulate``, ``replay``, ``calibrate``.

Every problem with the user's input ends the same way: one line on stderr,
``payload-estimator <command>: error: ...``, and exit status 2, never a
traceback. That holds for argparse's own errors (an unknown ``--robot``, a
number out of range) and for what the commands find (:class:`CommandError`),
and a command that needs an optional dependency that is not installed names
the extra to install.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import textwrap
from typing import NoReturn

from payload_estimator import __version__
from payload_estimator.commands import CommandError, missing_extra

__all__ = ["main", "build_parser", "OneLineErrorParser", "ParagraphHelpFormatter", "plain_text"]

_COMMANDS = ("estimate", "excite", "demo", "simulate", "replay", "calibrate")


class ParagraphHelpFormatter(argparse.HelpFormatter):
    """Help whose description keeps its paragraphs, each filled to the terminal's width.

    A paragraph whose lines are all indented (a command to copy) is kept as it is; the others are
    re-wrapped, so a description written at any width fits the terminal (argparse's default joins the
    paragraphs; its raw formatter keeps every line, however long)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = [p for p in re.split(r"\n\s*\n", plain_text(text).strip("\n")) if p.strip()]
        out = []
        for paragraph in paragraphs:
            lines = paragraph.split("\n")
            if all(line[:1].isspace() for line in lines):
                out.append("\n".join(indent + line.rstrip() for line in lines))
            else:
                out.append(textwrap.fill(" ".join(paragraph.split()), width, initial_indent=indent,
                                         subsequent_indent=indent, break_on_hyphens=False))
        return "\n\n".join(out)


class OneLineErrorParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (``PROG: error: MESSAGE``, exit status 2).

    It prints that line instead of the whole usage. ``--help`` is plain text: the commands' descriptions
    are their module docstrings, whose reStructuredText markup (:func:`plain_text`) is for the API
    documentation, not for a terminal."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", ParagraphHelpFormatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        # argparse takes a value that starts with "-" for a negative number only when it is one number;
        # ours are lists and payloads too: "--ft-noise -0.1,0.01" and "--payload -1@0,0,0.1" are values
        # (which then say what is wrong with them), not unknown options
        self._negative_number_matcher = _NEGATIVE_VALUE

    def format_help(self) -> str:
        """The help text, markup removed."""
        return plain_text(super().format_help())

    def error(self, message: str) -> NoReturn:
        """Exit with status 2 after printing ``message`` on one line, with a pointer to ``--help``."""
        text = " ".join(message.split())
        self.exit(2, f"{self.prog}: error: {text} (see {self.prog} --help)\n")


_NEGATIVE_VALUE = re.compile(r"^-\d*\.?\d+(?:[eE][-+]?\d+)?(?:[,@:].*)?$")
"""What argparse takes for a value, not an option, though it starts with a minus: a number, or one
that a list or a payload spec begins with."""
_ROLE = re.compile(r":[a-z]+:`(?:[^`<]*<)?~?([^`>]+)>?`")
_LITERAL = re.compile(r"``([^`]+)``|`([^`]+)`")


def plain_text(text: str) -> str:
    """``text`` with reStructuredText's roles and literals as plain words.

    ``:class:`~a.b.C``` becomes ``C`` (the tilde shows the last name only), ``:func:`a.b``` becomes
    ``a.b``, a role with a title ``:ref:`Title <target>``` becomes ``Title``, and a literal
    (double back-quotes, or single: interpreted text) loses its quotes."""

    def role(match: re.Match[str]) -> str:
        whole, target = match.group(0), match.group(1)
        if "<" in whole:  # a title: what comes before the target
            return whole[whole.index("`") + 1:whole.index("<")].strip()
        return target.rsplit(".", 1)[-1] if "`~" in whole else target

    return _LITERAL.sub(lambda m: m.group(1) or m.group(2), _ROLE.sub(role, text))


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of ``payload-estimator`` with a subcommand per available command module."""
    parser = OneLineErrorParser(
        prog="payload-estimator",
        description="Estimate a robot payload's mass, centre of mass and inertia tensor.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineErrorParser)
    for name in _COMMANDS:
        # a command module imports only the core at import time (see payload_estimator.commands)
        try:
            module = importlib.import_module(f"payload_estimator.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("payload_estimator.commands"):
                continue  # command not available in this build
            raise
        module.add_parser(sub).set_defaults(_run=module.run)
    return parser


def _fail(command: str | None, message: str) -> int:
    prog = f"payload-estimator {command}" if command else "payload-estimator"
    print(f"{prog}: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); return the exit status.

    0 on success; 2 with one line on stderr for the user's input (a :class:`CommandError`) or a
    missing optional dependency; 130 when interrupted.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except CommandError as exc:
        return _fail(args.command, str(exc))
    except ImportError as exc:
        extra = missing_extra(exc)
        if extra is None:
            raise
        return _fail(args.command, extra)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
