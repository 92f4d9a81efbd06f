"""`python -m pytest -m quick` touches every corpus: its builder's and its metric's test files each mark a test
quick, and every shared test that tests/conftest.py's QUICK names exists (a renamed test would drop out)."""

import ast
from pathlib import Path

from conftest import QUICK

from qahub import tasks

TESTS = Path(__file__).resolve().parent


def quick_tests(path: Path) -> set:
    """Names of the tests in ``path`` decorated ``@pytest.mark.quick``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)
            and any(ast.unparse(d) == "pytest.mark.quick" for d in node.decorator_list)}


def test_every_corpus_marks_quick_tests_of_its_builder_and_its_metric():
    unmarked = [f"test_{name}.py" for corpus, metric in tasks.scan().metric_of.items()
                for name in (f"{corpus}_builder", f"{metric}_metric") if not quick_tests(TESTS / f"test_{name}.py")]
    assert unmarked == []


def test_every_shared_quick_test_exists():
    missing = []
    for test_id in QUICK:
        path, name = test_id.split("::")
        tree = ast.parse((TESTS.parent / path).read_text(encoding="utf-8"))
        if name not in {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}:
            missing.append(test_id)
    assert missing == []


def test_the_scan_sees_a_quick_mark(tmp_path):
    module = tmp_path / "test_x.py"
    module.write_text("import pytest\n\n@pytest.mark.quick\ndef test_a():\n    pass\n\n\n"
                      "@pytest.mark.slow\ndef test_b():\n    pass\n", encoding="utf-8")
    assert quick_tests(module) == {"test_a"}
