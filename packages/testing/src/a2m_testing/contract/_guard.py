"""The guard that keeps a standard suite standard: a subclass that redefines one of its
tests must say why, with :func:`override_standard_test`, or the class is refused.

A silently replaced standard test is how an adapter "passes" a contract it does not honour;
declaring the override keeps it visible in review and in the test's own source."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

__all__ = ["StandardTests", "override_reason", "override_standard_test"]

F = TypeVar("F", bound=Callable[..., Any])

_REASON_ATTRIBUTE = "__a2m_override_reason__"


def override_standard_test(reason: str) -> Callable[[F], F]:
    """Declare that a test method deliberately replaces the standard test of the same name.

    ```python
    class TestMyAdapter(AdapterContract):
        @override_standard_test("our store keeps 6 decimal places of a float")
        def test_value_round_trips(self, adapter, value): ...
    ```
    """
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError("override_standard_test needs the reason for the override")

    def mark(test: F) -> F:
        setattr(test, _REASON_ATTRIBUTE, reason.strip())
        return test

    return mark


def override_reason(test: object) -> str | None:
    """Why ``test`` replaces a standard test, or ``None`` if it was never declared."""
    reason = getattr(test, _REASON_ATTRIBUTE, None)
    return reason if isinstance(reason, str) else None


class StandardTests:
    """Base of a standard suite. ``class Suite(StandardTests, standard=True)`` makes every
    ``test_*`` defined in ``Suite`` standard; any later subclass redefining one of them
    (even as ``None``) without :func:`override_standard_test` raises ``TypeError``."""

    standard_tests: ClassVar[frozenset[str]] = frozenset()
    """The names of the standard tests this class inherits."""

    def __init_subclass__(cls, *, standard: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        silent = sorted(
            name
            for name, attribute in vars(cls).items()
            if name in cls.standard_tests and override_reason(attribute) is None
        )
        if silent:
            names = ", ".join(silent)
            raise TypeError(
                f"{cls.__module__}.{cls.__qualname__} redefines the standard test(s) {names}. "
                "Standard tests are inherited, not rewritten: remove the redefinition, or "
                "declare it with @a2m_testing.contract.override_standard_test('why') "
                "(add @pytest.mark.xfail or pytest.skip inside to excuse a known gap)."
            )
        if standard:
            own = {name for name in vars(cls) if name.startswith("test_")}
            cls.standard_tests = cls.standard_tests | own
