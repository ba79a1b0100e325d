"""§2 Conformance and §4.1 ``memory/describe``: truthful discovery, undeclared capabilities
answered with -32003 (never -32601), unknown parameters ignored."""

from __future__ import annotations

from typing import Any

import pytest
from spec_support import (
    CAPABILITY_METHODS,
    METHOD_CAPABILITY,
    SCHEMA,
    Peer,
    PeerFactory,
    RpcFailure,
    rpc_error,
    uid,
)

from a2m_server import ServerConfig

ALL_CAPABILITIES = frozenset(SCHEMA["$defs"]["capability"]["enum"])
CORE_RECORD_FIELDS = {"id", "content", "created_at", "role", "metadata", "group", "score"}


def minimal_params(method: str) -> dict[str, Any]:
    """Params that make ``method`` valid and harmless on any store."""
    choices: dict[str, dict[str, Any]] = {
        "memory/describe": {},
        "memory/remember": {"records": [{"content": "a harmless record"}]},
        "memory/recall": {"query": "harmless"},
        "memory/timeline": {"limit": 1},
        "memory/forget": {"ids": [uid("absent")]},
        "memory/promote": {"ids": [uid("absent")], "tier": "semantic"},
        "memory/consolidate": {},
        "memory/reinforce": {"ids": [uid("absent")]},
        "memory/fetch": {"key": uid("unused")},
        "memory/session/list": {},
        "memory/session/close": {"session": uid("absent")},
        "memory/events": {},
        "memory/events/subscribe": {},
        "memory/events/unsubscribe": {},
        "memory/summarize": {"ids": [uid("absent")]},
    }
    return choices[method]


FUTURE_PARAMS = {"x_future_param": {"nested": [1, None, "two"]}, "zz_flag": True, "n": None}


@pytest.fixture(scope="module")
def fresh_peer(binding: str, module_peer_factory: PeerFactory) -> Peer:
    """A default server of this module's own: these tests consolidate and close sessions."""
    return module_peer_factory(binding)


@pytest.fixture(scope="module")
def core_only(binding: str, module_peer_factory: PeerFactory) -> Peer:
    """A server declaring only ``core``: by config in-process and over HTTP, by the
    ``--capabilities`` flag over stdio."""
    if binding == "stdio":
        return module_peer_factory(binding, cli_args=("--capabilities", "core"))
    return module_peer_factory(binding, ServerConfig().with_capabilities(["core"]))


# --- §4.1 describe --------------------------------------------------------------------------


@pytest.mark.spec("4.1")
def test_4_1_describe_reports_protocol_name_capabilities_and_methods(peer: Peer) -> None:
    described = peer.describe()
    assert described["protocol"] == "a2m/0.1"
    assert isinstance(described["name"], str)
    assert described["name"]
    capabilities = set(described["capabilities"])
    assert "core" in capabilities
    # All eleven are implemented; over unauthenticated HTTP scopes is withheld (§6).
    expected = ALL_CAPABILITIES - ({"scopes"} if peer.binding == "http" else set())
    assert capabilities == expected
    declared_methods = {m for m, cap in METHOD_CAPABILITY.items() if cap in capabilities}
    assert set(described["methods"]) == declared_methods


@pytest.mark.spec("4.1")
def test_4_1_describe_reports_limits_tiers_events_summarize_prompt_embeddings(
    peer: Peer,
) -> None:
    described = peer.describe()
    defaults = ServerConfig().limits
    assert described["limits"] == {
        "max_records_per_call": defaults.max_records_per_call,
        "max_recall_limit": defaults.max_recall_limit,
        "max_content_length": defaults.max_content_length,
        "max_metadata_bytes": defaults.max_metadata_bytes,
        "max_metadata_depth": 64,
    }
    tiers = {tier["name"]: tier for tier in described["tiers"]}
    assert [tiers[name]["kind"] for name in ("working", "episodic", "semantic", "procedural")] == [
        "working",
        "episodic",
        "semantic",
        "procedural",
    ]
    assert all(isinstance(tier["count"], int) for tier in tiers.values())
    assert described["events"] == {"push": peer.push}
    assert described["summarize"]["model"] is None
    assert "auto" in described["prompt"]["styles"]
    assert "template" in described["prompt"]["methods"]
    embeddings = described["embeddings"]
    assert embeddings["metric"] == "cosine"
    assert "cosine" in embeddings["metrics"]
    assert "dimensions" in embeddings


@pytest.mark.spec("4.1")
@pytest.mark.parametrize("version", ["a2m/0.2", "a2m/0.0", "a2m/1.0", "a2m/1.1", "mcp/2025", "?"])
def test_4_1_describe_refuses_an_incompatible_protocol_with_32007(peer: Peer, version: str) -> None:
    """§4.1/§7: never pretend to speak a version it does not (0.x needs the exact minor)."""
    failure = rpc_error(peer, "memory/describe", {"protocol": version})
    assert failure.code == -32007


@pytest.mark.spec("4.1")
def test_4_1_describe_without_protocol_still_answers(peer: Peer) -> None:
    assert peer.call("memory/describe")["protocol"] == "a2m/0.1"


# --- §2 truthful declarations ---------------------------------------------------------------


@pytest.mark.spec("2")
def test_2_every_declared_method_is_implemented(fresh_peer: Peer) -> None:
    """§2: a server MUST NOT advertise what it does not implement: each listed method
    answers (never -32601 or -32003) with a result of the schema's shape."""
    for method in fresh_peer.describe()["methods"]:
        if method == "memory/events/subscribe" and not fresh_peer.push:
            continue  # §8.3 requires -32003 there; see test_spec_events
        fresh_peer.call(method, minimal_params(method))
    if fresh_peer.subscribed:
        fresh_peer.call("memory/events/unsubscribe")


@pytest.mark.spec("2")
def test_2_unknown_params_are_ignored_by_every_method(fresh_peer: Peer) -> None:
    """§2: a server MUST NOT reject parameters it does not recognise; it MUST ignore them
    (the schema's ``maxProperties: 0`` on consolidate included, see spec/README)."""
    for method in fresh_peer.describe()["methods"]:
        if method == "memory/events/subscribe" and not fresh_peer.push:
            continue
        fresh_peer.call(method, {**minimal_params(method), **FUTURE_PARAMS})
    if fresh_peer.subscribed:
        fresh_peer.call("memory/events/unsubscribe")


@pytest.mark.spec("2")
def test_2_unknown_fields_inside_records_and_prompt_options_are_ignored(peer: Peer) -> None:
    tag = uid("tag")
    (record_id,) = peer.remember(
        {"content": "future fields", "metadata": {"tag": tag}, "x_future_field": [1, 2]}
    )
    result = peer.call(
        "memory/timeline",
        {"where": {"tag": tag}, "prompt": {"style": "facts", "x_future_option": 1}},
    )
    assert [r["id"] for r in result["records"]] == [record_id]
    assert "x_future_field" not in result["records"][0]
    assert isinstance(result["prompt"], str)


# --- §2 undeclared capabilities ----------------------------------------------------------------


@pytest.mark.spec("2")
def test_2_describe_of_a_core_only_server_declares_core_only(core_only: Peer) -> None:
    described = core_only.describe()
    assert described["capabilities"] == ["core"]
    assert set(described["methods"]) == set(CAPABILITY_METHODS["core"])
    for absent in ("tiers", "events", "summarize", "prompt", "embeddings"):
        assert absent not in described, absent


@pytest.mark.spec("2")
@pytest.mark.parametrize(
    "method", sorted(m for m, cap in METHOD_CAPABILITY.items() if cap != "core")
)
def test_2_undeclared_capability_method_is_32003_never_32601(core_only: Peer, method: str) -> None:
    """§2: a call belonging to an undeclared capability MUST be CAPABILITY_NOT_SUPPORTED."""
    failure = rpc_error(core_only, method, minimal_params(method))
    assert failure.code == -32003, failure.message
    # Even with params that would be invalid, the capability decides first.
    failure = rpc_error(core_only, method, {})
    assert failure.code == -32003, failure.message


@pytest.mark.spec("2")
@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("memory/recall", {"tier": "working"}),
        ("memory/recall", {"key_prefix": "a/b"}),
        ("memory/recall", {"embedding": [0.1, 0.2]}),
        ("memory/recall", {"owner": "someone"}),
        ("memory/timeline", {"tier": "working"}),
        ("memory/timeline", {"key_prefix": "a/b"}),
        ("memory/timeline", {"owner": "someone"}),
        ("memory/forget", {"tier": "working"}),
        ("memory/forget", {"key_prefix": "a/b"}),
        ("memory/forget", {"ids": ["x"], "owner": "someone"}),
        ("memory/describe", {"owner": "someone"}),
        ("memory/remember", {"records": [{"content": "x"}], "owner": "someone"}),
        ("memory/remember", {"records": [{"content": "x"}], "session": "s"}),
        ("memory/remember", {"records": [{"content": "x", "tier": "working"}]}),
        # Refused for being there, whatever its value: the value is never read.
        ("memory/forget", {"ids": ["x"], "owner": {}}),
        ("memory/consolidate", {"owner": ["not", "a", "name"]}),
    ],
    ids=lambda value: value if isinstance(value, str) else "-".join(sorted(value)),
)
def test_2_param_of_an_undeclared_capability_is_32003(
    core_only: Peer, method: str, params: dict[str, Any]
) -> None:
    """§2/§4.2: a field of an undeclared capability is -32003; in a record, ``tier`` is."""
    failure = rpc_error(core_only, method, params)
    assert failure.code == -32003, failure.message


@pytest.mark.spec("4.2")
def test_4_2_record_fields_of_undeclared_capabilities_are_ignored_not_refused(
    core_only: Peer,
) -> None:
    """§4.2: a server MUST ignore record fields of capabilities it does not declare
    (except ``tier``), and a record carries only the fields of declared capabilities."""
    tag = uid("tag")
    record = {
        "content": "fields of capabilities this server lacks",
        "metadata": {"tag": tag},
        "role": "user",
        "group": "g",
        "salience": 2.5,
        "owner": "someone",
        "session": "s",
        "key": "k/1",
        "embedding": [0.5, 0.25],
        "uri": "https://example.invalid/doc",
        "media_type": "text/plain",
    }
    (record_id,) = core_only.remember(record)
    (stored,) = core_only.timeline(where={"tag": tag})
    assert stored["id"] == record_id
    assert set(stored) <= CORE_RECORD_FIELDS, set(stored) - CORE_RECORD_FIELDS
    assert stored["role"] == "user"
    assert stored["group"] == "g"


@pytest.mark.spec("4.2")
def test_4_2_an_ignored_record_field_is_not_read_so_its_shape_is_no_error(
    core_only: Peer,
) -> None:
    """What a server ignores it does not also refuse for its shape: a record field of an
    undeclared capability is left out before the record is checked."""
    tag = uid("tag")
    record = {
        "content": "odd shapes in fields this server ignores",
        "metadata": {"tag": tag},
        "owner": {},
        "session": ["s"],
        "salience": "high",
        "key": 7,
        "embedding": "not a vector",
    }
    (record_id,) = core_only.remember(record)
    (stored,) = core_only.timeline(where={"tag": tag})
    assert stored["id"] == record_id
    assert set(stored) <= CORE_RECORD_FIELDS


@pytest.mark.spec("4.16")
def test_4_16_a_server_without_prompt_ignores_the_prompt_param(core_only: Peer) -> None:
    tag = uid("tag")
    core_only.remember({"content": "prompt is ignored here", "metadata": {"tag": tag}})
    for method in ("memory/recall", "memory/timeline"):
        result = core_only.call(method, {"where": {"tag": tag}, "prompt": True})
        assert len(result["records"]) == 1
        assert "prompt" not in result
        assert "prompt_ids" not in result


@pytest.mark.spec("3.7")
def test_3_7_embeddings_flag_is_ignored_without_the_capability(core_only: Peer) -> None:
    tag = uid("tag")
    core_only.remember({"content": "no vectors here", "metadata": {"tag": tag}})
    (record,) = core_only.call("memory/recall", {"where": {"tag": tag}, "embeddings": True})[
        "records"
    ]
    assert "embedding" not in record


@pytest.mark.spec("2")
@pytest.mark.parametrize(
    "missing", sorted(cap for cap in CAPABILITY_METHODS if cap != "core"), ids=str
)
def test_2_each_capability_left_out_answers_its_methods_with_32003(
    make_peer: PeerFactory, missing: str
) -> None:
    """A server started without one capability refuses exactly that capability's methods
    with -32003 and still serves the others (in-process: the rule is binding-free)."""
    peer = make_peer("in-process", ServerConfig().with_capabilities(ALL_CAPABILITIES - {missing}))
    described = peer.describe()
    assert missing not in described["capabilities"]
    for method in CAPABILITY_METHODS[missing]:
        assert method not in described["methods"]
        assert rpc_error(peer, method, minimal_params(method)).code == -32003
    for method in described["methods"]:
        try:
            peer.call(method, minimal_params(method))
        except RpcFailure as failure:  # pragma: no cover - reported with the method
            pytest.fail(f"{method} failed without {missing}: {failure}")
