"""The plugin's client matrix, through pytester: one run per binding with the binding in the
id, and the ways to narrow it (marker, command-line option, ini option)."""

from __future__ import annotations

import pytest

CLIENT_TESTS = """
    import pytest

    def test_sync(a2m_client):
        a2m_client.remember("the deploy key rotates")
        assert a2m_client.recall("deploy key").records

    async def test_async(a2m_async_client):
        await a2m_async_client.remember("the deploy key rotates")
        assert (await a2m_async_client.recall("deploy key")).records
"""


@pytest.fixture
def strict(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester directory as strict as this repository: warnings are errors, markers
    must be registered, and async tests run on asyncio only."""
    pytester.makeini(
        """
        [pytest]
        addopts = --strict-markers --strict-config -p no:cacheprovider
        filterwarnings = error
        """
    )
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture
        def anyio_backend():
            return "asyncio"
        """
    )
    return pytester


def test_clients_run_once_per_binding_with_the_binding_as_id(strict: pytest.Pytester) -> None:
    strict.makepyfile(CLIENT_TESTS)
    result = strict.runpytest("-v")
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines_random(
        [
            "*test_sync[[]in-process[]] PASSED*",
            "*test_sync[[]stdio[]] PASSED*",
            "*test_sync[[]http[]] PASSED*",
            "*test_sync[[]rest[]] PASSED*",
            "*test_async[[]in-process[]] PASSED*",
            "*test_async[[]stdio[]] PASSED*",
            "*test_async[[]http[]] PASSED*",
            "*test_async[[]rest[]] PASSED*",
        ]
    )


def test_the_marker_narrows_a_test_a_class_or_a_module(strict: pytest.Pytester) -> None:
    strict.makepyfile(
        """
        import pytest

        pytestmark = pytest.mark.a2m_bindings("in-process", "http")

        def test_module_wide(a2m_client, a2m_binding):
            assert a2m_binding in ("in-process", "http")

        @pytest.mark.a2m_bindings("stdio")
        def test_own(a2m_client, a2m_binding):
            assert a2m_binding == "stdio"

        @pytest.mark.a2m_bindings("http")
        class TestClass:
            def test_in_class(self, a2m_binding):
                assert a2m_binding == "http"
        """
    )
    result = strict.runpytest("-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines_random(
        [
            "*test_module_wide[[]in-process[]] PASSED*",
            "*test_module_wide[[]http[]] PASSED*",
            "*test_own[[]stdio[]] PASSED*",
            "*TestClass::test_in_class[[]http[]] PASSED*",
        ]
    )


def test_the_option_narrows_every_test(strict: pytest.Pytester) -> None:
    strict.makepyfile(CLIENT_TESTS)
    result = strict.runpytest("-v", "--a2m-bindings=in-process, http")
    result.assert_outcomes(passed=4)
    result.stdout.no_fnmatch_line("*stdio*")


def test_the_ini_option_narrows_every_test(strict: pytest.Pytester) -> None:
    strict.makeini(
        """
        [pytest]
        addopts = --strict-markers --strict-config -p no:cacheprovider
        filterwarnings = error
        a2m_bindings = in-process
        """
    )
    strict.makepyfile(CLIENT_TESTS)
    result = strict.runpytest("-v")
    result.assert_outcomes(passed=2)
    # The command line wins over the ini file.
    strict.runpytest("--a2m-bindings=http").assert_outcomes(passed=2)


def test_marker_and_option_intersect(strict: pytest.Pytester) -> None:
    strict.makepyfile(
        """
        import pytest

        @pytest.mark.a2m_bindings("stdio", "http")
        def test_narrowed(a2m_binding):
            assert a2m_binding == "http"

        @pytest.mark.a2m_bindings("stdio")
        def test_nothing_left(a2m_binding):
            raise AssertionError("never runs")
        """
    )
    result = strict.runpytest("-rs", "--a2m-bindings=in-process,http")
    result.assert_outcomes(passed=1, skipped=1)


def test_an_unknown_binding_on_the_command_line_is_a_usage_error(
    strict: pytest.Pytester,
) -> None:
    strict.makepyfile(CLIENT_TESTS)
    result = strict.runpytest("--a2m-bindings=in-process,carrier-pigeon")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown A2M binding(s) carrier-pigeon; known: in-process*"])


def test_an_unknown_binding_in_the_marker_fails_that_run_only(strict: pytest.Pytester) -> None:
    strict.makepyfile(
        """
        import pytest

        @pytest.mark.a2m_bindings("http", "smoke-signals")
        def test_marked(a2m_client):
            assert a2m_client.describe().capabilities
        """
    )
    result = strict.runpytest("-v")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*unknown A2M binding 'smoke-signals' in @pytest.mark.a2m_bindings; known: *"]
    )


def test_a_test_may_parametrize_the_binding_itself(strict: pytest.Pytester) -> None:
    strict.makepyfile(
        """
        import pytest

        @pytest.mark.parametrize("a2m_binding", ["http"], indirect=True)
        def test_chosen(a2m_client, a2m_binding):
            assert a2m_binding == "http"
        """
    )
    result = strict.runpytest("-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_chosen[[]http[]] PASSED*"])


def test_tests_without_a2m_clients_are_left_alone(strict: pytest.Pytester) -> None:
    strict.makepyfile(
        """
        import pytest

        @pytest.mark.parametrize("n", [1, 2])
        def test_plain(n):
            assert n

        def test_server_only(a2m_server):
            assert a2m_server.connect().call("memory/describe")["protocol"] == "a2m/0.1"
        """
    )
    result = strict.runpytest("-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines_random(["*test_plain[[]1[]]*", "*test_server_only PASSED*"])


def test_the_client_factory_opens_configured_servers_on_every_binding(
    strict: pytest.Pytester,
) -> None:
    strict.makepyfile(
        """
        import pytest
        from a2m import ReadOnly

        def test_core_only(a2m_binding, a2m_client_factory):
            client = a2m_client_factory(a2m_binding, capabilities=["core", "keys"])
            assert client.capabilities == {"core", "keys"}

        def test_read_only(a2m_binding, a2m_client_factory):
            client = a2m_client_factory(a2m_binding, read_only=True, max_retries=0)
            with pytest.raises(ReadOnly):
                client.remember("refused")

        async def test_async_core_only(a2m_binding, a2m_async_client_factory):
            client = a2m_async_client_factory(a2m_binding, capabilities=["core"])
            assert (await client.describe()).capabilities == ["core"]
        """
    )
    result = strict.runpytest("-v")
    result.assert_outcomes(passed=12)
