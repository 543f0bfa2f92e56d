#!/usr/bin/env python3
"""Checks the Grafana dashboard (deploy/grafana/namesrv.json) against a real Prometheus.

    grafana_check.py PROMETHEUS_URL [--dashboard FILE] [--instance REGEX] [--window S]

First the dashboard's model: JSON, schemaVersion, a `datasource` variable of type datasource
and an `instance` variable from label_values(..., instance) that every panel uses; every panel
on `${datasource}`; the event-only panels below, and only they, say "Event-only" in their
description; the panels over namesrv_controller_* series, and only they, say "Controller-only".
Then every query of every panel, with the variables as Grafana would fill them in
(`$instance` as the "All" regex, `$__rate_interval` as 1m), through Prometheus' query API:
`/api/v1/query` must answer `success`, every query must have data — a finite sample now or
anywhere in the dashboard's time range (`/api/v1/query_range` over the last --window seconds,
which is what Grafana draws: a latency quantile of a minute without requests is NaN, a gauge
may be back at 0) — and at least one query of the panel a value other than 0 there, so that a
panel whose query is subtly wrong (a label that never matches, a counter that never moves)
fails. Event-only and controller-only panels need only valid queries.

Prints one PASS/FAIL line per panel, naming it; exit status 1 if any failed.
"""

import argparse
import json
import math
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

# Panels whose lines move only when something goes wrong (a broker evicted, eviction protection
# holding, name servers disagreeing): their queries must be valid, their values may be 0, or
# absent, all through a healthy run. Each says so in its description, which this check holds it
# to.
EVENT_ONLY = {"Evictions by reason", "Eviction protection", "Peer divergent brokers"}
EVENT_ONLY_MARK = "Event-only"

# Panels over the controller's series (namesrv_controller_*), which only a name server with
# enableControllerInNamesrv=true or a standalone controller exposes. The compat run's
# Prometheus scrapes plain name servers (the controller is proven against real brokers in its
# own group), so these panels get the event-only treatment: valid queries suffice. A panel is
# controller-only when, and only when, a query of it names a namesrv_controller_ series, and
# its description says so.
CONTROLLER_PREFIX = "namesrv_controller_"
CONTROLLER_ONLY_MARK = "Controller-only"


def controller_only(panel):
    return any(CONTROLLER_PREFIX in t.get("expr", "") for t in panel.get("targets", []))

# What Grafana puts in place of its built-in variables (a 1 s scrape interval here; Grafana's
# $__rate_interval is at least four scrape intervals, and 1m is its usual value).
BUILTINS = {"$__rate_interval": "1m", "$__interval": "15s", "$__range": "1h"}

DEFAULT_DASHBOARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                 "deploy", "grafana", "namesrv.json")


def panels(dashboard):
    """Every panel that is not a row, rows' nested panels included."""
    for p in dashboard.get("panels", []):
        if p.get("type") == "row":
            yield from p.get("panels", [])
        else:
            yield p


def model_problems(d):
    """What is wrong with the dashboard's model, as a list of sentences."""
    problems = []
    if not isinstance(d.get("schemaVersion"), int) or d["schemaVersion"] < 36:
        problems.append("schemaVersion %r (Grafana 10/11 want 36 or later)" % d.get("schemaVersion"))
    if not d.get("uid") or not d.get("title"):
        problems.append("no uid or title")
    variables = {v.get("name"): v for v in d.get("templating", {}).get("list", [])}
    ds = variables.get("datasource", {})
    if ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        problems.append("no `datasource` variable of type datasource over prometheus")
    inst = variables.get("instance", {})
    definition = inst.get("definition", "")
    if inst.get("type") != "query" or not definition.startswith("label_values(") \
            or not definition.replace(" ", "").endswith(",instance)"):
        problems.append("no `instance` variable from label_values(..., instance)")
    ids = set()
    for p in panels(d):
        title = p.get("title", "<untitled>")
        if p.get("id") in ids:
            problems.append("panel %r: id %r used twice" % (title, p.get("id")))
        ids.add(p.get("id"))
        if (p.get("datasource") or {}).get("uid") != "${datasource}":
            problems.append("panel %r: datasource is not ${datasource}" % title)
        if not p.get("targets"):
            problems.append("panel %r: no queries" % title)
        for t in p.get("targets", []):
            if '=~"$instance"' not in t.get("expr", ""):
                problems.append("panel %r: query %s does not select instance=~\"$instance\""
                                % (title, t.get("refId")))
        marked = EVENT_ONLY_MARK in p.get("description", "")
        if marked != (title in EVENT_ONLY):
            problems.append("panel %r: description %s %r but the checker's list %s it"
                            % (title, "says" if marked else "lacks", EVENT_ONLY_MARK,
                               "has" if title in EVENT_ONLY else "lacks"))
        if (CONTROLLER_ONLY_MARK in p.get("description", "")) != controller_only(p):
            problems.append("panel %r: its description %s %r but its queries %s %s series"
                            % (title, "says" if not controller_only(p) else "lacks",
                               CONTROLLER_ONLY_MARK,
                               "name no" if not controller_only(p) else "name",
                               CONTROLLER_PREFIX))
    for title in EVENT_ONLY - {p.get("title") for p in panels(d)}:
        problems.append("event-only panel %r is not in the dashboard" % title)
    return problems


def substitute(expr, instance):
    for name, value in BUILTINS.items():
        expr = expr.replace(name, value)
    return expr.replace("${instance}", instance).replace("$instance", instance)


def api(prom, path, params):
    url = prom.rstrip("/") + path + "?" + urllib.parse.urlencode(params)
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.loads(r.read().decode("utf-8"))
    except urllib.error.HTTPError as e:  # a bad query is a 400 with a JSON body
        return json.loads(e.read().decode("utf-8") or "{}")


def finite_values(values):
    """The finite numbers among Prometheus' sample values (strings; NaN and ±Inf left out)."""
    out = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f):
            out.append(f)
    return out


def run_query(prom, expr, window):
    """(error, series now, peak): peak is the largest finite |value| now or, if that is 0 or
    there is none, over the last `window` seconds; None when there is no finite value at all."""
    now = time.time()
    answer = api(prom, "/api/v1/query", {"query": expr, "time": "%.3f" % now})
    if answer.get("status") != "success":
        return "%s: %s" % (answer.get("errorType", "error"), answer.get("error", answer)), 0, None
    result = answer["data"]["result"]
    values = finite_values(s["value"][1] for s in result)
    if values and max(map(abs, values)) > 0:
        return None, len(result), max(map(abs, values))
    # A step of a second or two: a state that lasted a few scrapes is not stepped over.
    step = max(1, window // 3000)
    ranged = api(prom, "/api/v1/query_range", {"query": expr, "start": "%.3f" % (now - window),
                                               "end": "%.3f" % now, "step": str(step)})
    if ranged.get("status") != "success":
        return "range: %s" % ranged.get("error", ranged), len(result), None
    values += finite_values(v for s in ranged["data"]["result"] for _, v in s["values"])
    return None, len(result), max(map(abs, values)) if values else None


def check_panel(prom, panel, instance, window):
    """(ok, line) for one panel: every query valid; unless the panel is event-only, every query
    with a finite value and at least one of them not 0 in the time range."""
    title = panel.get("title", "<untitled>")
    event_only = title in EVENT_ONLY or controller_only(panel)
    notes, failures, peaks = [], [], []
    for t in panel["targets"]:
        ref, expr = t.get("refId", "?"), substitute(t["expr"], instance)
        error, series, peak = run_query(prom, expr, window)
        if error:
            failures.append("query %s is refused (%s): %s" % (ref, error, expr))
            continue
        if peak is None and not event_only:
            failures.append("query %s has no data now nor in the last %ds: %s" % (ref, window, expr))
        peaks.append(peak or 0.0)
        notes.append("%s %d series, peak %s" % (ref, series, "none" if peak is None else "%g" % peak))
    if not failures and not event_only and not any(peaks):
        failures.append("every query is 0 all through the last %ds (%s)" % (window, ", ".join(notes)))
    if failures:
        return False, "FAIL grafana: step panel %r (Prometheus query API) failed: %s" % (
            title, "; ".join(failures))
    kind = ""
    if controller_only(panel):
        kind = " (controller-only: valid queries suffice)"
    elif event_only:
        kind = " (event-only: valid queries suffice)"
    return True, "PASS grafana: step panel %r (Prometheus query API) - %s%s" % (
        title, ", ".join(notes), kind)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("prometheus")
    ap.add_argument("--dashboard", default=DEFAULT_DASHBOARD)
    ap.add_argument("--instance", default=".+", help="what $instance becomes (default: All)")
    ap.add_argument("--window", type=int, default=3600, help="time range in seconds (default 1h)")
    args = ap.parse_args()

    t0 = time.time()
    with open(args.dashboard, encoding="utf-8") as f:
        dashboard = json.load(f)
    problems = model_problems(dashboard)
    if problems:
        print("FAIL grafana: step dashboard model (%s) failed: %s" % (args.dashboard, "; ".join(problems)))
        return 1
    print("PASS grafana: step dashboard model - schemaVersion %d, %d panels, variables datasource "
          "and instance" % (dashboard["schemaVersion"], len(list(panels(dashboard)))))

    definition = next(v for v in dashboard["templating"]["list"] if v["name"] == "instance")["definition"]
    metric = definition[len("label_values("):].split(",")[0].strip()
    values = api(args.prometheus, "/api/v1/label/instance/values", {"match[]": metric})
    if values.get("status") != "success" or not values.get("data"):
        print("FAIL grafana: step variable instance (%s) failed: no values (%s)" % (definition, values))
        return 1
    print("PASS grafana: step variable instance (%s) - %s" % (definition, ", ".join(values["data"])))

    failed = 0
    for panel in panels(dashboard):
        ok, line = check_panel(args.prometheus, panel, args.instance, args.window)
        print(line)
        failed += not ok
    total = len(list(panels(dashboard)))
    controller = sum(1 for p in panels(dashboard) if controller_only(p))
    print("%s grafana: %d of %d panels have data or are event-only (%d event-only, %d "
          "controller-only), %.1f s" % ("FAIL" if failed else "PASS", total - failed, total,
                                         len(EVENT_ONLY), controller, time.time() - t0))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
