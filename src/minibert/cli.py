# Generated from notebook 06_pretraining.ipynb by minibert_course.export: edit the notebook, not this file.
"""A loop's command line, made from its config dataclass (chapter 06's `PretrainConfig`, chapter 08's
`FinetuneConfig`): one flag per field, with the field's help, type and default. A field that holds another config
(the run's `model`, a `BertConfig`) gives a flag to each of the inner fields its metadata names.

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


def arg(help: str, flag: str | None = None, fields: dict[str, dict] | None = None) -> dict:
    """A field's metadata: its help and its flag (default: --field-name). For a field that holds a config
    dataclass, `fields` gives the inner fields that are flags, each with its own `arg`."""
    return {"help": help, "flag": flag, "fields": fields}


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


def add_fields(parser: argparse.ArgumentParser, config_class: type, defaults=None) -> None:
    """One flag per field of `config_class`, read from the field's metadata (`arg`), type and default; `defaults`
    (an instance) replaces the class's defaults (`python -m minibert.train` gives Base-size ones). A field that
    holds a config gets one flag per inner field its metadata names, with the destination `field.inner`."""
    hints = typing.get_type_hints(config_class)
    for f in dataclasses.fields(config_class):
        meta = f.metadata or arg("")
        default = getattr(defaults, f.name) if defaults is not None else (
            f.default if f.default is not dataclasses.MISSING else f.default_factory())
        if dataclasses.is_dataclass(hints[f.name]):
            inner = typing.get_type_hints(hints[f.name])
            for name, inner_meta in (meta.get("fields") or {}).items():
                _add_flag(parser, f"{f.name}.{name}", name, inner_meta, inner[name], getattr(default, name))
        else:
            _add_flag(parser, f.name, f.name, meta, hints[f.name], default)


def _add_flag(parser: argparse.ArgumentParser, dest: str, name: str, meta: dict, hint, default) -> None:
    flag = meta.get("flag") or "--" + name.replace("_", "-")
    kind, extra = _flag_kind(hint)
    if kind is bool:
        parser.add_argument(flag, dest=dest, action=argparse.BooleanOptionalAction, default=default,
                            help=meta.get("help", ""))
    else:
        parser.add_argument(flag, dest=dest, type=kind, default=default, metavar=kind.__name__.upper(),
                            help=meta.get("help", "") + " (default: %(default)s)", **extra)


def config_from_args(config_class: type, args: argparse.Namespace | dict, defaults=None):
    """The config a parsed command line describes (tuple fields get tuples back; `field.inner` values go into the
    config that `field` holds, which starts from `defaults`' or the class's)."""
    values = vars(args) if isinstance(args, argparse.Namespace) else dict(args)
    hints = typing.get_type_hints(config_class)
    kept = {}
    for f in dataclasses.fields(config_class):
        if dataclasses.is_dataclass(hints[f.name]):
            inner = {k.split(".", 1)[1]: v for k, v in values.items() if k.startswith(f.name + ".")}
            start = getattr(defaults, f.name) if defaults is not None else f.default_factory()
            kept[f.name] = dataclasses.replace(start, **inner)
        elif f.name in values:
            value = values[f.name]
            kept[f.name] = tuple(value) if typing.get_origin(hints[f.name]) is tuple and value is not None else value
    return config_class(**kept)
