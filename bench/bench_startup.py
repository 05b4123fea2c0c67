"""Start-up benchmark: ``judgecards score`` as a whole process against a bare client script.

Both are timed as fresh processes, from launch to exit, on the same N items against a loopback
fake OpenAI server (latency L per request, C requests in flight), so what differs is everything a
real user pays for besides the calls: imports, reading and checking the input, the database,
writing the output and the summary. The bare script is the least any tool must do: read the JSONL,
``AsyncOpenAI`` + a semaphore, parse each reply's JSON, write a JSONL. The server's scores vary
with the answer (`tests.fakes.server.varied_reply`) and the answers' lengths vary, as in a real
run, so the summary's length-vs-score correlations are computed (identical scores or lengths
would skip them, and the import of ``scipy.special`` their p-values need).

Both run from compiled bytecode, as an installed package does (pip compiles it at install): the
processes get a bytecode cache of their own (``PYTHONPYCACHEPREFIX`` in the temporary directory)
and one untimed run of each fills it first. Without this, a shell with ``PYTHONDONTWRITEBYTECODE``
set (this sandbox's) would re-compile judgecards' ~60 modules from source in every timed run
(about 0.13 s) while the bare script's imports come precompiled from site-packages.

Target (issue 10 §5): ``judgecards score`` / bare script ≤ 1.25 at N = 400, L = 100 ms, C = 32.

Usage: .venv/bin/python bench/bench_startup.py [--runs 3] [--n 400] [--latency 0.1] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._runs import Measure, repeat, table  # noqa: E402
from tests.fakes.server import spawn as start_server  # noqa: E402

BARE = '''
import asyncio, json, sys
import openai

source, target, base_url, concurrency = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
PROMPT = """Judge the answer against the gold answer. Reply with JSON: scores (correctness,
completeness, style_fidelity, 1-5), style_relevant, verdict, delta, decision_basis.
<question>
{question}
</question>
<gold_answer>
{gold_answer}
</gold_answer>
<model_output>
{model_output}
</model_output>"""

async def main():
    items = [json.loads(line) for line in open(source, encoding="utf-8") if line.strip()]
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)
    semaphore = asyncio.Semaphore(concurrency)

    async def one(item):
        async with semaphore:
            response = await client.chat.completions.create(
                model="fake-judge", temperature=0.0, max_tokens=800,
                messages=[{"role": "user", "content": PROMPT.format(**item)}],
            )
            return {"id": item["id"], **json.loads(response.choices[0].message.content)}

    results = await asyncio.gather(*(one(item) for item in items))
    await client.close()
    with open(target, "w", encoding="utf-8") as handle:
        for result in results:
            handle.write(json.dumps(result) + "\\n")

asyncio.run(main())
'''


def write_items(path: Path, n: int, tag: str) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            item = {
                "id": f"{tag}-{i}",
                "question": f"What is the capital of country number {i}?",
                "gold_answer": f"City {i}.",
                # Lengths vary, as real answers' do: the summary correlates length with score.
                "model_output": f"I believe it is City {i}, on the river {i % 7}."
                + " It is a large city." * (i % 4),
            }
            handle.write(json.dumps(item) + "\n")


def timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{command[:4]} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--runs", type=int, default=3, help="repeats; the median is reported")
    args = parser.parse_args()
    n, latency, concurrency = args.n, args.latency, args.concurrency
    tmp = Path(tempfile.mkdtemp(prefix="judgecards-startup-"))
    bare = tmp / "bare.py"
    bare.write_text(BARE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "JUDGECARDS_"))}
    env["OPENAI_API_KEY"] = "sk-bench"
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "bytecode")
    floor = n * latency / concurrency

    def ours(source: Path, output: Path, db: Path, base_url: str) -> list[str]:
        return [sys.executable, "-m", "judgecards", "score", "--card", "reference",
                "--model", "openai:fake-judge", "--base-url", base_url,
                str(source), "--output", str(output),
                "--concurrency", str(concurrency), "--db", str(db)]  # fmt: skip

    def bare_script(source: Path, output: Path, base_url: str) -> list[str]:
        return [sys.executable, str(bare), str(source), str(output), base_url, str(concurrency)]

    # Untimed: fills the bytecode cache for both (see the module docstring).
    server, base_url = start_server(0.0, varied=True)
    try:
        write_items(tmp / "compile.jsonl", 8, "compile")
        timed(bare_script(tmp / "compile.jsonl", tmp / "warm.jsonl", base_url), env)
        timed(ours(tmp / "compile.jsonl", tmp / "warm.jsonl", tmp / "compile.db", base_url), env)
    finally:
        server.terminate()

    def one_run(index: int) -> list[Measure]:
        server, base_url = start_server(latency, varied=True)
        try:
            source = tmp / f"items{index}.jsonl"
            write_items(source, n, f"run{index}")
            # Warm the page cache for both (the first process to import a module pays disk).
            timed(bare_script(source, tmp / "warm.jsonl", base_url), env)
            bare_wall = timed(bare_script(source, tmp / "bare.jsonl", base_url), env)
            ours_wall = timed(
                ours(source, tmp / f"ours{index}.jsonl", tmp / f"run{index}.db", base_url), env
            )
        finally:
            server.terminate()
        return [
            Measure("judgecards score / bare script", ours_wall / bare_wall, "×", target="≤ 1.25"),
            Measure("judgecards score", ours_wall, " s", 2),
            Measure("bare script", bare_wall, " s", 2),
            Measure("floor N·L/C", floor, " s", 2),
        ]

    results = repeat(one_run, args.runs)
    print(
        table(
            f"judgecards start-up benchmark (whole processes, N={n}, L={latency * 1000:.0f} ms, "
            f"C={concurrency})",
            results,
        )
    )


if __name__ == "__main__":
    main()
