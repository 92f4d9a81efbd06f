"""qahub's argparse parser: a mistyped choice is one line naming the closest valid one, and an unknown flag is
reported by the (sub)command it was given to, with that command's usage."""

from __future__ import annotations

import argparse
import ast
import difflib
import re

# argparse's own wording (Python 3.10-3.13): "invalid choice: 'x' (choose from 'a', 'b')"
INVALID_CHOICE = re.compile(r"invalid choice: (?P<given>'.*?') \(choose from (?P<choices>.*)\)$")


class Parser(argparse.ArgumentParser):
    def parse_args(self, args=None, namespace=None):
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:  # argparse reports these from the top parser, with the top usage
            chosen(self, parsed).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def error(self, message):
        hint = did_you_mean(message)
        if hint is None:
            super().error(message)  # usage, then the message
        self.exit(2, f"{self.prog}: error: {hint}\n")


def did_you_mean(message: str) -> str | None:
    """An invalid-choice message with the closest choice named first; None for any other message."""
    found = INVALID_CHOICE.search(message)
    if found is None:
        return None
    try:
        given = ast.literal_eval(found["given"])
        choices = [str(c) for c in ast.literal_eval(f"[{found['choices']}]")]
    except (ValueError, SyntaxError):
        return None
    close = [c for c in choices if c.startswith(given)] or difflib.get_close_matches(given, choices, n=1, cutoff=0.5)
    where = message[: found.start()]
    if not close:
        return f"{where}invalid choice: {given!r} (choose from {', '.join(choices)})"
    return f"{where}invalid choice: {given!r}; did you mean {close[0]}? (choose from {', '.join(choices)})"


def chosen(parser: argparse.ArgumentParser, namespace) -> argparse.ArgumentParser:
    """The innermost subcommand parser that ``namespace`` went through."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            name = getattr(namespace, action.dest, None)
            if name in action.choices:
                return chosen(action.choices[name], namespace)
    return parser
