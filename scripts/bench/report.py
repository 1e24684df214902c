#!/usr/bin/env python3
"""The table and target/bench/latest.json of scripts/bench.sh.

report.py RUNS.jsonl EXTRA.jsonl OUT.json

RUNS: one wrk run per line (bench.sh `load`); EXTRA: the one-off figures.
Every load figure is also given as a ratio to echo_baseline at the same
connection count (same run of the script).
"""
import json
import os
import platform
import sys
import time


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main(runs_path, extra_path, out_path):
    all_runs = [json.loads(l) for l in open(runs_path) if l.strip()]
    # Repeated runs of one workload: keep the median run by throughput (its
    # req/s, CPU and RSS); p50 and p99 are each the median over the runs.
    groups = {}
    for r in all_runs:
        groups.setdefault((r["name"], r["c"]), []).append(r)
    runs = []
    for r in all_runs:
        g = groups[(r["name"], r["c"])]
        if r is g[0]:
            ranked = sorted(g, key=lambda x: x["requests"] / x["duration_us"])
            med = dict(ranked[len(ranked) // 2])
            med["rounds"] = [round(x["requests"] / x["duration_us"] * 1e6) for x in g]
            for k in ("p50_us", "p99_us"):
                med[k + "_rounds"] = [x[k] for x in g]
                med[k] = sorted(med[k + "_rounds"])[len(g) // 2]
            runs.append(med)
    extra = [json.loads(l) for l in open(extra_path) if l.strip()]
    echo = {}
    rows = []
    for r in runs:
        secs = r["duration_us"] / 1e6
        n = max(r["requests"], 1)
        row = {
            "name": r["name"],
            "c": r["c"],
            "requests": r["requests"],
            "req_per_s": round(r["requests"] / secs, 1),
            "p50_ms": r["p50_us"] / 1000,
            "p99_ms": r["p99_us"] / 1000,
            "cpu_s_per_100k": round(r["cpu_ticks"] / r["clk_tck"] / n * 1e5, 3),
            "rss_anon_mb": round(r["rss_anon_kb"] / 1024, 1),
            "rss_file_mb": round(r["rss_file_kb"] / 1024, 1),
            "bytes_per_answer": round(r["bytes"] / n),
            "errors": {k[4:]: r[k] for k in r if k.startswith("err_") and r[k]},
            "rounds_req_per_s": r["rounds"],
            "p99_ms_rounds": [x / 1000 for x in r.get("p99_us_rounds", [])],
        }
        if r["name"] == "echo_baseline":
            echo[r["c"]] = row
        rows.append(row)
    for row in rows:
        e = echo.get(row["c"])
        if e:
            row["x_echo"] = {
                "req_per_s": round(row["req_per_s"] / e["req_per_s"], 3),
                "p50": round(row["p50_ms"] / e["p50_ms"], 2) if e["p50_ms"] else None,
                "p99": round(row["p99_ms"] / e["p99_ms"], 2) if e["p99_ms"] else None,
                "cpu": round(row["cpu_s_per_100k"] / e["cpu_s_per_100k"], 2)
                if e["cpu_s_per_100k"]
                else None,
            }

    one = {}
    fairness = []
    for x in extra:
        if x["kind"] == "fairness":
            fairness.append({"server": x["server"], "c": x["c"], **x["value"]})
        else:
            one[x["kind"]] = x["value"]
    startup = sorted(one.get("startup_ms", [0]))
    startup_ms = startup[len(startup) // 2]
    prefill = one.get("prefill", {"blocks": 0, "ms": 1})
    follower = one.get("follower", {"blocks": 0, "ms": 1})
    stats = one.get("ledger_stats", {})

    def get(name, c):
        return next((r for r in rows if r["name"] == name and r["c"] == c), None)

    def fair(server, c):
        return next((f for f in fairness if f["server"] == server and f["c"] == c), None)

    targets = []

    def target(what, value, ok):
        targets.append({"target": what, "value": value, "met": bool(ok)})

    for c in (16, 64):
        r, f = get("by_number", c), fair("big", c)
        if r and "x_echo" in r:
            served = f"{f['served']}/{f['conns']} connections served" if f else "fairness not run"
            target(
                f"getSoftConfirmationByNumber >= 0.9x echo_baseline at c={c}, every connection served",
                f"{r['x_echo']['req_per_s']}x, {served}",
                r["x_echo"]["req_per_s"] >= 0.9 and f and f["served"] == f["conns"],
            )
    for name in ("by_number", "status", "head_height", "commitments"):
        r = get(name, 16)
        if r:
            rounds = r.get("p99_ms_rounds", [])
            runs = f" (median of {len(rounds)}: runs {', '.join(f'{x:.2f}' for x in rounds)})" if len(rounds) > 1 else ""
            target(f"p99 <= 1 ms at c=16: {name}", f"{r['p99_ms']:.2f} ms{runs}", r["p99_ms"] <= 1.0)
    r = get("by_number", 64)
    if r:
        target("RssAnon <= 8 MB under c=64 on the big ledger", f"{r['rss_anon_mb']} MB", r["rss_anon_mb"] <= 8)
    target("start-up to listening on the big ledger <= 100 ms", f"{startup_ms} ms (median of {len(startup)})", startup_ms <= 100)
    if stats:
        target(
            "ledger bytes per block <= 1.3x raw field bytes",
            f"{stats['disk_over_raw']}x ({stats['disk_per_block']} B on disk / {stats['raw_per_block']} B raw per block)",
            stats["disk_over_raw"] <= 1.3,
        )
    r = get("last_proof_1mb", 1)
    if r:
        target("1 MB proof answered in <= 15 ms (p50, c=1)", f"{r['p50_ms']:.1f} ms", r["p50_ms"] <= 15)
    best = max((x for x in rows if x["name"] == "range100"), key=lambda x: x["req_per_s"], default=None)
    if best:
        target("range of 100 >= 1,500 req/s", f"{best['req_per_s']:.0f} req/s (c={best['c']})", best["req_per_s"] >= 1500)
    for c in sorted({x["c"] for x in rows}):
        big, small = get("by_number", c), get("by_number_10k", c)
        if big and small:
            q = big["req_per_s"] / small["req_per_s"]
            target(f"throughput at 1M blocks within 10% of 10k blocks (c={c})", f"{q:.3f}x", q >= 0.9)

    report = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {"nproc": os.cpu_count(), "cpu": cpu_model(), "kernel": platform.release()},
        "echo_bytes": one.get("echo_bytes"),
        "runs": rows,
        "fairness": fairness,
        "startup_ms": startup,
        "prefill_blocks_per_s": round(prefill["blocks"] / (prefill["ms"] / 1000)),
        "follower_blocks_per_s": round(follower["blocks"] / (follower["ms"] / 1000)),
        "follower_blocks": follower["blocks"],
        "ledger": stats,
        "targets": targets,
    }
    with open(out_path, "w") as f:
        json.dump(report, f, indent=1)

    m = report["machine"]
    print(f"\nledgerd bench, {report['date']}, {m['nproc']} x {m['cpu']}")
    print(f"echo_baseline answers {report['echo_bytes']} bytes (the average getSoftConfirmationByNumber answer)\n")
    print("| workload | c | req/s | x echo | p50 ms | p99 ms | CPU s/100k req | x echo | RssAnon MB | RssFile MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        x = r.get("x_echo", {})
        err = f" (errors {r['errors']})" if r["errors"] else ""
        if len(r["rounds_req_per_s"]) > 1:
            err += " (median of 3)"
        print(
            f"| {r['name']}{err} | {r['c']} | {r['req_per_s']:.0f} | {x.get('req_per_s', '')} | "
            f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['cpu_s_per_100k']:.2f} | {x.get('cpu', '')} | "
            f"{r['rss_anon_mb']} | {r['rss_file_mb']} |"
        )
    print()
    for f in fairness:
        print(f"fairness {f['server']} c={f['c']}: {f['served']}/{f['conns']} connections served (answers per connection {f['min']}..{f['max']})")
    print(f"start-up to listening on the big ledger: {startup_ms} ms (runs {startup})")
    if stats:
        print(
            f"ledger: {stats['blocks']} blocks, {stats['disk_bytes'] / 1e6:.0f} MB on disk = {stats['disk_per_block']} B/block; "
            f"raw fields {stats['raw_per_block']} B/block (blocks alone {stats['raw_block_per_block']}) -> {stats['disk_over_raw']}x"
        )
    if stats.get("tables"):
        per = ", ".join(
            f"{name} {t['bytes'] / stats['blocks']:.1f}" for name, t in stats["tables"].items() if t["bytes"]
        )
        print(f"  on disk per block, by table (B): {per}; free list {stats['free_bytes'] / stats['blocks']:.1f}")
    print(f"devnet prefill: {report['prefill_blocks_per_s']} blocks/s; follower catch-up: {report['follower_blocks_per_s']} blocks/s ({follower['blocks']} blocks)")
    print("\n| target | measured | met |\n|---|---|---|")
    for t in targets:
        print(f"| {t['target']} | {t['value']} | {'yes' if t['met'] else 'NO'} |")
    print(f"\nwritten: {out_path}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
