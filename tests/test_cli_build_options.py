"""The options that name a build are declared once (`cli.build_arguments`): every command that takes
a build (scan, diff, check, verify) has the same ones, with the same help, and refuses --python
together with --prefix (before, drift's copy lacked that exclusion and let --prefix win silently).

Truth: the parsers themselves, and the one-line usage error a user sees."""
from __future__ import annotations

import pytest

from offsets import cli

COMMANDS = {"scan": [], "diff": ["OLD.yaml"], "check": ["--baseline", "generated"], "verify": ["T.yaml"]}


def subparser(name):
    sub = next(a for a in cli.parser()._actions if a.dest == "command")
    return sub.choices[name]


def build_group(name):
    """(title, [(option strings, dest, metavar, choices, help)]) of the command's build group."""
    p = subparser(name)
    groups = [g for g in p._action_groups if {a.dest for a in g._group_actions} >= set(cli.BUILD_OPTIONS)]
    assert len(groups) == 1, f"{name}: the build options are not one group"
    g = groups[0]
    return g.title, [(tuple(a.option_strings), a.dest, a.metavar, a.choices, a.help) for a in g._group_actions]


def test_each_command_has_the_same_build_options():
    first = build_group("scan")[1]
    assert [dest for _, dest, *_ in first] == list(cli.BUILD_OPTIONS)
    for name in COMMANDS:
        title, options = build_group(name)
        assert options == first, name
        assert title.startswith("the build"), title


@pytest.mark.parametrize("name", COMMANDS)
def test_python_and_prefix_exclude_each_other(name):
    with pytest.raises(cli.UsageError, match="not allowed with argument"):
        cli.parser().parse_args([name, *COMMANDS[name], "--python", "python3", "--prefix", "/opt/py"])
    args = cli.parser().parse_args([name, *COMMANDS[name], "--prefix", "/opt/py"])
    assert (args.python, args.prefix) == (None, "/opt/py") and cli.has_build_options(args)
