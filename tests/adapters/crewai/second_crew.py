"""A crew in a process of its own: ``python second_crew.py URL QUESTION`` kicks off one task
on the A2M memory at URL and prints, as JSON, every prompt its model received."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from crew_support import ScriptedLLM, embed
    from crewai import Agent, Crew, Task

from a2m_crewai import a2m_memory


def main(url: str, question: str) -> None:
    llm = ScriptedLLM(answer="I found it in memory.")
    memory = a2m_memory(url, llm=llm, embedder=embed)
    agent = Agent(
        role="Operator", goal="Answer from memory", backstory="Keeps things running.", llm=llm
    )
    task = Task(description=question, expected_output="One sentence.", agent=agent)
    Crew(agents=[agent], tasks=[task], memory=memory).kickoff()
    memory.close()
    print(json.dumps(llm.prompts))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
