"""Bearer authentication (§6, §6.1): token files (plaintext and hashed keys, the lookup,
the errors a malformed file gets) and the HTTP binding refusing or admitting callers."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2m_server.auth import TokenFileError, TokenMap, hash_token, load_tokens
from a2m_server.bindings.http import WELL_KNOWN_PATH
from a2m_server.server import A2MServer
from a2m_testing.servers import serve_http
from a2m_types import ErrorCode

pytestmark = pytest.mark.spec("6.1")


def _write(tmp_path: Path, content: Any, *, raw: bool = False) -> Path:
    path = tmp_path / "tokens.json"
    path.write_text(content if raw else json.dumps(content), encoding="utf-8")
    return path


def test_plaintext_token_maps_to_its_principal(tmp_path: Path) -> None:
    tokens = load_tokens(_write(tmp_path, {"s3cr3t-token": "alice", "other": "bob"}))
    assert tokens.principal_for("s3cr3t-token") == "alice"
    assert tokens.principal_for("other") == "bob"
    assert len(tokens) == 2
    assert tokens.principals == {"alice", "bob"}


def test_hashed_key_matches_the_token_it_hashes(tmp_path: Path) -> None:
    digest = hashlib.sha256(b"hunter2").hexdigest()
    tokens = load_tokens(_write(tmp_path, {f"sha256:{digest}": "carol"}))
    assert tokens.principal_for("hunter2") == "carol"
    # The key itself is not a token.
    assert tokens.principal_for(f"sha256:{digest}") is None


def test_hashed_key_accepts_upper_case_hex() -> None:
    digest = hashlib.sha256(b"tok").hexdigest().upper()
    assert TokenMap({f"sha256:{digest}": "dave"}).principal_for("tok") == "dave"


def test_hash_token_produces_a_key_the_map_accepts() -> None:
    key = hash_token("abc")
    assert key == "sha256:" + hashlib.sha256(b"abc").hexdigest()
    assert TokenMap({key: "erin"}).principal_for("abc") == "erin"


@pytest.mark.parametrize("token", ["", "wrong", "s3cr3t-token ", "S3CR3T-TOKEN", "s3cr3t"])
def test_unknown_or_near_miss_tokens_authenticate_nobody(token: str) -> None:
    assert TokenMap({"s3cr3t-token": "alice"}).principal_for(token) is None


def test_non_ascii_token_is_looked_up_without_error() -> None:
    tokens = TokenMap({"jeton-é": "zoé"})
    assert tokens.principal_for("jeton-é") == "zoé"
    assert tokens.principal_for("jeton-\udcff") is None


def test_plaintext_and_hash_of_one_token_may_name_the_same_principal() -> None:
    tokens = TokenMap({"tok": "alice", hash_token("tok"): "alice"})
    assert len(tokens) == 1
    assert tokens.principal_for("tok") == "alice"


def test_repr_does_not_reveal_tokens() -> None:
    assert "s3cr3t" not in repr(TokenMap({"s3cr3t": "alice"}))


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "not valid JSON"),
        ('["tok", "alice"]', "expected a JSON object"),
        ("{}", "no tokens"),
        ('{"tok": 7}', "non-empty string"),
        ('{"tok": ""}', "non-empty string"),
        ('{"tok": "  "}', "non-empty string"),
        ('{"": "alice"}', "non-empty string"),
        ('{"two words": "alice"}', "whitespace"),
        ('{"sha256:abc": "alice"}', "64 hex digits"),
        ('{"sha256:' + "z" * 64 + '": "alice"}', "64 hex digits"),
    ],
)
def test_malformed_token_file_is_refused_naming_the_file(
    tmp_path: Path, content: str, expected: str
) -> None:
    path = _write(tmp_path, content, raw=True)
    with pytest.raises(TokenFileError) as caught:
        load_tokens(path)
    message = str(caught.value)
    assert str(path) in message
    assert expected in message
    assert "\n" not in message


def test_one_token_with_two_principals_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, {"tok": "alice", hash_token("tok"): "bob"})
    with pytest.raises(TokenFileError, match="different principals"):
        load_tokens(path)


def test_missing_token_file_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.json"
    with pytest.raises(TokenFileError, match="not found") as caught:
        load_tokens(path)
    assert str(path) in str(caught.value)


def test_token_file_error_is_a_value_error() -> None:
    assert issubclass(TokenFileError, ValueError)


# --- Over HTTP -----------------------------------------------------------------------------

TOKENS = {"alice-token": "alice", hash_token("bob-token"): "bob"}
ALICE = {"Authorization": "Bearer alice-token"}


def _request(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}


def _result(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    body = response.json()
    assert "error" not in body, body
    return body["result"]


def _error(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    error: dict[str, Any] = response.json()["error"]
    return error


@pytest.fixture(scope="module")
def server() -> Iterator[A2MServer]:
    with A2MServer() as server:
        yield server


@pytest.fixture(scope="module")
def auth_url(server: A2MServer) -> Iterator[str]:
    with serve_http(server, tokens=TOKENS) as url:
        yield url


@pytest.fixture(scope="module")
def url(server: A2MServer) -> Iterator[str]:
    with serve_http(server) as url:
        yield url


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client


@pytest.mark.spec("6.1")
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": "Bearer"},
        {"Authorization": "Basic YWxpY2U6cHc="},
        {"Authorization": "alice-token"},
    ],
)
@pytest.mark.parametrize("path", ["", WELL_KNOWN_PATH.lstrip("/")])
def test_missing_or_invalid_credentials_are_401(
    client: httpx.Client, auth_url: str, headers: dict[str, str], path: str
) -> None:
    target = auth_url + path
    if path:
        response = client.get(target, headers=headers)
    else:
        response = client.post(target, json=_request("memory/describe"), headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert "jsonrpc" not in response.json()


@pytest.mark.spec("6.1")
def test_auth_is_checked_before_json_rpc(client: httpx.Client, auth_url: str) -> None:
    assert client.post(auth_url, content=b"{not json").status_code == 401
    assert client.get(auth_url).status_code == 401


@pytest.mark.spec("6")
def test_valid_token_admits_and_scopes_is_advertised(client: httpx.Client, auth_url: str) -> None:
    describe = _result(client.post(auth_url, json=_request("memory/describe"), headers=ALICE))
    assert "scopes" in describe["capabilities"]
    # A hashed key in the token map authenticates the token it hashes.
    bob = {"Authorization": "bearer bob-token"}
    assert _result(client.post(auth_url, json=_request("memory/describe"), headers=bob))


@pytest.mark.spec("6")
def test_without_auth_scopes_is_not_advertised_over_http(
    server: A2MServer, client: httpx.Client, url: str
) -> None:
    describe = _result(client.post(url, json=_request("memory/describe")))
    assert "scopes" not in describe["capabilities"]
    with server.connect() as in_process:
        assert "scopes" in in_process.call("memory/describe")["capabilities"]


@pytest.mark.spec("6")
def test_owner_comes_from_the_principal(client: httpx.Client, auth_url: str) -> None:
    params = {"records": [{"content": "kilroy was here"}]}
    ids = _result(client.post(auth_url, json=_request("memory/remember", params), headers=ALICE))[
        "ids"
    ]
    recalled = _result(
        client.post(auth_url, json=_request("memory/recall", {"query": "kilroy"}), headers=ALICE)
    )
    assert [(record["id"], record["owner"]) for record in recalled["records"]] == [
        (ids[0], "alice")
    ]


@pytest.mark.spec("6")
def test_owner_naming_another_principal_is_scope_denied(
    client: httpx.Client, auth_url: str
) -> None:
    params = {"records": [{"content": "pretending to be bob"}], "owner": "bob"}
    error = _error(client.post(auth_url, json=_request("memory/remember", params), headers=ALICE))
    assert error["code"] == ErrorCode.SCOPE_DENIED
    error = _error(
        client.post(
            auth_url, json=_request("memory/recall", {"query": "x", "owner": "bob"}), headers=ALICE
        )
    )
    assert error["code"] == ErrorCode.SCOPE_DENIED
