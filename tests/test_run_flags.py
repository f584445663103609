"""The run flags are declared once, in ``ccbench.scenario.flags.FLAGS``: every row names a
field the scenario has, and the CLI's options, their help and ``Scenario.from_flags``
all follow from the table."""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner

from ccbench.cli import cli
from ccbench.cli.scenario_flags import option
from ccbench.scenario import Scenario
from ccbench.scenario.flags import FLAGS, field_info
from ccbench.scenario.host import presets
from ccbench.scenario.link import AQMS


def test_every_row_names_a_field_of_the_scenario() -> None:
    for flag in FLAGS:
        if flag.field:
            assert field_info(flag) is not None, flag.option
        else:
            assert flag.apply is not None and flag.help, flag.option
    assert len({f.option for f in FLAGS}) == len({f.key for f in FLAGS}) == len(FLAGS)


def test_a_flag_without_help_of_its_own_shows_its_fields_description() -> None:
    for flag in FLAGS:
        if flag.help is None:
            info, _ = field_info(flag)
            # Up to the example put after the first clause, or a link (which becomes a path).
            words = re.split(r"[;\[]", info.description)[0]
            assert words[1:] in option(flag).help, flag.option


def test_help_lists_every_flag_with_its_default() -> None:
    result = CliRunner().invoke(cli, ["run", "--help"], terminal_width=1000)
    assert result.exit_code == 0
    lines = {line.split()[0]: line for line in result.output.splitlines() if line.strip().startswith("--")}
    for flag in FLAGS:
        assert flag.option in lines, flag.option
    assert "default 100Mbit" in lines["--rate"] and "default 6MiB" in lines["--rwnd"]
    assert "e.g. 1bdp, 256KB or 100pkt" in lines["--buffer"]


def test_choices_and_presets_come_from_the_scenario_package() -> None:
    aqm = option(next(f for f in FLAGS if f.option == "--aqm"))
    assert tuple(aqm.type.choices) == AQMS
    cpu = option(next(f for f in FLAGS if f.option == "--cpu")).help
    assert all(name in cpu for name in presets())


def test_integer_fields_take_integers() -> None:
    # Optional or not, with a range or not: the range is the field's to check.
    for name in ("--flows", "--seed", "--repeat", "--pacing-stride", "--fixed-cwnd", "--tso-rtt-log"):
        assert option(next(f for f in FLAGS if f.option == name)).type is click.INT, name


def test_from_flags_takes_only_the_tables_keywords() -> None:
    with pytest.raises(TypeError, match="colour"):
        Scenario.from_flags(colour="red")


def test_pacing_on_and_off_are_booleans() -> None:
    on = CliRunner().invoke(cli, ["run", "--cca", "bbr", "--pacing", "off", "--duration", "100ms", "--json"])
    assert on.exit_code == 0, on.output
    pacing = option(next(f for f in FLAGS if f.option == "--pacing"))
    ctx = click.Context(click.Command("run"))
    assert pacing.process_value(ctx, "on") is True and pacing.process_value(ctx, "off") is False
