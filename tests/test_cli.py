"""minibert.cli: a loop's command line made from its config dataclass (chapter 06)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Literal

import pytest

from minibert.cli import add_fields, arg, config_from_args
from minibert.finetune import FinetuneConfig
from minibert.pretrain import PretrainConfig


@dataclass
class Run:
    steps: int = field(default=10, metadata=arg("how many steps"))
    lr: float | None = field(default=None, metadata=arg("peak learning rate", "--learning-rate"))
    mode: Literal["fast", "exact"] = field(default="exact", metadata=arg("how to compute"))
    rates: tuple[float, ...] = field(default=(0.15, 0.3), metadata=arg("masking rates"))
    name: str = "run"  # no metadata: still a flag
    check: bool = field(default=False, metadata=arg("check as it goes"))


def parser_for(config_class) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="test", exit_on_error=False)
    add_fields(parser, config_class)
    return parser


def test_every_field_is_a_flag_with_its_type_and_default():
    defaults = config_from_args(Run, parser_for(Run).parse_args([]))
    assert defaults == Run()
    got = config_from_args(Run, parser_for(Run).parse_args(
        ["--steps", "7", "--learning-rate", "2e-4", "--mode", "fast", "--rates", "0.05", "0.45", "--name", "x",
         "--check"]))
    assert got == Run(steps=7, lr=2e-4, mode="fast", rates=(0.05, 0.45), name="x", check=True)
    assert type(got.steps) is int and type(got.lr) is float and type(got.rates) is tuple
    assert config_from_args(Run, parser_for(Run).parse_args(["--check", "--no-check"])).check is False


def test_bad_values_are_refused_by_the_parser_and_the_help_says_the_default():
    parser = parser_for(Run)
    with pytest.raises(argparse.ArgumentError, match="invalid choice: 'slow'"):
        parser.parse_args(["--mode", "slow"])
    with pytest.raises(argparse.ArgumentError, match="invalid int value: '1.5'"):
        parser.parse_args(["--steps", "1.5"])
    text = parser.format_help()
    assert "how many steps (default: 10)" in text and "--learning-rate FLOAT" in text


def test_a_type_the_command_line_cannot_read_is_named():
    @dataclass
    class Odd:
        table: dict = field(default_factory=dict)

    with pytest.raises(TypeError, match="no command-line type for it"):
        add_fields(argparse.ArgumentParser(), Odd)


@pytest.mark.parametrize("config_class", [PretrainConfig, FinetuneConfig])
def test_the_loops_configs_round_trip_through_their_command_line(config_class):
    assert config_from_args(config_class, parser_for(config_class).parse_args([])) == config_class()


@dataclass
class Inner:
    width: int = 8
    depth: int = 2
    act: str = "gelu"  # not named as a flag: kept from the default


@dataclass
class Outer:
    steps: int = 5
    inner: Inner = field(default_factory=Inner, metadata=arg("the inner config", fields={
        "width": arg("its width"), "depth": arg("its depth", "--layers")}))


def test_a_config_held_by_the_run_gets_flags_for_the_fields_its_metadata_names():
    parser = parser_for(Outer)
    assert config_from_args(Outer, parser.parse_args(["--width", "16", "--layers", "3"])) == Outer(
        inner=Inner(width=16, depth=3))
    assert "--act" not in parser.format_help() and "its depth" in parser.format_help()
    custom = Outer(steps=9, inner=Inner(width=4, act="relu"))  # defaults from an instance (as minibert.train's)
    with_defaults = argparse.ArgumentParser(exit_on_error=False)
    add_fields(with_defaults, Outer, custom)
    assert config_from_args(Outer, with_defaults.parse_args([]), custom) == custom
    assert config_from_args(Outer, with_defaults.parse_args(["--width", "6"]), custom) == Outer(
        steps=9, inner=Inner(width=6, act="relu"))


def test_pretrain_config_holds_the_model_config_and_reads_its_json_back():
    import dataclasses
    import json

    from minibert.config import BertConfig

    cfg = config_from_args(PretrainConfig, parser_for(PretrainConfig).parse_args(
        ["--hidden-size", "48", "--num-attention-heads", "4", "--dropout", "0.2", "--seq-len", "64"]))
    assert (cfg.model.hidden_size, cfg.model.num_attention_heads, cfg.model.hidden_dropout_prob) == (48, 4, 0.2)
    model = cfg.model_config(123)
    assert (model.vocab_size, model.max_position_embeddings, model.intermediate_size) == (123, 64, 512)
    assert PretrainConfig.from_dict(json.loads(json.dumps(dataclasses.asdict(cfg)))) == cfg
    earlier = {k: v for k, v in dataclasses.asdict(PretrainConfig()).items() if k != "model"}  # a flat, older file
    earlier.update(hidden_size=64, num_hidden_layers=3, intermediate_size=256)
    assert PretrainConfig.from_dict(earlier).model == BertConfig.tiny(hidden_size=64, num_hidden_layers=3,
                                                                      intermediate_size=256)
