"""Three agents, three bindings, one memory.

A planner talks to the store in-process, a researcher through a stdio server subprocess,
and a reviewer over HTTP — three servers on one SQLite file, so whatever one agent
remembers, the others recall. Runs offline in a few seconds:

    uv run python examples/shared_memory.py
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from a2m import A2MClient, A2MConnectionError, RecordInput
from a2m_server import A2MServer

NAMESPACE = "demo/launch-plan"


def say(agent: str, text: str) -> None:
    print(f"[{agent:>10}] {text}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_http_server(db: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``a2m-server serve`` on a free loopback port, as a user would run it."""
    port = free_port()
    command = [sys.executable, "-m", "a2m_server", "serve", "--db", str(db), "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return process, f"http://127.0.0.1:{port}/"


def wait_until_up(client: A2MClient, deadline_s: float = 20.0) -> None:
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            client.describe()
            return
        except A2MConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def main() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="a2m-demo-"))
    db = workdir / "team-memory.db"
    http_process, url = start_http_server(db)
    server = A2MServer(db=db)
    planner = A2MClient.in_process(server)
    researcher = A2MClient.stdio([sys.executable, "-m", "a2m_server", "stdio", "--db", str(db)])
    reviewer = A2MClient(url, max_retries=0)
    try:
        wait_until_up(reviewer)
        described = planner.describe()
        print(f"one store at {db.name}: {described.name}, {described.protocol}, capabilities:")
        print("  " + ", ".join(described.capabilities) + "\n")
        since = reviewer.events().cursor  # the event log, from now on

        say("planner", "writes the plan's facts (in-process)")
        planner.remember(
            [
                RecordInput(
                    content="Launch is set for 14 March; the freeze starts on 7 March.",
                    key=f"{NAMESPACE}/dates",
                    tier="semantic",
                    owner="planner",
                    metadata={"source_framework": "demo", "tags": ["launch", "dates"]},
                ),
                RecordInput(
                    content="The deploy key rotates every 90 days; next rotation 1 March.",
                    key=f"{NAMESPACE}/deploy-key",
                    tier="semantic",
                    owner="planner",
                    metadata={"source_framework": "demo", "tags": ["ops"]},
                ),
            ]
        )

        say("researcher", "recalls what the planner knows (stdio subprocess)")
        found = researcher.recall("when does the deploy key rotate?", limit=1).records[0]
        say("researcher", f"-> {found.content!r} (owner {found.owner}, key {found.key})")
        researcher.remember(
            RecordInput(
                content="Checked: the 1 March key rotation happens before the launch freeze.",
                session="research-1",
                owner="researcher",
                role="assistant",
                metadata={"source_framework": "demo", "tags": ["ops", "launch"]},
            )
        )

        say("planner", "corrects a fact: a key is an address, so this replaces, not appends")
        planner.remember(
            RecordInput(
                content="Launch moved to 21 March; the freeze starts on 14 March.",
                key=f"{NAMESPACE}/dates",
                tier="semantic",
                owner="planner",
            )
        )
        dates = reviewer.fetch(f"{NAMESPACE}/dates").record
        assert dates is not None
        say(
            "reviewer",
            f"fetches the dates over HTTP: {dates.content!r} (revision {dates.revision})",
        )

        recalled = reviewer.recall(
            "launch freeze and key rotation", limit=3, prompt={"style": "facts", "cite": True}
        )
        say("reviewer", "recalls across agents, with prompt text ready for a model:")
        for line in (recalled.prompt or "").splitlines():
            print(f"{'':>13}{line}")

        summary = reviewer.summarize(key_prefix=NAMESPACE, key=f"{NAMESPACE}/summary")
        say("reviewer", f"distils the plan into a stored summary: {summary.records[0].content!r}")

        events = reviewer.events(since, limit=100).events
        kinds = [event.kind for event in events]
        say("reviewer", f"saw {len(events)} events while watching: {', '.join(kinds)}")
        sessions = reviewer.sessions().sessions
        say("reviewer", f"open conversations: {[(s.session, s.records) for s in sessions]}")
        print("\nEvery agent read what the others wrote: one memory, three bindings.")
    finally:
        for client in (planner, researcher, reviewer):
            client.close()
        server.close()
        http_process.terminate()
        http_process.wait(timeout=10)


if __name__ == "__main__":
    main()
