#!/usr/bin/env python3
"""Checks of the name server's /metrics with the real Prometheus tools.

    prometheus_check.py lint METRICS_URL
        promtool check metrics on the body, the fixed metric names with their types and
        labels, and every histogram's +Inf bucket equal to its _count.
    prometheus_check.py value PROMETHEUS_URL QUERY
        prints the value of an instant query that yields one sample (0 when it yields none).
    prometheus_check.py wait PROMETHEUS_URL QUERY {eq,ge,gt} NUMBER [--timeout S] [--label L]
        polls Prometheus' query API until the query's single sample satisfies the comparison.

Prints PASS/FAIL lines like the other compat checks; exit status 1 on failure.
"""

import argparse
import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request

# The fixed interface: name, type, labels every series of it must carry.
FIXED = [
    ("namesrv_requests_total", "counter", ("request_code", "response_code")),
    ("namesrv_live_brokers", "gauge", ("cluster",)),
    ("namesrv_topics", "gauge", ()),
    ("namesrv_connections_open", "gauge", ()),
]


def get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.headers.get("Content-Type", ""), r.read().decode("utf-8")


def histogram_problems(lines):
    """Histogram series whose buckets do not rise to their _count at le="+Inf" (promtool does
    not look at values): every quantile computed from them would be wrong."""
    samples = {}
    for line in lines:
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = value
    problems = []
    for name, value in samples.items():
        if "_bucket{" not in name or 'le="+Inf"' not in name:
            continue
        base, labels = name.split("_bucket{", 1)
        rest = ",".join(l for l in labels.rstrip("}").split(",") if l and not l.startswith("le="))
        count = samples.get("%s_count{%s}" % (base, rest) if rest else base + "_count")
        if count != value:
            problems.append("%s is %s but its _count is %s" % (name, value, count))
    return problems


def lint(args):
    label = args.label or "promtool check metrics"
    status, ctype, body = get(args.url)
    problems = []
    if status != 200 or not ctype.startswith("text/plain"):
        problems.append("GET %s: %s %s" % (args.url, status, ctype))
    tool = subprocess.run(["promtool", "check", "metrics"], input=body.encode(), capture_output=True,
                          timeout=60)
    if tool.returncode != 0:
        problems.append("promtool: %s" % (tool.stdout + tool.stderr).decode(errors="replace").strip())
    lines = body.splitlines()
    for name, kind, labels in FIXED:
        if "# TYPE %s %s" % (name, kind) not in lines:
            problems.append("no %s %s" % (kind, name))
        for line in lines:
            if line.startswith(name + "{") or line.startswith(name + " "):
                missing = [l for l in labels if ('%s="' % l) not in line.split(" ")[0]]
                if missing:
                    problems.append("%s lacks labels %s" % (line, missing))
    problems += histogram_problems(lines)
    series = sum(1 for l in lines if l and not l.startswith("#"))
    if problems:
        print("FAIL %s: step lint (HTTP GET /metrics) failed: %s" % (label, "; ".join(problems)))
        return 1
    print("PASS %s: step lint (HTTP GET /metrics) - promtool clean, %d series, fixed names present"
          % (label, series))
    return 0


def query(prom, q):
    url = prom.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
    _, _, body = get(url)
    data = json.loads(body)
    if data.get("status") != "success":
        raise ValueError("query %s: %s" % (q, data))
    result = data["data"]["result"]
    if len(result) > 1:
        raise ValueError("query %s yields %d series; expected one" % (q, len(result)))
    return float(result[0]["value"][1]) if result else None


def value(args):
    print("%g" % (query(args.prometheus, args.query) or 0.0))
    return 0


def wait(args):
    label = args.label or "prometheus"
    ops = {"eq": lambda a, b: a == b, "ge": lambda a, b: a >= b, "gt": lambda a, b: a > b}
    deadline = time.time() + args.timeout
    last = None
    while True:
        try:
            last = query(args.prometheus, args.query)
        except (OSError, ValueError) as e:
            last = "error: %s" % e
        if isinstance(last, float) and ops[args.op](last, args.number):
            print("PASS %s: step %s %s %g (Prometheus query API) - value %g"
                  % (label, args.query, args.op, args.number, last))
            return 0
        if time.time() > deadline:
            print("FAIL %s: step %s %s %g (Prometheus query API) failed: last value %s after %ds"
                  % (label, args.query, args.op, args.number, last, args.timeout))
            return 1
        time.sleep(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("lint")
    p.add_argument("url")
    p.add_argument("--label", default="")
    p = sub.add_parser("value")
    p.add_argument("prometheus")
    p.add_argument("query")
    p = sub.add_parser("wait")
    p.add_argument("prometheus")
    p.add_argument("query")
    p.add_argument("op", choices=("eq", "ge", "gt"))
    p.add_argument("number", type=float)
    p.add_argument("--timeout", type=int, default=60)
    p.add_argument("--label", default="")
    args = ap.parse_args()
    return {"lint": lint, "value": value, "wait": wait}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
