"""Every example runs as a user would run it — offline, within a time limit, leaving
nothing behind — and no socket it opens leaves loopback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from a2m_testing.network import guarded_environment, refused_in

EXAMPLES = Path(__file__).parents[2] / "examples"
SCRIPTS = sorted(p.name for p in EXAMPLES.iterdir() if p.suffix in {".py", ".sh"})
TIME_LIMIT_S = 120
# What a run must show, beyond succeeding: the demo's story, framework by framework, in
# order (patterns; a score is any score, since ranking may be tuned).
SCORE = r"\[\d\.\d{3}\]"
SHOWS = {
    "shared_memory.py": [
        r"store \| saved users/ada/diet",  # LangGraph wrote through its store tool
        rf"recalled \| {SCORE} langgraph/concierge:",  # CrewAI recalled it, with its score
        r"in its prompt \| 3 of the concierge's 3 facts",
        rf"recalled \| {SCORE} langgraph/concierge:",  # AutoGen read LangGraph's facts...
        r"crewai/restaurant-scout: Ada's dinner",  # ...and CrewAI's
        r"autogen/planner: Decision:",  # Agno found AutoGen's decision
        r"  autogen +1 +0 +1",  # the store, by framework and tier
        r"  langgraph +0 +3 +3",
        r"the server has stopped",
        r"a2m-server serve --db \S+shared-memory\.db\n  then open http://127\.0\.0\.1:8765/ui/",
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
    position = 0
    for pattern in SHOWS.get(script, []):
        found = re.compile(pattern).search(done.stdout, position)
        assert found, f"{pattern!r} missing (in order) from:\n{done.stdout}"
        position = found.end()
    assert refused_in(tmp_path / "net") == []


@pytest.mark.timeout(TIME_LIMIT_S + 30)
def test_real_models_without_a_key_say_so_and_stay_scripted(tmp_path: Path) -> None:
    """The README: ``--real-models`` runs real providers when ``OPENAI_API_KEY`` is set,
    and says which framework stays scripted, and why, when it is not."""
    env = guarded_environment(tmp_path / "net")
    for name in ("A2M_URL", "OPENAI_API_KEY"):
        env.pop(name, None)
    env["HOME"] = str(tmp_path / "home")
    env["TMPDIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "shared_memory.py"), "--real-models"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIME_LIMIT_S,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    said = " ".join(done.stdout.split())
    assert (
        "--real-models: OPENAI_API_KEY is not set, so every framework runs on its scripted" in said
    )
    assert "no provider is called" in said
    assert "the server has stopped" in said  # the whole story still ran
    assert refused_in(tmp_path / "net") == []
