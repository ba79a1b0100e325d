"""Every example runs as a user would run it — offline, within a time limit, leaving
nothing behind — and no socket it opens leaves loopback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from a2m_testing.network import guarded_environment, refused_in

EXAMPLES = Path(__file__).parents[2] / "examples"
SCRIPTS = sorted(p.name for p in EXAMPLES.iterdir() if p.suffix in {".py", ".sh"})
TIME_LIMIT_S = 120
# What a run must show, beyond succeeding: the demo's story, framework by framework.
SHOWS = {
    "shared_memory.py": [
        "store | saved users/ada/diet",  # LangGraph wrote through its store tool
        "[0.800] langgraph/concierge:",  # CrewAI recalled it, with its score
        "in its prompt | 3 of the concierge's 3 facts",
        "recalled | [0.526] langgraph/concierge:",  # AutoGen read LangGraph's facts...
        "crewai/restaurant-scout: Ada's dinner",  # ...and CrewAI's
        "autogen/planner: Decision:",  # Agno found AutoGen's decision
        "  langgraph            0         3       3",  # the store, by framework and tier
        "  autogen              1         0       1",
        "the server has stopped",
    ],
}


def test_every_framework_has_an_example() -> None:
    assert {"shared_memory.py", "client_quickstart.py", "rest_quickstart.sh"} <= set(SCRIPTS)


@pytest.mark.timeout(TIME_LIMIT_S + 30)
@pytest.mark.parametrize("script", SCRIPTS)
def test_the_example_runs_offline(script: str, tmp_path: Path) -> None:
    env = guarded_environment(tmp_path / "net")
    env.pop("A2M_URL", None)
    env["HOME"] = str(tmp_path / "home")  # frameworks that write under $HOME write here
    env["TMPDIR"] = str(tmp_path)
    env["PYTHON"] = sys.executable
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    runner = ["bash"] if script.endswith(".sh") else [sys.executable]
    done = subprocess.run(
        [*runner, str(EXAMPLES / script)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIME_LIMIT_S,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), "the example says what it did"
    for line in SHOWS.get(script, []):
        assert line in done.stdout, f"{line!r} missing from:\n{done.stdout}"
    assert refused_in(tmp_path / "net") == []
