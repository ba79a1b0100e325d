"""A second Agno agent in a fresh process: it opens its own A2MDb on the server at argv[1]
and prints, as JSON, the memories the model found in its context and its reply."""

from __future__ import annotations

import json
import os
import sys

os.environ["AGNO_TELEMETRY"] = "false"

from agno.agent import Agent
from agno_fake_model import FakeModel, seen_memories

from a2m import A2MClient
from a2m_agno import A2MDb


def main(url: str, user_id: str) -> None:
    with A2MClient(url) as client:
        agent = Agent(model=FakeModel(), db=A2MDb(client), add_memories_to_context=True)
        run = agent.run("what do you know about me?", user_id=user_id)
        messages = run.messages or []
        print(json.dumps({"seen": seen_memories(messages), "reply": run.content}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
