"""Run LangGraph's own store and checkpointer batteries against the A2M adapter.

Downloads the sdists of the installed ``langgraph-checkpoint``,
``langgraph-checkpoint-postgres`` and ``langgraph-checkpoint-sqlite`` releases (pip's
``download --no-binary``, into ``--cache``), unpacks their ``tests/`` there, and runs the
files chosen below through pytest with the ``a2m_battery`` plugin, which swaps in our
store and saver (see ``a2m_battery.py``). One pytest run per distribution, since each
ships its own ``tests`` package. Extra arguments go to every pytest run (``-k …``).

    python tests/adapters/langgraph/battery/run_battery.py --cache .nox/.cache [-- -k ttl]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Distribution -> the battery files that test a store or a saver (the others test
# serializers, caches, migrations or SQL of their own, none of which A2M replaces).
BATTERIES = {
    "langgraph-checkpoint": ["tests/test_store.py", "tests/test_memory.py"],
    "langgraph-checkpoint-postgres": ["tests/test_store.py", "tests/test_async_store.py"],
    "langgraph-checkpoint-sqlite": ["tests/test_store.py", "tests/test_async_store.py"],
}


def unpacked(distribution: str, cache: Path) -> Path:
    """The sdist of the installed release of ``distribution``, unpacked under ``cache``."""
    version = metadata.version(distribution)
    stem = f"{distribution.replace('-', '_')}-{version}"
    target = cache / "langgraph-battery" / stem
    if (target / "tests").is_dir():
        return target
    downloads = cache / "langgraph-battery" / "sdists"
    archive = downloads / f"{stem}.tar.gz"
    if not archive.exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--dest",
                str(downloads),
                f"{distribution}=={version}",
            ],
            check=True,
        )
    with tarfile.open(archive) as sdist:
        members = [m for m in sdist.getmembers() if m.name.startswith(f"{stem}/tests/")]
        sdist.extractall(target.parent, members=members, filter="data")
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    failed = 0
    for distribution, files in BATTERIES.items():
        root = unpacked(distribution, args.cache.resolve())
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(HERE / "pytest.ini"),
            "--rootdir",
            str(root),
            "--confcutdir",
            str(root),
            *[str(root / name) for name in files],
            *args.pytest_args,
        ]
        print(f"== {distribution}: {' '.join(files)}", flush=True)
        code = subprocess.run(command, cwd=root, env=env, check=False).returncode
        if code not in (0, 5):  # 5: every test deselected by -k
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
