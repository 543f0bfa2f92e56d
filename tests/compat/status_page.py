#!/usr/bin/env python3
"""The status page in a real browser: headless Chromium (Debian's `chromium`) against a name
server holding brokers, topics and KV entries.

    status_page.py NAMESRV_HOST:PORT HTTP_HOST:PORT --out DIR [--chromium PATH]

Registers fake brokers (two clusters, a master/slave group, a group whose write permission is
wiped), puts KV entries, then drives Chromium over the DevTools protocol (through
--remote-debugging-pipe, so Python's standard library is enough): the page's content on a
laptop-sized and a phone-sized screen, no horizontal scrolling on the phone, nothing loaded
from elsewhere, the topic search through the form, and the page reloading itself. Saves
DIR/status-page.png (laptop, full page), DIR/status-page-phone.png,
DIR/status-page-route.png and, once the history has a sample, DIR/status-page-trends.png (the
trends charts must be drawn with data). Prints PASS/FAIL lines like the other compat checks; exit status 1
if any step failed.
"""

import argparse
import base64
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_broker as fb  # noqa: E402  (the suite's wire-protocol helpers)

LABEL = "chromium status page"
PUT_KV_CONFIG, WIPE_WRITE_PERM_OF_BROKER = 100, 205

# (cluster, group, id, address, zone, topics)
BROKERS = [
    ("DefaultCluster", "broker-a", 0, "127.0.0.1:10911", None,
     "TopicTest:4:4:6,Orders:8:8:6,OrderEvents:4:4:6,TBW102:8:8:7"),
    ("DefaultCluster", "broker-a", 1, "127.0.0.1:10921", None,
     "TopicTest:4:4:6,Orders:8:8:6,OrderEvents:4:4:6,TBW102:8:8:7"),
    ("DefaultCluster", "broker-b", 0, "127.0.0.1:10931", None,
     "TopicTest:4:4:6,Payments:4:4:6,Refunds:2:2:6,TBW102:8:8:7"),
    ("ClusterEU", "broker-eu-1", 0, "127.0.0.1:10941", "eu-west-1a",
     "Shipments:16:16:6,Invoices:4:4:6,TBW102:8:8:7"),
]
KV = [("ORDER_TOPIC_CONFIG", "Orders", "broker-a:8"), ("app", "feature.search", "on")]

failed = False


def step(name, ok, detail=""):
    global failed
    if ok:
        print("PASS %s: step %s (HTTP)%s" % (LABEL, name, (" - " + detail) if detail else ""), flush=True)
    else:
        failed = True
        print("FAIL %s: step %s (HTTP) failed: %s" % (LABEL, name, detail), flush=True)
    return ok


def populate(namesrv):
    """Registers the brokers (each on its own connection, kept open) and writes KV entries."""
    conns = []
    for cluster, group, broker_id, addr, zone, topics in BROKERS:
        conn = fb.Connection(namesrv)
        dv = fb.data_version("v5-json", 3, int(time.time() * 1000))
        body = fb.json_body("v5-json", fb.parse_topics(topics), dv)
        ext = {"brokerName": group, "brokerAddr": addr, "clusterName": cluster,
               "haServerAddr": addr.rsplit(":", 1)[0] + ":10912", "brokerId": broker_id,
               "compressed": "false", "enableActingMaster": "false",
               "bodyCrc32": zlib.crc32(body) & 0x7FFFFFFF}
        if zone:
            ext["__ZONE_NAME"] = zone
        head, _ = conn.call(fb.REGISTER_BROKER, ext, body, fb.V5_3_3)
        if head.get("code") != fb.SUCCESS:
            raise SystemExit("FAIL %s: step register %s failed: %s" % (LABEL, addr, fb.answer(head)))
        conns.append(conn)
    admin = conns[0]
    head, _ = admin.call(WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-b"})
    if head.get("code") != fb.SUCCESS:
        raise SystemExit("FAIL %s: step wipe write permission failed: %s" % (LABEL, fb.answer(head)))
    for ns, key, value in KV:
        head, _ = admin.call(PUT_KV_CONFIG, {"namespace": ns, "key": key, "value": value})
        if head.get("code") != fb.SUCCESS:
            raise SystemExit("FAIL %s: step put KV failed: %s" % (LABEL, fb.answer(head)))
    return conns


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe pair (fds 3 and 4)."""

    def __init__(self, chromium):
        self.profile = tempfile.mkdtemp(prefix="namesrv-chromium-")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        # Chromium reads commands from fd 3 and writes answers to fd 4. Move the child's ends
        # above both numbers first, so that placing them cannot overwrite one another.
        high_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
        high_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
        os.close(to_chrome_r)
        os.close(from_chrome_w)

        def wire_fds():
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.log = open(os.path.join(self.profile, "chromium.log"), "wb")
        args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--remote-debugging-pipe", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--hide-scrollbars", "--user-data-dir=" + self.profile,
                "about:blank"]
        self.proc = subprocess.Popen(args, preexec_fn=wire_fds, pass_fds=(3, 4),
                                     stdout=self.log, stderr=self.log)
        os.close(high_r)
        os.close(high_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            if time.time() > deadline:
                raise TimeoutError("Chromium did not answer")
            chunk = os.read(self.from_chrome, 65536)
            if not chunk:
                raise ConnectionError("Chromium closed the DevTools pipe")
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, session=False, timeout=30, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, timeout=30):
        deadline = time.time() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method:
                    del self.events[: i + 1]
                    return e
            self.events.append(self._read_message(deadline))

    def eval(self, expression):
        r = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError("page script failed: %s" % r["exceptionDetails"])
        return r["result"].get("value")

    def screen(self, width, height, mobile):
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=2 if mobile else 1, mobile=mobile)

    def open(self, url):
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        self.wait_event("Page.loadEventFired")

    def screenshot(self, path, full_page):
        params = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
            size = self.call("Page.getLayoutMetrics", session=True)["cssContentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        data = self.call("Page.captureScreenshot", session=True, **params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except (OSError, RuntimeError, TimeoutError, ConnectionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        subprocess.call(["rm", "-rf", self.profile])


def check_page(b, base, out):
    b.screen(1280, 900, mobile=False)
    b.open(base + "/")
    text = b.eval("document.body.innerText")
    expected = ["DefaultCluster", "ClusterEU", "broker-a", "broker-eu-1", "127.0.0.1:10921",
                "V5_3_3", "zone eu-west-1a", "read-only (write permission wiped)", "ready",
                "ORDER_TOPIC_CONFIG", "effective keys", "connections open", "live brokers"]
    missing = [e for e in expected if e not in text]
    step("laptop_content", not missing, "missing %s" % missing if missing else "clusters, groups, brokers, KV, config")
    cards = b.eval("Object.fromEntries([...document.querySelectorAll('#summary .card')]"
                   ".map(c => [c.querySelector('span').innerText.split(' (')[0].split(' in ')[0],"
                   " c.querySelector('b').innerText]))")
    want = {"clusters": "2", "broker groups": "3", "live brokers": "4", "topics": "8"}
    wrong = {k: (cards.get(k), v) for k, v in want.items() if cards.get(k) != v}
    step("laptop_counts", not wrong, "got/expected %s" % wrong if wrong else json.dumps(cards))
    resources = b.eval("performance.getEntriesByType('resource').map(e => e.name)"
                       ".filter(n => !n.startsWith(location.origin + '/'))")
    step("nothing_loaded_from_elsewhere", resources == [], "from other origins: %s" % resources)
    overflow = b.eval("document.documentElement.scrollWidth - window.innerWidth")
    step("laptop_no_horizontal_scroll", overflow <= 0, "page overflow %s px" % overflow)
    b.screenshot(os.path.join(out, "status-page.png"), full_page=True)

    # The topic search, through the form as a reader uses it.
    b.eval("document.querySelector('input[name=topic]').value = 'Order'")
    b.events.clear()
    b.eval("document.querySelector('#topics form').submit()")
    b.wait_event("Page.loadEventFired")
    text = b.eval("document.body.innerText")
    step("search_lists_matches", "Topics containing “Order” (2)" in text and "OrderEvents" in text,
         "the form's search for 'Order' lists Orders and OrderEvents")
    b.open(base + "/?topic=Orders#topics")
    text = b.eval("document.querySelector('#topics').innerText")
    ok = ("Route of Orders" in text and "0 → 127.0.0.1:10911" in text and "1 → 127.0.0.1:10921" in text
          and "6 (read, write)" in text)
    step("route_as_clients_see_it", ok, "route section: %r" % text[:200])
    b.eval("document.getElementById('route').scrollIntoView()")
    b.screenshot(os.path.join(out, "status-page-route.png"), full_page=False)

    # A phone: everything readable without scrolling sideways; wide tables scroll in place.
    b.screen(390, 844, mobile=True)
    b.open(base + "/")
    overflow = b.eval("document.documentElement.scrollWidth - window.innerWidth")
    step("phone_no_horizontal_scroll", overflow <= 0, "page overflow %s px at 390 px wide" % overflow)
    font = b.eval("parseFloat(getComputedStyle(document.body).fontSize)")
    step("phone_text_size", font >= 14, "body font %s px" % font)
    columns = b.eval("getComputedStyle(document.querySelector('#summary')).gridTemplateColumns.split(' ').length")
    step("phone_cards_wrap", columns <= 2, "%s card columns on a phone" % columns)
    b.screenshot(os.path.join(out, "status-page-phone.png"), full_page=False)

    # The page reloads itself (a marker set on the page disappears with the reload).
    b.eval("window.namesrvMarker = 1")
    b.events.clear()
    try:
        b.wait_event("Page.loadEventFired", timeout=20)
        reloaded = b.eval("window.namesrvMarker === undefined")
    except TimeoutError:
        reloaded = False
    step("reloads_itself", reloaded, "the page reloaded itself" if reloaded else "no reload within 20 s")
    check_trends(b, base, out)


CHARTS_JS = ("[...document.querySelectorAll('#trends figure.chart')].map(f => ({id: f.id,"
             " width: f.querySelector('svg').getBoundingClientRect().width,"
             " dots: f.querySelectorAll('circle.dot').length,"
             " hover: f.querySelectorAll('.hover rect title').length}))")


def fine(charts):
    return [c for c in charts if c["id"] != "chart-registrations"]


def check_trends(b, base, out):
    """The trends charts once the history holds a sample (one every 10 s): six charts, each
    drawn at a readable width, each with its newest points and hover titles (registrations
    and evictions are drawn from one-minute samples, so that one only after a minute)."""
    charts, deadline = [], time.time() + 30
    while time.time() < deadline:
        b.open(base + "/")
        charts = b.eval(CHARTS_JS)
        if len(charts) == 6 and all(c["dots"] > 0 for c in fine(charts)):
            break
        time.sleep(2)
    step("trends_charts", len(charts) == 6, "%d charts: %s" % (len(charts), [c["id"] for c in charts]))
    empty = [c["id"] for c in fine(charts) if c["dots"] == 0 or c["hover"] == 0]
    step("trends_have_data", charts and not empty, "charts without data: %s" % empty if empty else
         "every chart has points and hover values")
    narrow = [(c["id"], round(c["width"])) for c in charts if c["width"] < 300]
    step("trends_readable_on_a_phone", not narrow, "narrow charts %s" % narrow if narrow else
         "charts at %d px" % round(charts[0]["width"]) if charts else "no charts")
    b.screen(1280, 900, mobile=False)
    b.open(base + "/")
    b.eval("document.getElementById('trends').scrollIntoView()")
    b.screenshot(os.path.join(out, "status-page-trends.png"), full_page=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("namesrv")
    ap.add_argument("http")
    ap.add_argument("--out", required=True)
    ap.add_argument("--chromium", default="chromium")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    conns = populate(args.namesrv)
    step("populate", True, "%d brokers in 2 clusters, %d KV entries" % (len(conns), len(KV)))
    browser = Browser(args.chromium)
    try:
        check_page(browser, "http://" + args.http, args.out)
    except (OSError, RuntimeError, TimeoutError, ConnectionError, StopIteration) as e:
        step("browser", False, "%s: %s" % (type(e).__name__, e))
    finally:
        browser.close()
        for c in conns:
            c.close()
    if not failed:
        print("screenshots in %s" % args.out, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
