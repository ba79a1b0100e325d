"""§4.16 the ``prompt`` option of recall and timeline: styles, budgets that drop whole
records, ``prompt_ids``, ``cite``, and text that never changes what is recalled."""

from __future__ import annotations

from typing import Any

import pytest
from spec_support import Peer, rpc_error, uid

CONVERSATION = [
    ("user", "Which editor do I use at work?"),
    ("assistant", "You told me you use Helix with a dark theme."),
    ("user", "And at home?"),
    ("assistant", "At home you use Emacs with the Dracula theme."),
    ("memory", "The user prefers dark themes in every editor."),
]


def _conversation(peer: Peer, **extra: Any) -> tuple[str, list[str]]:
    tag = uid("tag")
    session = uid("session")
    ids = [
        peer.remember(
            {"content": text, "role": role, "metadata": {"tag": tag}, **extra}, session=session
        )[0]
        for role, text in CONVERSATION
    ]
    return tag, ids


def _ids(result: dict[str, Any]) -> list[str]:
    return [r["id"] for r in result["records"]]


@pytest.mark.spec("4.16")
def test_4_16_describe_reports_styles_and_methods(peer: Peer) -> None:
    prompt = peer.describe()["prompt"]
    assert "auto" in prompt["styles"]
    assert "template" in prompt["methods"]
    # §4.16: model is offered only when the server can actually run one.
    assert "model" not in prompt["methods"] or prompt.get("model")


@pytest.mark.spec("4.16")
@pytest.mark.parametrize("method", ["memory/recall", "memory/timeline"])
@pytest.mark.parametrize(
    "option",
    [
        True,
        {},
        {"style": "auto"},
        {"style": "facts"},
        {"style": "transcript"},
        {"method": "template"},
    ],
    ids=["true", "empty", "auto", "facts", "transcript", "template"],
)
def test_4_16_prompt_adds_text_and_prompt_ids_and_leaves_records_alone(
    peer: Peer, method: str, option: Any
) -> None:
    tag, _ = _conversation(peer)
    params = {"where": {"tag": tag}, "limit": 10}
    if method == "memory/recall":
        params["query"] = "editor theme"
    plain = peer.call(method, params)
    rendered = peer.call(method, {**params, "prompt": option})
    assert _ids(rendered) == _ids(plain), "§4.16: asking for text MUST NOT change what is recalled"
    assert [r["content"] for r in rendered["records"]] == [r["content"] for r in plain["records"]]
    assert isinstance(rendered["prompt"], str)
    assert rendered["prompt"]
    assert set(rendered["prompt_ids"]) <= set(_ids(rendered))
    assert set(rendered["prompt_ids"]) == set(_ids(rendered))  # no budget: everything fits
    for record in rendered["records"]:
        assert record["content"] in rendered["prompt"]
    assert "prompt" not in plain
    assert "prompt_ids" not in plain


@pytest.mark.spec("4.16")
def test_4_16_template_rendering_is_deterministic(peer: Peer) -> None:
    tag, _ = _conversation(peer)
    for style in ("auto", "facts", "transcript"):
        once = peer.call("memory/timeline", {"where": {"tag": tag}, "prompt": {"style": style}})
        again = peer.call("memory/timeline", {"where": {"tag": tag}, "prompt": {"style": style}})
        assert once["prompt"] == again["prompt"]
        assert once["prompt_ids"] == again["prompt_ids"]


@pytest.mark.spec("4.16")
@pytest.mark.parametrize("style", ["facts", "transcript", "auto"])
@pytest.mark.parametrize("method", ["memory/recall", "memory/timeline"])
def test_4_16_budget_drops_whole_records_and_is_never_exceeded(
    peer: Peer, style: str, method: str
) -> None:
    tag, _ = _conversation(peer)
    params: dict[str, Any] = {"where": {"tag": tag}}
    if method == "memory/recall":
        params["query"] = "theme editor home work"
    full = peer.call(method, {**params, "prompt": {"style": style}})
    total = len(full["prompt"])
    for budget in (0, 1, 30, 60, 100, total - 1, total, total + 50):
        result = peer.call(method, {**params, "prompt": {"style": style, "budget": budget}})
        text, kept = result["prompt"], result["prompt_ids"]
        assert len(text) <= budget, f"budget {budget}: {len(text)} characters"
        assert _ids(result) == _ids(full), "the budget trims the text, never the records"
        contents = {r["id"]: r["content"] for r in result["records"]}
        for record_id, content in contents.items():
            if record_id in kept:
                assert content in text, "a kept record appears whole"
            else:
                assert content not in text, "a dropped record does not appear at all"
        if budget >= total:
            assert kept == full["prompt_ids"]
    empty = peer.call(method, {**params, "prompt": {"style": style, "budget": 0}})
    assert empty["prompt"] == ""
    assert empty["prompt_ids"] == []


@pytest.mark.spec("4.16")
def test_4_16_cite_marks_each_entry_with_its_uri_or_key(peer: Peer) -> None:
    tag = uid("tag")
    key = f"{uid('cite')}/fact"
    uri = "https://docs.example.invalid/handbook#leave"
    peer.remember(
        {"content": "Annual leave is 25 days.", "uri": uri, "metadata": {"tag": tag}},
        {"content": "Parental leave is 16 weeks.", "key": key, "metadata": {"tag": tag}},
        session=uid("session"),
    )
    cited = peer.call("memory/timeline", {"where": {"tag": tag}, "prompt": {"cite": True}})
    assert uri in cited["prompt"]
    assert key in cited["prompt"]
    uncited = peer.call("memory/timeline", {"where": {"tag": tag}, "prompt": {"cite": False}})
    assert uri not in uncited["prompt"]
    assert key not in uncited["prompt"]


@pytest.mark.spec("4.16")
@pytest.mark.parametrize("method", ["memory/recall", "memory/timeline"])
@pytest.mark.parametrize(
    "option", [False, {"method": "none"}, {"method": "none", "style": "facts"}]
)
def test_4_16_method_none_or_false_renders_nothing(peer: Peer, method: str, option: Any) -> None:
    tag, _ = _conversation(peer)
    result = peer.call(method, {"where": {"tag": tag}, "prompt": option})
    assert "prompt" not in result
    assert "prompt_ids" not in result
    assert len(result["records"]) == len(CONVERSATION)


@pytest.mark.spec("4.16")
@pytest.mark.parametrize("method", ["memory/recall", "memory/timeline"])
@pytest.mark.parametrize(
    "option",
    [
        {"method": "model"},
        {"method": "model", "model": "some-llm"},
        {"method": "template", "model": "some-llm"},
        {"model": "some-llm"},
        {"method": "telepathy"},
        {"style": "haiku"},
        {"budget": -1},
        {"budget": "short"},
        "yes",
        5,
    ],
    ids=[
        "model",
        "model-named",
        "template-with-a-model",
        "a-model-alone",
        "unknown-method",
        "unknown-style",
        "negative-budget",
        "text-budget",
        "string",
        "number",
    ],
)
def test_4_16_a_method_or_option_not_offered_is_32602(peer: Peer, method: str, option: Any) -> None:
    """§4.16: a method the server does not offer MUST fail with INVALID_PARAMS, never be
    silently substituted (this server offers no ``model``)."""
    assert "model" not in peer.describe()["prompt"]["methods"]
    assert rpc_error(peer, method, {"prompt": option}).code == -32602


@pytest.mark.spec("4.16")
@pytest.mark.parametrize(
    ("option", "field"),
    [
        ({"style": "haiku"}, "prompt.style"),
        ({"budget": -1}, "prompt.budget"),
        ({"method": "telepathy"}, "prompt.method"),
        ("yes", "prompt"),
    ],
)
def test_4_16_a_bad_prompt_names_the_field_at_fault(peer: Peer, option: Any, field: str) -> None:
    """``prompt`` is a boolean or an options object: the error names the option that is
    wrong, not "a valid boolean" for an object whose style is unknown."""
    error = rpc_error(peer, "memory/recall", {"query": "x", "prompt": option})
    assert error.code == -32602
    assert error.data["errors"][0]["field"] == field
