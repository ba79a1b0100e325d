"""``GET /a2m/v1/openapi.json``: an OpenAPI 3.1 document of every route, whose schemas are
valid JSON Schema and are narrowed to what this server accepts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from rest_support import Rest, uid

from a2m_server import A2MServer, LimitsConfig, ServerConfig, TierConfig
from a2m_testing.servers import serve_http

ROUTES = {
    "/a2m/v1/openapi.json": {"get"},
    "/a2m/v1/{namespace}/entries": {"get", "post", "delete"},
    "/a2m/v1/{namespace}/entries/{key}": {"get", "delete"},
    "/a2m/v1/{namespace}/query": {"post"},
    "/a2m/v1/memory:describe": {"get", "post"},
}


def _document(url: str, **kwargs: Any) -> dict[str, Any]:
    response = httpx.get(url + "a2m/v1/openapi.json", timeout=30, **kwargs)
    assert response.status_code == 200
    document: dict[str, Any] = response.json()
    return document


def _validator(document: dict[str, Any], schema: dict[str, Any]) -> Draft202012Validator:
    registry: Registry[Any] = Registry().with_resource(
        "urn:doc",
        Resource.from_contents(
            {**document, "$schema": "https://json-schema.org/draft/2020-12/schema"}
        ),
    )
    return Draft202012Validator({"$ref": "urn:doc#" + schema["$ref"][1:]}, registry=registry)


@pytest.fixture(scope="module")
def document(url: str) -> dict[str, Any]:
    return _document(url)


def test_it_is_openapi_3_1_with_every_route(document: dict[str, Any]) -> None:
    assert document["openapi"] == "3.1.0"
    paths = document["paths"]
    for path, methods in ROUTES.items():
        assert set(paths[path]) - {"parameters"} == methods, path
    methods = [p for p in paths if "memory:" in p]
    assert len(methods) == 13
    assert "/a2m/v1/{namespace}/subscribe" in document["x-a2m-websocket"]
    for path, item in paths.items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            assert operation["operationId"]
            assert "500" in operation["responses"], (path, method)


def test_every_schema_is_valid_json_schema(document: dict[str, Any]) -> None:
    for schema in document["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)


def test_answers_match_their_documented_schemas(document: dict[str, Any], rest: Rest) -> None:
    schemas = document["components"]["schemas"]
    ns = uid("doc")
    entry = rest.write(
        ns, "k", "semantic", {"x": 1}, embedding=[1.0, 0.0, 0.0], meta={"tags": ["t"]}
    )
    _validator(document, {"$ref": "#/components/schemas/Entry"}).validate(entry)
    _validator(document, {"$ref": "#/components/schemas/EntryList"}).validate(rest.list(ns).json())
    scored = rest.query(ns, {"embedding": [1.0, 0.0, 0.0]}).json()
    _validator(document, {"$ref": "#/components/schemas/ScoredEntry"}).validate(scored[0])
    error = rest.read(ns, "missing").json()
    _validator(document, {"$ref": "#/components/schemas/RestErrorBody"}).validate(error)
    write = {"key": "k", "type": "external", "value": None}
    assert not _validator(document, {"$ref": "#/components/schemas/EntryWrite"}).is_valid(write)
    assert "EntryWrite" in schemas


def test_the_document_follows_the_server() -> None:
    config = ServerConfig(
        tiers=(TierConfig("scratch", kind="working"), TierConfig("facts", kind="semantic")),
        limits=LimitsConfig(max_records_per_call=7, max_content_length=99, max_recall_limit=40),
    ).with_capabilities(["core", "tiers", "keys", "embeddings"])
    with A2MServer(config) as server, serve_http(server) as url:
        before = _document(url)
        server.connect().call(
            "memory/remember", {"records": [{"content": "v", "embedding": [1.0, 2.0]}]}
        )
        after = _document(url)
    schemas = after["components"]["schemas"]
    record = schemas["RecordInput"]["properties"]
    assert record["content"]["maxLength"] == 99
    assert {"salience", "owner", "session", "uri"}.isdisjoint(record)  # undeclared capabilities
    assert any(b.get("enum") == ["scratch", "facts"] for b in record["tier"]["anyOf"])
    assert schemas["RememberParams"]["properties"]["records"]["maxItems"] == 7
    assert schemas["QueryRequest"]["properties"]["top_k"]["maximum"] == 40
    width = next(b for b in record["embedding"]["anyOf"] if b.get("type") == "array")
    assert (width["minItems"], width["maxItems"]) == (2, 2)
    before_width = next(
        b
        for b in before["components"]["schemas"]["RecordInput"]["properties"]["embedding"]["anyOf"]
        if b.get("type") == "array"
    )
    assert "maxItems" not in before_width
    paths = after["paths"]
    assert "/a2m/v1/memory:promote" in paths
    assert "/a2m/v1/memory:reinforce" not in paths  # salience is not declared
    limit = [
        p for p in paths["/a2m/v1/{namespace}/entries"]["get"]["parameters"] if p["name"] == "limit"
    ]
    assert limit[0]["schema"]["maximum"] == 40
    assert "security" not in after


@pytest.fixture
def auth_url(server: A2MServer) -> Iterator[str]:
    with serve_http(server, tokens={"t": "alice"}) as url:
        yield url


def test_with_auth_the_document_declares_bearer_tokens(auth_url: str) -> None:
    assert httpx.get(auth_url + "a2m/v1/openapi.json").status_code == 401
    document = _document(auth_url, headers={"Authorization": "Bearer t"})
    assert document["components"]["securitySchemes"] == {
        "bearer": {"type": "http", "scheme": "bearer"}
    }
    assert document["security"] == [{"bearer": []}]
    assert "401" in document["paths"]["/a2m/v1/{namespace}/entries"]["post"]["responses"]
    assert "owner" in document["components"]["schemas"]["RecallParams"]["properties"]
