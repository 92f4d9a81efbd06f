"""argparse errors: a mistyped choice is one line naming the closest valid one; an unknown flag is reported by
the subcommand it was given to, with that subcommand's usage (issue 28, item 4)."""

import pytest

from qahub import cli


def _error(capsys, *argv):
    with pytest.raises(SystemExit) as stop:
        cli.main(list(argv))
    assert stop.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("argv, line", [
    (["build", "jemhopq"], "qahub build: error: argument corpus: invalid choice: 'jemhopq'; did you mean jemhopqa? "
                           "(choose from doc2dial, jemhopqa, jeopardy, limur, topical_chat)"),
    (["evaluate", "jeopardy", "--predictions", "p.json"],
     "qahub evaluate: error: argument metric: invalid choice: 'jeopardy'; did you mean jeopardy_meteor? "
     "(choose from doc2dial, jemhopqa, jeopardy_meteor, limur, topical_chat)"),
    (["biuld"], "qahub: error: argument command: invalid choice: 'biuld'; did you mean build? (choose from build, "
                "publish, publish-metric, metric-copy, evaluate, list, demo, harness-tasks, report, publish-results, pick-docs, models)"),
    (["build", "xyzzy"], "qahub build: error: argument corpus: invalid choice: 'xyzzy' "
                         "(choose from doc2dial, jemhopqa, jeopardy, limur, topical_chat)"),
])
def test_a_mistyped_choice_is_one_line_naming_the_closest(capsys, argv, line):
    assert _error(capsys, *argv) == line + "\n"


@pytest.mark.parametrize("argv, prog", [
    (["build", "--bogus", "jemhopqa"], "qahub build"),
    (["evaluate", "limur", "--predictions", "p.json", "--references", "r", "--bogus"], "qahub evaluate limur"),
    (["list", "--bogus"], "qahub list"),
])
def test_an_unknown_flag_shows_the_subcommand_s_usage(capsys, argv, prog):
    err = _error(capsys, *argv)
    assert err.startswith(f"usage: {prog} ")
    assert err.endswith(f"{prog}: error: unrecognized arguments: --bogus\n")
