"""Four frameworks, one memory: a LangGraph agent, a CrewAI crew, an AutoGen team and an
Agno agent help one user plan a trip, each through its own framework's memory interface,
all on one A2M store.

    uv run python examples/shared_memory.py               # offline, scripted models
    uv run python examples/shared_memory.py --real-models # real providers where keys are set

It starts the bundled server (``a2m-server serve``, a SQLite file in a temporary folder)
on a loopback port — or uses the server at ``A2M_URL`` — and then:

1. a LangGraph agent (``create_agent`` with ``A2MStore``) stores what the user says
   through its store tool;
2. a CrewAI crew (``a2m_memory``) recalls those facts into its prompt and adds its own;
3. an AutoGen team (``A2MMemory``) reads both and decides;
4. an Agno agent (``A2MVectorDb`` knowledge, ``A2MDb`` memories) answers from everything.

The models are scripted fakes driven through each framework's real agent loop, so the
run is deterministic, needs no API key and touches nothing beyond loopback."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
import zlib
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

STARTED = time.monotonic()  # the frameworks' imports take much of a run: count them

# Telemetry off and CrewAI's home in a temporary folder, before any framework is imported.
WORKDIR = Path(tempfile.mkdtemp(prefix="a2m-demo-"))
os.environ.update(
    {
        "CREWAI_DISABLE_TELEMETRY": "true",
        "CREWAI_DISABLE_TRACKING": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "OTEL_SDK_DISABLED": "true",
        "AGNO_TELEMETRY": "false",
        "ANONYMIZED_TELEMETRY": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "LANGSMITH_TRACING": "false",
        "HF_HUB_OFFLINE": "1",
        "HOME": str(WORKDIR / "home"),
        "CREWAI_STORAGE_DIR": str(WORKDIR / "home" / "crewai"),
    }
)
warnings.filterwarnings("ignore")  # the frameworks' own deprecation notices, not the story

from agno.agent import Agent as AgnoAgent  # noqa: E402
from agno.knowledge.knowledge import Knowledge  # noqa: E402
from agno.models.base import Model  # noqa: E402
from agno.models.message import Message  # noqa: E402
from agno.models.response import ModelResponse  # noqa: E402
from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_agentchat.conditions import MaxMessageTermination  # noqa: E402
from autogen_agentchat.messages import BaseChatMessage, MemoryQueryEvent  # noqa: E402
from autogen_agentchat.teams import RoundRobinGroupChat  # noqa: E402
from autogen_core.memory import MemoryContent, MemoryMimeType  # noqa: E402
from autogen_ext.models.replay import ReplayChatCompletionClient  # noqa: E402
from crewai import Agent as CrewAgent  # noqa: E402
from crewai import BaseLLM, Crew, Task  # noqa: E402
from langchain.agents import create_agent  # noqa: E402
from langchain.tools import ToolRuntime, tool  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402
from pydantic import Field, model_validator  # noqa: E402

from a2m import A2MClient, A2MConnectionError, AsyncA2MClient  # noqa: E402
from a2m_agno import A2MDb, A2MVectorDb  # noqa: E402
from a2m_autogen import PROVENANCE_KEY, A2MMemory  # noqa: E402
from a2m_crewai import a2m_memory  # noqa: E402
from a2m_langchain.langgraph import A2MStore  # noqa: E402

USER = "ada"
DIMENSIONS = 64
WIDTH = 78


# --- what every framework embeds with: one local, deterministic embedder --------------


def embed_one(text: str) -> list[float]:
    """A unit bag-of-words vector: texts sharing words are close. Every framework here
    embeds with it, so their vectors share one space (and one width)."""
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[zlib.crc32(word.encode()) % DIMENSIONS] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def embed(texts: Sequence[str]) -> list[list[float]]:
    return [embed_one(text) for text in texts]


# --- the transcript --------------------------------------------------------------------


def heading(text: str) -> None:
    print(f"\n{'=' * WIDTH}\n{text}\n{'=' * WIDTH}")


def say(who: str, text: str) -> None:
    prefix = f"  {who:>14} | "
    lines = textwrap.wrap(text, WIDTH - len(prefix)) or [""]
    for index, line in enumerate(lines):
        print((prefix if index == 0 else " " * (len(prefix) - 2) + "| ") + line)


def recalled(score: float | None, framework: str | None, agent: str | None, text: str) -> None:
    shown = f"{score:.3f}" if isinstance(score, float) else "  -  "
    say("recalled", f"[{shown}] {framework or '?'}/{agent or '?'}: {text}")


def short(text: str, limit: int = 70) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- the server ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(db: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``a2m-server serve`` on a free loopback port, as a user would run it."""
    port = free_port()
    command = [sys.executable, "-m", "a2m_server", "serve", "--db", str(db), "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return process, f"http://127.0.0.1:{port}/"


def wait_until_up(url: str, deadline_s: float = 30.0) -> None:
    deadline = time.monotonic() + deadline_s
    with A2MClient(url, max_retries=0) as probe:
        while True:
            try:
                probe.describe()
                return
            except A2MConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


# --- models: scripted by default, real ones on request ---------------------------------


class Models:
    """Which model each framework runs on. Scripted unless ``--real-models`` found a key
    and the framework's provider package."""

    def __init__(self, real: bool) -> None:
        self.real: dict[str, Any] = {}
        if not real:
            return
        if not os.environ.get("OPENAI_API_KEY"):
            print("--real-models: OPENAI_API_KEY is not set, so every framework runs on")
            print("its scripted model (the story is the same; no provider is called).")
            return
        name = os.environ.get("A2M_DEMO_MODEL", "gpt-4o-mini")
        makers = {
            "langgraph": ("langchain-openai", lambda: _langchain_openai(name)),
            "crewai": ("crewai", lambda: _crewai_llm(name)),
            "autogen": ("autogen-ext[openai]", lambda: _autogen_openai(name)),
            "agno": ("openai", lambda: _agno_openai(name)),
        }
        for framework, (package, make) in makers.items():
            try:
                self.real[framework] = make()
                print(f"--real-models: {framework} runs on {name}")
            except ImportError:
                print(f"--real-models: {framework} stays scripted: `pip install {package}`")

    def of(self, framework: str) -> Any | None:
        return self.real.get(framework)


def _langchain_openai(name: str) -> Any:
    from langchain_openai import ChatOpenAI  # type: ignore[import-not-found]

    return ChatOpenAI(model=name)


def _crewai_llm(name: str) -> Any:
    from crewai import LLM

    return LLM(model=name)


def _autogen_openai(name: str) -> Any:
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    return OpenAIChatCompletionClient(model=name)


def _agno_openai(name: str) -> Any:
    from agno.models.openai import OpenAIChat

    return OpenAIChat(id=name)


# --- 1. LangGraph: an agent stores what it learns through its store tool ---------------

LEARNED = {
    "diet": "Ada is vegetarian.",
    "flight": "Ada flies from London to Lisbon on 14 March.",
    "seat": "Ada always wants a window seat.",
}


def langgraph_learns(client: A2MClient, models: Models) -> None:

    class ToolCallingFake(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFake:
            return self

    @tool
    def save_memory(topic: str, fact: str, runtime: ToolRuntime) -> str:
        """Remember one fact about the user, under a one-word topic."""
        assert runtime.store is not None
        runtime.store.put(("users", USER), topic, {"fact": fact})
        return f"saved users/{USER}/{topic}"

    heading("1. LangGraph: create_agent + A2MStore, agent 'concierge'")
    store = A2MStore(client, index={"dims": DIMENSIONS, "embed": embed}, agent="concierge")
    calls = [
        {"name": "save_memory", "args": {"topic": topic, "fact": fact}, "id": f"call-{topic}"}
        for topic, fact in LEARNED.items()
    ]
    scripted = ToolCallingFake(
        messages=iter([AIMessage(content="", tool_calls=calls), "Noted, Ada: three things."])
    )
    agent = create_agent(models.of("langgraph") or scripted, [save_memory], store=store)
    said = (
        "Hi, I'm Ada. I'm vegetarian, I fly from London to Lisbon on 14 March, "
        "and I always want a window seat."
    )
    say("user", said)
    state = agent.invoke({"messages": [HumanMessage(said)]})
    for message in state["messages"]:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                say("tool call", f"save_memory({call['args']})")
            if message.content:
                say("concierge", str(message.content))
        elif isinstance(message, ToolMessage):
            say("store", str(message.content))


# --- 2. CrewAI: a crew recalls those facts and adds its own ----------------------------

CREW_FACT = "Ada's dinner in Lisbon on 14 March: Ao 26 Vegan Food Project in Chiado, 20:00."
CREW_TASK = "Find a dinner place in Lisbon on 14 March that suits Ada's diet."


def crewai_recalls_and_adds(client: A2MClient, models: Models) -> None:

    class ScriptedLLM(BaseLLM):
        """Answers CrewAI's memory-analysis prompts with fixed JSON and the agent's turn
        with the crew's finding; keeps every prompt it was sent."""

        model: str = "scripted"
        prompts: list[str] = Field(default_factory=list)

        @model_validator(mode="before")
        @classmethod
        def _named(cls, data: Any) -> Any:
            if isinstance(data, dict):
                data.setdefault("model", "scripted")
            return data

        def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
            text = (
                messages
                if isinstance(messages, str)
                else "\n".join(str(m.get("content", "")) for m in messages)
            )
            self.prompts.append(text)
            if text.startswith("You extract discrete"):
                return json.dumps({"memories": [CREW_FACT]})
            if text.startswith("You analyze content to be stored"):
                return json.dumps(
                    {"suggested_scope": "/trips/ada", "categories": ["dining"], "importance": 0.8}
                )
            if text.startswith("You analyze a query"):
                return json.dumps({"recall_queries": [CREW_TASK], "complexity": "simple"})
            if text.startswith("You are comparing new content"):
                return json.dumps({"actions": [], "insert_new": True})
            return "Thought: I now know the final answer\nFinal Answer: " + CREW_FACT

        def supports_function_calling(self) -> bool:
            return False

    heading("2. CrewAI: a crew on a2m_memory, agent 'restaurant-scout'")
    scripted = ScriptedLLM()
    llm = models.of("crewai") or scripted
    memory = a2m_memory(client, llm=llm, embedder=embed, agent="restaurant-scout")
    try:
        say("task", CREW_TASK)
        for match in memory.recall(CREW_TASK, limit=4):
            extra = match.record.metadata or {}
            recalled(
                match.score,
                extra.get("source_framework"),
                extra.get("source_agent"),
                short(match.record.content),
            )
        scout = CrewAgent(
            role="Restaurant scout",
            goal="Find dinner places that suit the traveller",
            backstory="Knows Lisbon's restaurants.",
            llm=llm,
        )
        task = Task(description=CREW_TASK, expected_output="One booking.", agent=scout)
        result = Crew(agents=[scout], tasks=[task], memory=memory).kickoff()
        memory.drain_writes()
        if llm is scripted:  # what CrewAI put in front of the model, as it sent it
            prompt = next((p for p in scripted.prompts if "Memories from past" in p), "")
            shown = sum(fact in prompt for fact in LEARNED.values())
            say("in its prompt", f"{shown} of the concierge's {len(LEARNED)} facts")
        say("scout", str(result.raw))
        say("store", f"the crew's memory saved: {short(CREW_FACT)}")
    finally:
        memory.close()


# --- 3. AutoGen: a team reads both and decides -----------------------------------------

DECISION = (
    "Decision: book the 14 March London-Lisbon flight with a window seat, and a table "
    "at Ao 26 Vegan Food Project at 20:00."
)


async def autogen_decides(url: str, models: Models) -> None:

    heading("3. AutoGen: a round-robin team on A2MMemory, agents 'analyst', 'planner'")
    replies = {
        "analyst": "Ada is vegetarian, flies to Lisbon on 14 March, wants a window seat; "
        "the scout found Ao 26 for dinner.",
        "planner": DECISION,
    }
    async with AsyncA2MClient(url) as client:
        memories = {
            # What the team decides is an event of this trip: the episodic tier.
            name: A2MMemory(
                client,
                namespace="trips/ada/team",
                source_agent=name,
                k=4,
                memory_type="episodic" if name == "planner" else "semantic",
            )
            for name in replies
        }
        team = RoundRobinGroupChat(
            [
                AssistantAgent(
                    name,
                    model_client=models.of("autogen") or ReplayChatCompletionClient([reply]),
                    memory=[memories[name]],
                )
                for name, reply in replies.items()
            ],
            termination_condition=MaxMessageTermination(3),
        )
        task = "Decide Ada's Lisbon trip on 14 March: flight, window seat, vegetarian dinner."
        say("task", task)
        result = await team.run(task=task)
        for item in result.messages:
            if isinstance(item, MemoryQueryEvent):
                say(item.source, "asks its memory before answering")
                for content in item.content:
                    seen = (content.metadata or {}).get(PROVENANCE_KEY, {})
                    recalled(
                        seen.get("score"),
                        seen.get("source_framework"),
                        seen.get("source_agent"),
                        short(str(content.content)),
                    )
            elif isinstance(item, BaseChatMessage) and item.source != "user":
                say(item.source, item.to_text())
        decision = result.messages[-1]
        text = decision.to_text() if isinstance(decision, BaseChatMessage) else DECISION
        await memories["planner"].add(MemoryContent(content=text, mime_type=MemoryMimeType.TEXT))
        say("store", f"the planner's memory saved: {short(text)}")


# --- 4. Agno: an agent answers from everything -----------------------------------------


def agno_answers(client: A2MClient, models: Models) -> None:

    question = "What is booked for my Lisbon trip on 14 March, and what do I eat?"

    def reply(messages: list[Message], tools: list[dict[str, Any]] | None) -> ModelResponse:
        """Search the knowledge base, answer from what it returned, and let the memory
        manager keep one note about the user."""
        offered = {(t.get("function") or t).get("name") for t in tools or []}
        last = messages[-1]
        if "add_memory" in offered:
            if last.role == "tool":
                return ModelResponse(role="assistant", content="saved")
            note = {"memory": "Ada asked for her Lisbon trip summary on the eve of 14 March."}
            return ModelResponse(role="assistant", tool_calls=[_agno_call("add_memory", note)])
        if last.role == "tool":
            found = json.loads(last.get_content_string() or "[]")
            lines = [doc.get("content", "") for doc in found]
            return ModelResponse(
                role="assistant", content="From the shared memory: " + " ".join(lines)
            )
        query = {"query": "Ada Lisbon 14 March"}
        return ModelResponse(
            role="assistant", tool_calls=[_agno_call("search_knowledge_base", query)]
        )

    class ScriptedModel(Model):
        def invoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
            return reply(kwargs["messages"], kwargs.get("tools"))

        async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
            return reply(kwargs["messages"], kwargs.get("tools"))

        def invoke_stream(self, *args: Any, **kwargs: Any) -> Iterator[ModelResponse]:
            yield reply(kwargs["messages"], kwargs.get("tools"))

        async def ainvoke_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ModelResponse]:  # type: ignore[override]
            yield reply(kwargs["messages"], kwargs.get("tools"))

        def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
            return response  # type: ignore[no-any-return]

        def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
            return response  # type: ignore[no-any-return]

    heading("4. Agno: an agent on A2MVectorDb knowledge and A2MDb memories, 'answerer'")
    knowledge = Knowledge(
        vector_db=A2MVectorDb(client, namespace="trips/ada/knowledge", include_foreign=True)
    )
    agent = AgnoAgent(
        name="answerer",
        id="answerer",
        model=models.of("agno") or ScriptedModel(id="scripted"),
        db=A2MDb(client, namespace="trips/ada/agno"),
        knowledge=knowledge,
        search_knowledge=True,
        update_memory_on_run=True,
    )
    say("user", question)
    run = agent.run(question, user_id=USER)
    for execution in run.tools or []:
        say("tool call", f"{execution.tool_name}({execution.tool_args})")
        say("", "(Agno's tool result lists documents best first, without their scores)")
        for doc in json.loads(str(execution.result) or "[]"):
            meta = doc.get("meta_data") or {}
            score = doc.get("reranking_score")
            recalled(
                score,
                meta.get("source_framework"),
                meta.get("source_agent"),
                short(doc.get("content", "")),
            )
    say("answerer", str(run.content))


def _agno_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"call-{name}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


# --- the store at the end --------------------------------------------------------------


def final_state(client: A2MClient) -> None:
    heading("The store: who wrote what")
    story = ["langgraph", "crewai", "autogen", "agno"]
    # In the story's order; LangGraph runs the three tool calls in parallel, so their
    # writes land in any order: by text within a framework.
    records = sorted(
        client.timeline(limit=1000).records,
        key=lambda r: (_rank(story, (r.metadata or {}).get("source_framework")), r.content),
    )
    for record in records:
        meta = record.metadata or {}
        writer = (
            f"{meta.get('source_framework', '?')}/{meta.get('source_agent') or record.owner or '-'}"
        )
        print(f"  {writer:<26} {record.tier:<9} {short(record.content, WIDTH - 40)}")
    counts = Counter(((r.metadata or {}).get("source_framework", "?"), r.tier) for r in records)
    tiers = sorted({tier for _, tier in counts})
    frameworks = sorted({framework for framework, _ in counts})
    print("\n  " + f"{'framework':<12}" + "".join(f"{t:>10}" for t in tiers) + f"{'total':>8}")
    for framework in frameworks:
        row = [counts.get((framework, tier), 0) for tier in tiers]
        print("  " + f"{framework:<12}" + "".join(f"{n:>10}" for n in row) + f"{sum(row):>8}")


def _rank(order: list[str], name: object) -> int:
    return order.index(name) if name in order else len(order)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real-models", action="store_true", help="use real providers")
    args = parser.parse_args()
    models = Models(args.real_models)

    url = os.environ.get("A2M_URL")
    process = None
    db = WORKDIR / "shared-memory.db"
    if url is None:
        process, url = start_server(db)
    try:
        wait_until_up(url)
        print(f"A2M server at {url} ({'yours' if process is None else 'a2m-server serve'})")
        with A2MClient(url) as client:
            langgraph_learns(client, models)
            crewai_recalls_and_adds(client, models)
            asyncio.run(autogen_decides(url, models))
            agno_answers(client, models)
            final_state(client)
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=15)
    print(f"\nDone in {time.monotonic() - STARTED:.1f} s; the server has stopped.")
    if process is not None:
        print(f"The store is the SQLite file {db}. To look inside, in a browser:")
        print(f"  uv run a2m-server serve --db {db}")
        print("  then open http://127.0.0.1:8765/ui/")


if __name__ == "__main__":
    main()
