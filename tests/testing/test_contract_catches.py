"""The contract suite is not vacuous: run through pytester against the real adapter
(``a2m.adapter``) broken on purpose — a subclass overriding one method — the standard tests
of the broken rule fail, and no others do. Each variant runs through both suites: the sync
one on ``A2MAdapter``, the async one on ``AsyncA2MAdapter``."""

from __future__ import annotations

import textwrap

import pytest

HEADER = """
    import pytest
    from a2m.adapter import A2MAdapter, AsyncA2MAdapter
    from a2m_types.rest import readable_text
    from a2m_testing.contract import AdapterContract, AsyncAdapterContract, override_standard_test

    class Suite(AdapterContract):
        adapter_class = A2MAdapter

        @pytest.fixture
        def adapter(self, a2m_client):
            return self.adapter_class(a2m_client, "acme/wf-1/agent-a")

        @pytest.fixture
        def other_adapter(self, a2m_client):
            return self.adapter_class(a2m_client, "acme/wf-1")

    class AsyncSuite(AsyncAdapterContract):
        adapter_class = AsyncA2MAdapter

        @pytest.fixture
        def adapter(self, a2m_async_client):
            return self.adapter_class(a2m_async_client, "acme/wf-1/agent-a")

        @pytest.fixture
        def other_adapter(self, a2m_async_client):
            return self.adapter_class(a2m_async_client, "acme/wf-1")
"""


@pytest.fixture
def strict(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(
        """
        [pytest]
        addopts = --strict-markers -p no:cacheprovider --a2m-bindings=in-process
        filterwarnings = error
        """
    )
    return pytester


def _failed(pytester: pytest.Pytester, source: str) -> set[str]:
    pytester.makepyfile(HEADER + source)
    outcome = pytester.inline_run()
    passed, _, failed = outcome.listoutcomes()
    assert passed, "the rest of the suite still passes"
    return {report.nodeid.split("::")[-1].split("[")[0] for report in failed}


# Each variant is written for AsyncA2MAdapter; its sync twin, for A2MAdapter, is the same
# code without ``async`` and ``await`` (see _for_suite).
BROKEN = {
    "read raises for a missing key": (
        """
        async def read(self, key, **options):
            entry = await super().read(key, **options)
            if entry is None:
                raise KeyError(key)
            return entry
        """,
        # The adapter's delete finds entries with read_many, not read: only the scenarios
        # reading a missing key break.
        {"test_read_of_a_missing_key_is_none", "test_delete_removes_the_entry"},
    ),
    "upsert makes a new entry": (
        """
        async def write(self, key, type, value, embedding=None, meta=None):
            await super().delete(key)
            return await super().write(key, type, value, embedding, meta)
        """,
        {"test_upsert_keeps_id_and_created_at"},
    ),
    "query ignores top_k and min_score": (
        """
        async def query(self, embedding=None, type=None, top_k=5, min_score=None, **options):
            return await super().query(embedding, type, 100, None, **options)
        """,
        {"test_query_honours_top_k", "test_query_honours_min_score"},
    ),
    "query ranks backwards": (
        """
        async def query(self, *args, **options):
            return list(reversed(await super().query(*args, **options)))
        """,
        {
            "test_query_ranks_by_embedding_similarity",
            "test_query_honours_top_k",
            "test_query_honours_min_score",
            "test_query_honours_tags",
        },
    ),
    "write drops the tags": (
        """
        async def write(self, key, type, value, embedding=None, meta=None):
            meta = {name: given for name, given in (meta or {}).items() if name != "tags"}
            return await super().write(key, type, value, embedding, meta)
        """,
        {"test_meta_round_trips", "test_query_honours_tags"},
    ),
    "delete raises for a missing key": (
        """
        async def delete(self, key):
            if await self.read(key) is None:
                raise LookupError(key)
            await super().delete(key)
        """,
        {
            "test_delete_of_a_missing_key_is_not_an_error",
            "test_another_namespace_cannot_delete_the_entry",
        },
    ),
    "values come back as text": (
        """
        async def read(self, key, **options):
            entry = await super().read(key, **options)
            if entry is not None:
                entry = entry.model_copy(update={"value": readable_text(entry.value)})
            return entry
        """,
        {"test_value_round_trips", "test_memory_type_round_trips"},
    ),
    "query stays in its own namespace": (
        """
        async def query(self, *args, namespace=None, **options):
            return await super().query(*args, namespace=namespace or self.namespace, **options)
        """,
        {"test_reads_cross_namespaces"},
    ),
    "query reads only its own subtree": (
        """
        async def query(self, *args, namespace=None, recursive=False, **options):
            where = namespace or self.namespace
            return await super().query(*args, namespace=where, recursive=True, **options)
        """,
        {"test_reads_cross_namespaces"},
    ),
}

SUITES = {"sync": ("A2MAdapter", "Suite"), "async": ("AsyncA2MAdapter", "AsyncSuite")}


def _for_suite(methods: str, suite: str) -> str:
    """``methods`` (written for the async adapter) as the ``suite`` adapter's code."""
    if suite == "sync":
        methods = methods.replace("async def ", "def ").replace("await ", "")
    return textwrap.indent(textwrap.dedent(methods).strip("\n"), " " * 8)


@pytest.mark.parametrize("suite", list(SUITES))
@pytest.mark.parametrize("broken", list(BROKEN))
def test_each_broken_rule_fails_its_standard_test(
    strict: pytest.Pytester, broken: str, suite: str
) -> None:
    methods, expected = BROKEN[broken]
    adapter_class, suite_class = SUITES[suite]
    source = f"""
    class Broken({adapter_class}):
{_for_suite(methods, suite)}

    class TestBroken({suite_class}):
        adapter_class = Broken
    """
    assert _failed(strict, source) == expected


def test_without_other_adapter_the_cross_namespace_tests_skip(strict: pytest.Pytester) -> None:
    strict.makepyfile(
        HEADER
        + """
    class TestNoOther(AdapterContract):
        @pytest.fixture
        def adapter(self, a2m_client):
            return A2MAdapter(a2m_client, "acme/wf-1/agent-a")
    """
    )
    result = strict.runpytest("-rs")
    result.assert_outcomes(passed=32, skipped=3)
    result.stdout.fnmatch_lines(["*define an `other_adapter` fixture*"])


def test_other_adapter_must_be_above_the_adapter(strict: pytest.Pytester) -> None:
    source = """
    class TestSiblings(Suite):
        @pytest.fixture
        def other_adapter(self, a2m_client):
            return A2MAdapter(a2m_client, "acme/wf-1/agent-b")
    """
    strict.makepyfile(HEADER + source)
    result = strict.runpytest()
    result.assert_outcomes(passed=32, failed=3)
    result.stdout.fnmatch_lines(["*other_adapter must be scoped to a namespace above*"])


def test_the_async_suite_refuses_a_sync_adapter(strict: pytest.Pytester) -> None:
    source = """
    class TestMismatched(AsyncAdapterContract):
        @pytest.fixture
        def anyio_backend(self):
            return "asyncio"

        @pytest.fixture
        def adapter(self, a2m_client):
            return A2MAdapter(a2m_client, "acme/wf-1/agent-a")
    """
    strict.makepyfile(HEADER + source)
    result = strict.runpytest("-k", "test_read_of_a_missing_key_is_none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*AsyncAdapterContract tests async adapters*"])


def test_async_fixtures_may_build_the_adapters(strict: pytest.Pytester) -> None:
    source = """
    class TestAsyncFixtures(AsyncAdapterContract):
        @pytest.fixture
        async def adapter(self, a2m_async_client):
            await a2m_async_client.describe()
            return AsyncA2MAdapter(a2m_async_client, "acme/wf-1/agent-a")

        @pytest.fixture
        async def other_adapter(self, a2m_async_client):
            return AsyncA2MAdapter(a2m_async_client, "acme/wf-1")
    """
    strict.makepyfile(HEADER + source)
    strict.runpytest().assert_outcomes(passed=35)


def test_a_silent_override_stops_collection_with_the_reason(strict: pytest.Pytester) -> None:
    source = """
    class TestCheating(Suite):
        def test_query_honours_top_k(self, adapter):
            pass
    """
    strict.makepyfile(HEADER + source)
    result = strict.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "*TypeError: *TestCheating redefines the standard test(s) test_query_honours_top_k*",
        ]
    )


def test_a_declared_override_runs_in_place_of_the_standard_test(
    strict: pytest.Pytester,
) -> None:
    source = """
    class TestDeclared(Suite):
        @override_standard_test("this store has no text search yet")
        @pytest.mark.xfail(reason="no text search yet", strict=True)
        def test_query_by_text(self, adapter):
            raise NotImplementedError
    """
    strict.makepyfile(HEADER + source)
    strict.runpytest().assert_outcomes(passed=34, xfailed=1)
