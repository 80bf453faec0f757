"""Command-line options made from the settings' own declarations.

A setting (:class:`~payload_estimator.settings.Settings`) declares its type, default, description,
choices and check once; :func:`add_setting_options` offers it as ``--name-with-dashes`` with that help
and those checks, and :func:`setting_overrides` reads back the ones given. The options of the
estimators are every setting some estimator declares it reads
(:data:`~payload_estimator.settings.ESTIMATOR_SETTINGS`), so a new estimator option is its estimator's
``settings_options`` plus one settings field, and every command that estimates offers it.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from dataclasses import MISSING, Field, fields
from typing import Any

from payload_estimator.core.estimators import ESTIMATORS
from payload_estimator.settings import ESTIMATOR_SETTINGS, Settings

__all__ = [
    "add_setting_options",
    "setting_overrides",
    "add_estimator_options",
    "ESTIMATOR_OPTION_SETTINGS",
    "option_name",
]

ESTIMATOR_OPTION_SETTINGS: tuple[str, ...] = ("estimator", *ESTIMATOR_SETTINGS, "point_density", "max_points",
                                               "cloud_max_points")
"""The settings of :func:`add_estimator_options`: the estimator, the options some estimator reads, and
how a shape becomes point masses."""

_ALIASES: dict[str, tuple[str, ...]] = {
    "estimator": ("--method",),
    "regularization": ("--lambda",),
    "ft_noise_std": ("--ft-noise",),
    "point_density": ("--density",),
}
"""Other spellings of the same options, accepted too (not shown in the help)."""

_FIELDS: dict[str, Field] = {f.name: f for f in fields(Settings)}


def option_name(setting: str) -> str:
    """``--point-density`` for the setting ``point_density``."""
    return "--" + setting.replace("_", "-")


def _default(f: Field) -> Any:
    return f.default_factory() if f.default_factory is not MISSING else f.default


def _checked(f: Field, value: Any) -> Any:
    check = f.metadata.get("check")
    problem = check(value) if check is not None else None
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return value


def _number(f: Field, integer: bool) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {'whole ' if integer else ''}number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        return _checked(f, value)

    return parse


def _numbers(f: Field, count: int) -> Callable[[str], list[float]]:
    def parse(text: str) -> list[float]:
        parts = text.split(",")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {count} numbers separated by commas, got {text!r}") from None
        if len(values) != count or not all(math.isfinite(v) for v in values):
            raise argparse.ArgumentTypeError(f"must be {count} finite numbers separated by commas, got {text!r}")
        return _checked(f, values)

    return parse


def _add(p: argparse.ArgumentParser, name: str, default: Any, description: str | None) -> None:
    f = _FIELDS[name]
    base = _default(f)
    shown = base if default is None else default
    description = description or f.metadata["description"]
    kwargs: dict[str, Any] = {"dest": name, "default": None}
    choices = f.metadata.get("choices")
    if isinstance(base, bool):
        kwargs["action"] = argparse.BooleanOptionalAction
    elif choices:  # named in the help (the usage line would not fit 80 columns)
        kwargs.update(choices=list(choices), metavar="NAME")
    elif isinstance(base, list):
        kwargs.update(type=_numbers(f, len(base)), metavar=",".join(["X"] * len(base)))
    elif isinstance(base, (int, float)):
        kwargs.update(type=_number(f, isinstance(base, int)), metavar="N" if isinstance(base, int) else "X")
    shown_text = ",".join(f"{v:g}" for v in shown) if isinstance(shown, list) else f"{shown}"
    kwargs["help"] = f"{description} (default {shown_text})".replace("%", "%%")
    p.add_argument(option_name(name), **kwargs)
    for alias in _ALIASES.get(name, ()):
        alias_kwargs = {k: v for k, v in kwargs.items() if k != "help"}
        p.add_argument(alias, **alias_kwargs, help=argparse.SUPPRESS)


def add_setting_options(p: argparse.ArgumentParser, names: Sequence[str],
                        defaults: dict[str, Any] | None = None, descriptions: dict[str, str] | None = None) -> None:
    """Add one option per setting of ``names``, typed and checked as the setting declares it.

    Not given, an option is None (the command's base settings apply).

    Args:
        p: the command's parser.
        names: settings fields, in the order of the help.
        defaults: what the help says the default is, where the command's base settings differ from
            :class:`Settings`'.
        descriptions: help texts in place of the settings' descriptions.
    """
    for name in names:
        _add(p, name, (defaults or {}).get(name), (descriptions or {}).get(name))


def setting_overrides(args: argparse.Namespace, names: Sequence[str]) -> dict[str, Any]:
    """The settings of ``names`` given on the command line (the others are not in the result)."""
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


def add_estimator_options(p: argparse.ArgumentParser, default: str | None = None) -> None:
    """Add ``--estimator`` (the registry's names, each with its summary) and every estimator option.

    The options are :data:`ESTIMATOR_OPTION_SETTINGS`; ``default`` is the estimator the command
    uses when none is given."""
    summaries = "; ".join(f"{n}: {c.summary}" for n, c in ESTIMATORS.items())
    add_setting_options(p, ESTIMATOR_OPTION_SETTINGS, defaults={"estimator": default} if default else None,
                        descriptions={"estimator": summaries})
