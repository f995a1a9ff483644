# Generated from notebook 06_pretraining.ipynb by minibert_course.export: edit the notebook, not this file.
"""A loop's command line, made from its config dataclass (chapter 06's `PretrainConfig`, chapter 08's
`FinetuneConfig`): one flag per field, with the field's help, type and default.

Why from the dataclass: the config is the one description of a run (its fields, defaults and help); a parser written
beside it would drift from it. The types come from `typing.get_type_hints`, so `int | None`, `Literal[...]` (choices)
and `tuple[float, ...]` (several values) work as they are written, under `from __future__ import annotations` too.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing

__all__ = ["arg", "add_fields", "config_from_args"]


def arg(help: str, flag: str | None = None) -> dict:
    """A field's metadata: its help and its flag (default: --field-name)."""
    return {"help": help, "flag": flag}


def _flag_kind(hint) -> tuple[type, dict]:
    """(type, extra add_argument options) of a field's type: Optional[X] is X, Literal[...] gives choices, tuple[X, ...]
    takes one or more values."""
    origin, params = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        rest = [p for p in params if p is not type(None)]
        if len(rest) != 1:
            raise TypeError(f"{hint}: a flag takes one type (or it and None)")
        return _flag_kind(rest[0])
    if origin is typing.Literal:
        return type(params[0]), {"choices": list(params)}
    if origin is tuple:
        kind, _ = _flag_kind(params[0])
        return kind, {"nargs": "+"}
    if hint in (int, float, str, bool):
        return hint, {}
    raise TypeError(f"{hint}: no command-line type for it (int, float, str, bool, Optional, Literal or tuple)")


def add_fields(parser: argparse.ArgumentParser, config_class: type) -> None:
    """One flag per field of `config_class`, read from the field's metadata (`arg`), type and default."""
    hints = typing.get_type_hints(config_class)
    for f in dataclasses.fields(config_class):
        meta = f.metadata or arg("")
        flag = meta.get("flag") or "--" + f.name.replace("_", "-")
        kind, extra = _flag_kind(hints[f.name])
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        if kind is bool:
            parser.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=default,
                                help=meta.get("help", ""))
        else:
            parser.add_argument(flag, dest=f.name, type=kind, default=default, metavar=kind.__name__.upper(),
                                help=meta.get("help", "") + " (default: %(default)s)", **extra)


def config_from_args(config_class: type, args: argparse.Namespace | dict):
    """The config a parsed command line describes (tuple fields get tuples back)."""
    values = vars(args) if isinstance(args, argparse.Namespace) else dict(args)
    hints = typing.get_type_hints(config_class)
    kept = {}
    for f in dataclasses.fields(config_class):
        if f.name in values:
            value = values[f.name]
            kept[f.name] = tuple(value) if typing.get_origin(hints[f.name]) is tuple and value is not None else value
    return config_class(**kept)
