#!/usr/bin/env python3
"""Scrapes a /metrics URL every INTERVAL seconds until stopped (SIGTERM), appending one JSON
line per scrape to OUT: wall time of the request in ms, the number of series in the body and
the value of namesrv_topics. benches/nsbench.sh runs it beside the load.

    scrape.py URL OUT [--interval 1]
"""

import json
import signal
import sys
import time
import urllib.request


def main():
    url, out = sys.argv[1], sys.argv[2]
    interval = float(sys.argv[sys.argv.index("--interval") + 1]) if "--interval" in sys.argv else 1.0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with open(out, "a") as f:
        while True:
            t0 = time.perf_counter()
            try:
                with urllib.request.urlopen(url, timeout=10) as r:
                    body = r.read().decode()
            except OSError as e:
                f.write(json.dumps({"error": str(e)}) + "\n")
                f.flush()
                time.sleep(interval)
                continue
            ms = (time.perf_counter() - t0) * 1000
            lines = [l for l in body.splitlines() if l and not l.startswith("#")]
            topics = next((float(l.split()[1]) for l in lines if l.startswith("namesrv_topics ")), None)
            f.write(json.dumps({"ms": round(ms, 3), "series": len(lines), "topics": topics,
                                "bytes": len(body)}) + "\n")
            f.flush()
            time.sleep(max(0.0, interval - (time.perf_counter() - t0)))


if __name__ == "__main__":
    main()
