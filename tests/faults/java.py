#!/usr/bin/env python3
"""Java 5.3.3 brokers against our embedded controller group under faults (issue 24).

  python3 tests/faults/java.py [--scenario NAME]... [--keep] [--work DIR] [--json FILE]

Three name servers with embedded controller nodes (n0..n2), three Java brokers of one set in
controller mode (b0..b2) and java-broker's SendConsume client (c), each in its own network
namespace (tests/faults/netns.py). Scenarios (all by default): java-master-paused,
java-leader-partitioned, java-double-kill, java-leader-master-partitioned; what each does and
asserts: java/scenarios.py.

Timeouts: short by default (3 s broker heartbeat timeout, 1 s scans); FAULTS_JAVA_TIMEOUTS=1 runs
with Java's (10 s, 5 s scans). NAMESRV_BIN overrides target/release/namesrv;
NAMESRV_COMPAT_JAVA_BROKER the java-broker package (default ../shared/peers/java-broker).
Prints PASS/FAIL/NOTE lines, one RESULT line per scenario (timings, message counts) and, last,
`java faults: N scenarios, M violations`; exit 0 only with zero violations. Without
CAP_NET_ADMIN it says so and exits 0 with 0 scenarios. Everything is torn down at the end (the
JVMs and name servers by process group, the namespaces by Net.close()), on failure too; the
work directory is kept when a violation was seen or with --keep.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from java.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
