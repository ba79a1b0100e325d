"""The README's examples run: every code block that starts with a ``# test_….py`` line is
written to that file and run through pytester, with the repository's strictness — the
adapter contract example against the real ``a2m.adapter``, over every binding."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).parents[2] / "packages" / "testing" / "README.md"
_BLOCK = re.compile(r"```python\n# (test_\w+\.py)\n(.*?)```", re.DOTALL)
EXAMPLES = dict(_BLOCK.findall(README.read_text(encoding="utf-8")))


def test_the_readme_has_runnable_examples() -> None:
    assert len(EXAMPLES) >= 5, sorted(EXAMPLES)
    contract = [source for source in EXAMPLES.values() if "AdapterContract" in source]
    assert contract, "the contract example is runnable"
    assert all("from a2m.adapter import" in source for source in contract), contract


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_a_readme_example_passes(pytester: pytest.Pytester, name: str) -> None:
    pytester.makeini(
        """
        [pytest]
        addopts = --strict-markers --strict-config -p no:cacheprovider
        filterwarnings = error
        """
    )
    pytester.makepyfile(**{name.removesuffix(".py"): EXAMPLES[name]})
    result = pytester.runpytest("-v")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) > 0, result.stdout.str()
    assert set(outcomes) <= {"passed"}, result.stdout.str()
