"""Every example in an ``aoe-tune ... --help`` parses with the parser of the command it names."""

from __future__ import annotations

import argparse
import re
import shlex

import pytest

from aoe_optuna.cli.main import main

HELPS = [[], ["export"], ["describe"], ["bench"], ["bench", "compare"],
         ["bench", "noise-floor"], ["bench", "missed-optimum"], ["bench", "diagnose"],
         ["bench", "race"], ["pretrain-policy"], ["operators"], ["doctor"], ["calibrate"],
         ["recheck"]]


class _Parsed(BaseException):
    """Raised right after a command's parser accepted its arguments: nothing runs."""


def _examples(help_text: str) -> list[str]:
    """The ``aoe-tune ...`` commands after a help's ``example(s):``, continuations joined."""
    joined = re.sub(r"\\\n\s*", " ", help_text)
    section = re.split(r"^examples?:", joined, maxsplit=1, flags=re.M)
    if len(section) < 2:
        return []
    return [" ".join(part.split()) for line in section[1].splitlines()
            for part in re.split(r";\s*then\s+", line) if part.strip().startswith("aoe-tune ")]


def _help(command: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The help as a wide terminal shows it: argparse wraps nothing an example could hide in."""
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--help"])
    assert exit_.value.code in (0, None)
    return capsys.readouterr().out


@pytest.mark.parametrize("command", HELPS, ids=lambda c: " ".join(c) or "tune")
def test_every_help_example_parses(command: list[str], capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")
    examples = _examples(_help(command, capsys))
    assert examples or command == ["bench"], "no example found in the help"
    parse = argparse.ArgumentParser.parse_args

    def parse_then_stop(self: argparse.ArgumentParser, args=None, namespace=None):  # noqa: ANN001
        for action in self._actions:  # the options and their arity, not the example's values
            action.type = None
        parse(self, args, namespace)
        raise _Parsed(self.prog)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    for example in examples:
        argv = shlex.split(example)[1:]
        try:
            code = main(argv)
        except _Parsed:
            continue
        except SystemExit as exc:
            code = exc.code
        err = capsys.readouterr().err
        pytest.fail(f"`{example}` (in {' '.join(['aoe-tune', *command, '--help'])}) does not "
                    f"parse: exit {code}: {err.strip()}")


def test_the_examples_are_found() -> None:
    text = "examples:\n  # a\n  aoe-tune --config x \\\n      --n-trials 3\n  aoe-tune doctor\n"
    assert _examples(text) == ["aoe-tune --config x --n-trials 3", "aoe-tune doctor"]
