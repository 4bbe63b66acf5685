"""Run every benchmark side by side with its baseline and write a readable report.

Each ``bench/bench_*.py`` measures onedoor against its own baseline in the same run and
prints one JSON object on its last line: ``{"name", "metrics", "ratios": {key: {"value",
"target"}}}`` (or ``{"name", "skipped": reason}``). This script runs them one after the
other (several repetitions happen inside each script; medians are reported), then
writes into ``bench/out/``:

- ``results.json``   every figure, raw
- ``report.md``      a table of ratios with their targets, marked where a ratio got more
                     than 20% worse than the committed figures in ``bench/baseline.json``
                     (kept per mode: a quick run is compared with the last quick run)
- ``chart.png``      throughput ratios per benchmark (when matplotlib is installed)

``--quick`` asks each script for its short mode (CI records these figures; it never
fails on a time). ``--only kernel,rest`` picks scripts. ``--update-baseline`` copies the
new figures of the benchmarks it ran into bench/baseline.json for the next comparison
(with ``--only``, the others keep theirs).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
OUT = HERE / "out"
BASELINE = HERE / "baseline.json"
WORSE_BY = 0.20


def run_script(path: Path, quick: bool, timeout: float) -> dict:
    cmd = [sys.executable, str(path)] + (["--quick"] if quick else [])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=HERE.parent)
    except subprocess.TimeoutExpired:
        return {"name": path.stem.removeprefix("bench_"), "error": f"timed out after {timeout:.0f} s"}
    elapsed = time.monotonic() - started
    lines = [line for line in proc.stdout.splitlines() if line.strip().startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"name": path.stem.removeprefix("bench_"), "error": f"exit {proc.returncode}: {' | '.join(tail)}"}
    try:
        result = json.loads(lines[-1])
    except json.JSONDecodeError as exc:
        return {"name": path.stem.removeprefix("bench_"), "error": f"bad JSON output: {exc}"}
    result["seconds"] = round(elapsed, 1)
    return result


def meets(value: float, target: str) -> bool | None:
    match = re.match(r"\s*(<=|>=|<|>)\s*([0-9.]+)", target or "")
    if not match:
        return None
    op, bound = match.group(1), float(match.group(2))
    return {"<=": value <= bound, ">=": value >= bound, "<": value < bound, ">": value > bound}[op]


def regression(name: str, key: str, value: float, target: str, baseline: dict) -> bool:
    """Worse by more than 20% than the committed figure of the same mode (direction from
    the target)."""
    old = baseline.get(name, {}).get("ratios", {}).get(key, {}).get("value")
    if not isinstance(old, (int, float)) or not old:
        return False
    higher_is_better = ">" in (target or "")
    change = (value - old) / abs(old)
    return change < -WORSE_BY if higher_is_better else change > WORSE_BY


def render(results: list[dict], baseline: dict, quick: bool) -> str:
    lines = [
        "# onedoor benchmarks",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {'quick' if quick else 'full'} mode, "
        f"Python {platform.python_version()}, {os.cpu_count()} cores. Each ratio compares onedoor with its "
        "baseline measured in the same run; medians of several repetitions.",
        "",
        "| benchmark | ratio | value | target | meets | vs committed |",
        "|---|---|---|---|---|---|",
    ]
    for result in results:
        name = result["name"]
        if "error" in result or "skipped" in result:
            reason = result.get("error") or result.get("skipped")
            lines.append(f"| {name} | — | — | — | {'error' if 'error' in result else 'skipped'} | {reason} |")
            continue
        for key, ratio in result.get("ratios", {}).items():
            value, target = ratio.get("value"), ratio.get("target", "")
            ok = meets(value, target) if isinstance(value, (int, float)) else None
            worse = isinstance(value, (int, float)) and regression(name, key, value, target, baseline)
            old = baseline.get(name, {}).get("ratios", {}).get(key, {}).get("value")
            vs = "**worse by >20%**" if worse else (f"was {old}" if old is not None else "new")
            lines.append(f"| {name} | {key} | {value} | {target} | {'yes' if ok else 'no' if ok is False else '?'} | {vs} |")
    lines += ["", "Raw figures: `bench/out/results.json`.", ""]
    return "\n".join(lines)


def chart(results: list[dict], path: Path) -> bool:
    """Left: every ratio to its baseline per door (log scale, target marked). Right: the
    load run's gaps between deltas (latency a streaming user feels)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    labels, values, colors, targets = [], [], [], []
    for result in results:
        if result.get("name") == "load":
            continue
        for key, ratio in result.get("ratios", {}).items():
            value = ratio.get("value")
            if isinstance(value, (int, float)) and value > 0:
                labels.append(f"{result['name']}: {key}")
                values.append(value)
                ok = meets(value, ratio.get("target", ""))
                colors.append("#2a9d8f" if ok else "#e76f51" if ok is False else "#8d99ae")
                bound = re.search(r"([0-9.]+)", ratio.get("target", "") or "")
                targets.append(float(bound.group(1)) if bound else None)
    load = next((r for r in results if r.get("name") == "load" and "metrics" in r), None)
    if not values and load is None:
        return False
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(13, 0.42 * max(len(values), 6) + 1.8), gridspec_kw={"width_ratios": [3, 1]}
    )
    left.barh(labels, values, color=colors)
    for index, bound in enumerate(targets):
        if bound:
            left.plot([bound, bound], [index - 0.4, index + 0.4], color="#222", linewidth=2)
    left.axvline(1.0, color="#999", linewidth=0.8, linestyle=":")
    left.set_xscale("log")
    left.set_xlabel("onedoor / baseline, same run (log scale; black tick: target; green meets it, red misses it)")
    left.set_title("Throughput and latency ratios per door")
    left.invert_yaxis()
    if load is not None:
        gaps = load["metrics"].get("async", {})
        right.bar(["p50", "p99"], [gaps.get("gap_p50_ms", 0), gaps.get("gap_p99_ms", 0)], color=["#2a9d8f", "#457b9d"])
        right.axhline(250, color="#e76f51", linewidth=1, linestyle="--", label="p99 target 250 ms")
        right.axhline(50, color="#999", linewidth=0.8, linestyle=":", label="backend pace 50 ms")
        right.set_ylabel("ms between deltas")
        right.set_title(f"Load: {gaps.get('clients', '?')} concurrent streams")
        right.legend(loc="upper left", fontsize=8)
    else:
        right.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="short runs (what CI records)")
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per benchmark script")
    parser.add_argument("--update-baseline", action="store_true")
    args = parser.parse_args()
    wanted = {w for w in args.only.split(",") if w}
    scripts = sorted(HERE.glob("bench_*.py"))
    if wanted:
        scripts = [s for s in scripts if s.stem.removeprefix("bench_") in wanted]
    OUT.mkdir(exist_ok=True)
    mode = "quick" if args.quick else "full"
    committed = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    baseline = committed.get(mode, {})  # quick and full runs are compared only with their own kind
    results = []
    for script in scripts:
        print(f"bench: {script.name} …", file=sys.stderr, flush=True)
        result = run_script(script, args.quick, 180 if args.quick else args.timeout)
        print(f"bench: {script.name}: {json.dumps(result.get('ratios', result.get('error') or result.get('skipped')))}", file=sys.stderr)
        results.append(result)
    (OUT / "results.json").write_text(json.dumps({"quick": args.quick, "results": results}, indent=2))
    report = render(results, baseline, args.quick)
    (OUT / "report.md").write_text(report)
    chart(results, OUT / "chart.png")
    print(report)
    if args.update_baseline:  # the benchmarks run now replace theirs; the others' stay
        committed.setdefault(mode, {}).update({r["name"]: r for r in results if "ratios" in r})
        BASELINE.write_text(json.dumps(committed, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
