"""The README's examples run: every code block that starts with a ``# test_….py`` line is
written to that file and run through pytester, with the repository's strictness — the
adapter contract example against the real ``a2m.adapter``, over every binding."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from a2m_testing.bindings import BINDINGS

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
    result = pytester.runpytest("-v", "-rs")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) > 0, result.stdout.str()
    assert set(outcomes) <= {"passed", "skipped"}, result.stdout.str()
    # The one skip the README owns up to: the stdio binding under trio.
    skipped = [line for line in result.stdout.lines if line.startswith("SKIPPED")]
    assert len(skipped) == outcomes.get("skipped", 0), result.stdout.str()
    assert all("runs on asyncio only, not on trio" in line for line in skipped), skipped


_CONFTEST = re.compile(r"```python\n# conftest\.py\n(.*?)```", re.DOTALL)
_STRICT_INI = """
[pytest]
addopts = --strict-markers --strict-config -p no:cacheprovider
filterwarnings = error
"""


def test_the_async_example_ids_read_asyncio_and_the_binding(pytester: pytest.Pytester) -> None:
    """With anyio's own ``anyio_backend``, as the README says: ``[asyncio-http]``, and
    ``[trio-http]`` when trio is installed, its stdio run skipped."""
    pytester.makeini(_STRICT_INI)
    pytester.makepyfile(test_async_agent=EXAMPLES["test_async_agent.py"])
    result = pytester.runpytest("-v")
    name = "*test_an_async_agent_writes_its_state"
    expected = [f"{name}[[]asyncio-{b}[]] PASSED*" for b in BINDINGS]
    if importlib.util.find_spec("trio") is not None:
        expected += [f"{name}[[]trio-{b}[]] PASSED*" for b in BINDINGS if b != "stdio"]
        expected.append(f"{name}[[]trio-stdio[]] SKIPPED*")
    result.stdout.fnmatch_lines_random(expected)


def test_adding_a_binding_is_one_entry(pytester: pytest.Pytester) -> None:
    """The README's "Adding a binding" block, as a project's conftest.py: every client test
    also runs over the new binding, with its name as the id."""
    (conftest,) = _CONFTEST.findall(README.read_text(encoding="utf-8"))
    pytester.makeini(_STRICT_INI)
    pytester.makeconftest(conftest)
    pytester.makepyfile(
        test_added="""
        def test_every_binding(a2m_client, a2m_binding):
            written = a2m_client.remember({"content": "hello", "key": "greeting/first"})
            record = a2m_client.fetch("greeting/first").record
            assert record is not None and record.id == written.ids[0]
            if a2m_binding == "http-auth":
                assert a2m_client.supports("scopes")  # the token's principal owns it
                assert record.owner == "tester"
        """
    )
    # In a subprocess: the conftest adds to BINDINGS, which this process shares.
    result = pytester.runpytest_subprocess("-v")
    result.assert_outcomes(passed=len(BINDINGS) + 1)
    result.stdout.fnmatch_lines_random(
        [f"*test_every_binding[[]{b}[]] PASSED*" for b in (*BINDINGS, "http-auth")]
    )
