#!/usr/bin/env python3
"""A stand-in RocketMQ broker for the namesrv compatibility suite (Python 3 standard library only).

It talks the remoting protocol (JSON headers) to a name server and never listens itself: the
broker address it advertises is only data.  Two sub-commands:

  register  NAMESRV --style {v4,v5-json,v5-zlib} [options] [--verify] [-- COMMAND ARGS...]
      Registers one broker (REGISTER_BROKER, 103) the way a real broker of that generation does:
        v4       a 4.9.x broker: request version 409 (V4_9_8), body without dataVersion.stateVersion,
                 without topic attributes and without the static-topic mapping tables, and no
                 enableActingMaster ext field (so the name server treats it as an old broker);
        v5-json  a 5.x broker: version 479 (V5_3_3), TopicConfigAndMappingSerializeWrapper JSON body,
                 enableActingMaster=false;
        v5-zlib  the same registration as a zlib-compressed binary body (RegisterBrokerBody#encode(true))
                 with the ext field compressed=true.
      Every body carries bodyCrc32 (CRC-32 masked with 0x7fffffff) like real brokers.
      With --verify it then asserts what the name server derived from the registration (routes in
      legacy and standard JSON, cluster info, topic lists, data-version queries, an unknown topic).
      If a COMMAND follows "--" it runs while the registering connection stays open (a name server
      forgets a broker whose connection closes) and the registration is refreshed every 20 s.
      Finally it sends UNREGISTER_BROKER (104) and, with --verify, waits (bounded) until the
      topics it registered have no route any more.
      Exit status: 0 when every step passed and COMMAND (if any) exited 0; otherwise non-zero
      (COMMAND's status if that failed, else 1; 2 for usage errors).

  wait-broker NAMESRV BROKER_NAME [--gone] [--timeout SECONDS] [--pid PID] [--label TEXT]
      Polls GET_BROKER_CLUSTER_INFO (106) until BROKER_NAME has a master address (or, with --gone,
      until it has none); with --pid it gives up as soon as that process is gone.
      Exit status 0 on success, 1 on timeout.

Every step prints one line:  PASS <label>: step <name> (request code <N>)[: detail]
or                           FAIL <label>: step <name> (request code <N>) failed: <what went wrong>
"""

import argparse
import json
import os
import re
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import zlib

# request codes
REGISTER_BROKER = 103
UNREGISTER_BROKER = 104
GET_ROUTEINFO_BY_TOPIC = 105
GET_BROKER_CLUSTER_INFO = 106
GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
GET_TOPICS_BY_CLUSTER = 224
QUERY_DATA_VERSION = 322

# response codes
SUCCESS = 0
TOPIC_NOT_EXIST = 17

# MQVersion ordinals
V4_9_8 = 409
V5_3_3 = 479
LEGACY_CLIENT = 121  # what old clients (ali-ons, pre-4.9.4 Java) send

PERM_INHERIT, PERM_READ, PERM_WRITE = 1, 4, 2


def log(line):
    print(line, flush=True)


# ---------------------------------------------------------------------------------------------
# Wire protocol
# ---------------------------------------------------------------------------------------------

# --tls: connect with TLS as a Java client with tls.enable=true does (any certificate, no SNI).
USE_TLS = False


class Connection:
    """One TCP connection to the name server; calls are serialised by a lock."""

    _opaque = 0
    _opaque_lock = threading.Lock()

    def __init__(self, addr, timeout=10.0):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        if USE_TLS:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            self.sock = ctx.wrap_socket(self.sock)
        self.lock = threading.Lock()

    @classmethod
    def next_opaque(cls):
        with cls._opaque_lock:
            cls._opaque += 1
            return cls._opaque

    def call(self, code, ext, body=b"", version=V5_3_3):
        """Sends one request and returns (response header dict, response body bytes)."""
        opaque = self.next_opaque()
        frame = encode(code, ext, body, opaque, version=version)
        with self.lock:
            self.sock.sendall(frame)
            while True:
                head, rbody = read_frame(self._read_exact)
                if head.get("opaque") == opaque and head.get("flag", 0) & RESPONSE_FLAG:
                    return head, rbody
                # a request from the server or a stray answer: not ours

    def _read_exact(self, n):
        return read_exact(self.sock, n)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


RESPONSE_FLAG = 1  # RemotingCommand's RPC_TYPE bit: an answer
ONEWAY_FLAG = 2  # RPC_ONEWAY: no answer wanted
MAX_FRAME = 64 << 20


def encode(code, ext, body=b"", opaque=0, flag=0, version=V5_3_3):
    """One frame with a JSON header, as a Java client of `version` sends it; ext fields that are
    None are left out."""
    header = {
        "code": code,
        "extFields": {k: str(v) for k, v in (ext or {}).items() if v is not None},
        "flag": flag,
        "language": "JAVA",
        "opaque": opaque,
        "serializeTypeCurrentRPC": "JSON",
        "version": version,
    }
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return struct.pack(">II", 4 + len(raw) + len(body), len(raw)) + raw + body


def read_exact(sock, n):
    chunks = []
    while n > 0:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError("peer closed the connection")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(read):
    """One frame through read(n) -> n bytes: (header dict, body bytes). The header may be JSON or
    ROCKETMQ-coded."""
    (length,) = struct.unpack(">I", read(4))
    if length > MAX_FRAME:
        raise ValueError("frame of %d bytes" % length)
    data = read(length)
    (word,) = struct.unpack(">I", data[:4])
    kind, hlen = word >> 24, word & 0xFFFFFF
    raw = data[4:4 + hlen]
    if kind == 0:
        head = json.loads(raw.decode("utf-8"))
    elif kind == 1:
        head = decode_binary_header(raw)
    else:
        raise ValueError("unknown header serialize type %d" % kind)
    return head, data[4 + hlen:]


def decode_binary_header(raw):
    """ROCKETMQ (serialize type 1) header, in case a server answers that way."""
    code, _lang, version, opaque, flag = struct.unpack(">hBhii", raw[:13])
    pos = 13
    (n,) = struct.unpack(">i", raw[pos:pos + 4])
    pos += 4
    remark = raw[pos:pos + n].decode("utf-8") if n > 0 else None
    pos += max(n, 0)
    (n,) = struct.unpack(">i", raw[pos:pos + 4])
    pos += 4
    end, ext = pos + max(n, 0), {}
    while pos < end:
        (kl,) = struct.unpack(">h", raw[pos:pos + 2])
        key = raw[pos + 2:pos + 2 + kl].decode("utf-8")
        pos += 2 + kl
        (vl,) = struct.unpack(">i", raw[pos:pos + 4])
        ext[key] = raw[pos + 4:pos + 4 + vl].decode("utf-8")
        pos += 4 + vl
    head = {"code": code, "version": version, "opaque": opaque, "flag": flag, "extFields": ext}
    if remark is not None:
        head["remark"] = remark
    return head


def parse_lenient(text):
    """Parses fastjson output, which may use unquoted numeric object keys ({0:"a"})."""
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif c in "{," and (m := re.match(r"([{,])(\s*)(-?\d+)(\s*):", text[i:])):
            out.append('%s"%s":' % (m.group(1), m.group(3)))
            i += m.end()
            continue
        else:
            out.append(c)
        i += 1
    return json.loads("".join(out))


def is_strict_json(text):
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


# ---------------------------------------------------------------------------------------------
# Registration bodies
# ---------------------------------------------------------------------------------------------

def parse_topics(spec):
    """name:read:write:perm[:sysflag],... -> list of dicts"""
    topics = []
    for item in filter(None, spec.split(",")):
        parts = item.split(":")
        if len(parts) not in (4, 5):
            raise SystemExit("bad topic spec %r (want name:read:write:perm[:sysflag])" % item)
        topics.append({
            "topicName": parts[0], "readQueueNums": int(parts[1]), "writeQueueNums": int(parts[2]),
            "perm": int(parts[3]), "topicSysFlag": int(parts[4]) if len(parts) == 5 else 0,
        })
    return topics


def topic_config(t, style):
    tc = {"order": False, "perm": t["perm"], "readQueueNums": t["readQueueNums"],
          "topicFilterType": "SINGLE_TAG", "topicName": t["topicName"],
          "topicSysFlag": t["topicSysFlag"], "writeQueueNums": t["writeQueueNums"]}
    if style != "v4":
        tc["attributes"] = {}
    return tc


def data_version(style, counter, stamp):
    if style == "v4":
        return {"counter": counter, "timestamp": stamp}
    return {"counter": counter, "stateVersion": 0, "timestamp": stamp}


def json_body(style, topics, dv):
    table = {t["topicName"]: topic_config(t, style) for t in topics}
    if style == "v4":
        wrapper = {"dataVersion": dv, "topicConfigTable": table}
    else:
        wrapper = {"dataVersion": dv,
                   "mappingDataVersion": {"counter": 0, "stateVersion": 0, "timestamp": dv["timestamp"]},
                   "topicConfigTable": table,
                   "topicQueueMappingDetailMap": {},
                   "topicQueueMappingInfoMap": {}}
    return json.dumps({"filterServerList": [], "topicConfigSerializeWrapper": wrapper},
                      separators=(",", ":")).encode("utf-8")


def zlib_body(topics, dv, version):
    """RegisterBrokerBody.encode(compress=true): length-prefixed sections, then deflate."""

    def chunk(b):
        return struct.pack(">i", len(b)) + b

    parts = [chunk(json.dumps(dv, separators=(",", ":")).encode("utf-8")), struct.pack(">i", len(topics))]
    for t in topics:
        text = "%s %d %d %d SINGLE_TAG {}" % (t["topicName"], t["readQueueNums"], t["writeQueueNums"], t["perm"])
        parts.append(chunk(text.encode("utf-8")))
    parts.append(chunk(b"[]"))  # filter servers
    if version >= 413:  # V5_0_0 adds the static-topic mapping section
        parts.append(struct.pack(">i", 0))
    return zlib.compress(b"".join(parts), 9)


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------

class Steps:
    def __init__(self, label):
        self.label = label
        self.failed = 0

    def ok(self, name, code, detail=""):
        log("PASS %s: step %s (request code %d)%s" % (self.label, name, code, ": " + detail if detail else ""))

    def fail(self, name, code, detail):
        self.failed += 1
        log("FAIL %s: step %s (request code %d) failed: %s" % (self.label, name, code, detail))

    def expect(self, name, code, problems, detail=""):
        if problems:
            self.fail(name, code, "; ".join(problems))
        else:
            self.ok(name, code, detail)
        return not problems


def answer(head):
    return "code=%s remark=%r" % (head.get("code"), head.get("remark"))


def route_problems(route, topic, t, args, style):
    probs = []
    qds = [q for q in route.get("queueDatas", []) if q.get("brokerName") == args.broker_name]
    if len(qds) != 1:
        probs.append("expected one queueData for %s, got %s" % (args.broker_name, route.get("queueDatas")))
    else:
        q = qds[0]
        want = {"readQueueNums": t["readQueueNums"], "writeQueueNums": t["writeQueueNums"], "perm": t["perm"],
                # the compressed text form carries no topicSysFlag: it decodes as 0 (TopicConfig#decode)
                "topicSysFlag": 0 if style == "v5-zlib" else t["topicSysFlag"]}
        for k, v in want.items():
            if q.get(k) != v:
                probs.append("queueData.%s=%r, expected %r" % (k, q.get(k), v))
    bds = [b for b in route.get("brokerDatas", []) if b.get("brokerName") == args.broker_name]
    if len(bds) != 1:
        probs.append("expected one brokerData for %s, got %s" % (args.broker_name, route.get("brokerDatas")))
    else:
        b = bds[0]
        if b.get("brokerAddrs") != {"0": args.broker_addr}:
            probs.append("brokerAddrs=%r, expected {0: %r}" % (b.get("brokerAddrs"), args.broker_addr))
        if b.get("cluster") != args.cluster:
            probs.append("cluster=%r, expected %r" % (b.get("cluster"), args.cluster))
        if b.get("enableActingMaster") is not False:
            probs.append("enableActingMaster=%r, expected false" % b.get("enableActingMaster"))
    if route.get("filterServerTable") != {}:
        probs.append("filterServerTable=%r, expected {}" % route.get("filterServerTable"))
    return probs


def verify_registration(conn, args, topics, dv, steps):
    style = args.style
    for t in topics:
        topic = t["topicName"]
        cases = [
            ("route_%s_legacy_v%d" % (topic, LEGACY_CLIENT), LEGACY_CLIENT, {}, "legacy"),
            ("route_%s_standard_v%d" % (topic, V5_3_3), V5_3_3, {}, "standard"),
            ("route_%s_acceptStandardJsonOnly_v%d" % (topic, LEGACY_CLIENT), LEGACY_CLIENT,
             {"acceptStandardJsonOnly": "true"}, "standard"),
        ]
        for name, version, extra, form in cases:
            ext = {"topic": topic}
            ext.update(extra)
            head, body = conn.call(GET_ROUTEINFO_BY_TOPIC, ext, version=version)
            if head.get("code") != SUCCESS or not body:
                steps.fail(name, GET_ROUTEINFO_BY_TOPIC, "expected SUCCESS with a body, got %s" % answer(head))
                continue
            text = body.decode("utf-8")
            probs = []
            if form == "legacy" and not re.search(r'"brokerAddrs":\{0:"', text):
                probs.append("version %d must get fastjson's legacy form with unquoted numeric brokerAddrs "
                             "keys like Java: %s" % (version, text))
            if form == "standard" and not is_strict_json(text):
                probs.append("standard JSON expected (quoted keys): %s" % text)
            try:
                route = parse_lenient(text)
            except ValueError as e:
                steps.fail(name, GET_ROUTEINFO_BY_TOPIC, "unparsable route body %r: %s" % (text, e))
                continue
            probs += route_problems(route, topic, t, args, style)
            steps.expect(name, GET_ROUTEINFO_BY_TOPIC, probs, "%s form" % form)

    head, body = conn.call(GET_BROKER_CLUSTER_INFO, {})
    probs = []
    if head.get("code") != SUCCESS or not body:
        probs.append("expected SUCCESS with a body, got %s" % answer(head))
    else:
        try:
            ci = parse_lenient(body.decode("utf-8"))
            members = ci.get("clusterAddrTable", {}).get(args.cluster, [])
            if args.broker_name not in members:
                probs.append("clusterAddrTable[%s]=%r lacks %s" % (args.cluster, members, args.broker_name))
            bd = ci.get("brokerAddrTable", {}).get(args.broker_name) or {}
            if (bd.get("brokerAddrs") or {}).get("0") != args.broker_addr:
                probs.append("brokerAddrTable[%s]=%r, expected master %s" % (args.broker_name, bd, args.broker_addr))
        except ValueError as e:
            probs.append("unparsable cluster info: %s" % e)
    steps.expect("cluster_info", GET_BROKER_CLUSTER_INFO, probs)

    names = {t["topicName"] for t in topics}
    for name, code, ext in (("all_topic_list", GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}),
                            ("topics_by_cluster", GET_TOPICS_BY_CLUSTER, {"cluster": args.cluster})):
        head, body = conn.call(code, ext)
        probs = []
        if head.get("code") != SUCCESS or not body:
            probs.append("expected SUCCESS with a body, got %s" % answer(head))
        else:
            listed = set(json.loads(body.decode("utf-8")).get("topicList", []))
            if not names <= listed:
                probs.append("missing %s in %s" % (sorted(names - listed), sorted(listed)))
        steps.expect(name, code, probs)

    key = {"brokerName": args.broker_name, "brokerAddr": args.broker_addr,
           "clusterName": args.cluster, "brokerId": 0}
    for name, sent, want in (("query_data_version_same", dv, "false"),
                             ("query_data_version_changed", dict(dv, counter=dv["counter"] + 1), "true")):
        head, body = conn.call(QUERY_DATA_VERSION, key, json.dumps(sent, separators=(",", ":")).encode())
        probs = []
        if head.get("code") != SUCCESS:
            probs.append("expected SUCCESS, got %s" % answer(head))
        elif str(head.get("extFields", {}).get("changed")).lower() != want:
            probs.append("changed=%r, expected %s" % (head.get("extFields", {}).get("changed"), want))
        elif not body:
            probs.append("expected the stored DataVersion as body")
        else:
            stored = json.loads(body.decode("utf-8"))
            if stored.get("counter") != dv["counter"] or stored.get("timestamp") != dv["timestamp"]:
                probs.append("stored DataVersion %r, registered %r" % (stored, dv))
        steps.expect(name, QUERY_DATA_VERSION, probs)

    missing = "NoSuchTopic_%d" % int(time.time() * 1000)
    for version in (LEGACY_CLIENT, V5_3_3):
        head, body = conn.call(GET_ROUTEINFO_BY_TOPIC, {"topic": missing}, version=version)
        probs = []
        if head.get("code") != TOPIC_NOT_EXIST:
            probs.append("expected TOPIC_NOT_EXIST(17), got %s" % answer(head))
        elif missing not in (head.get("remark") or ""):
            probs.append("remark %r does not name the topic" % head.get("remark"))
        steps.expect("route_unknown_topic_v%d" % version, GET_ROUTEINFO_BY_TOPIC, probs)


def wait_routes_gone(conn, topics, steps, timeout):
    """Unregistration is asynchronous in Java (batch service): poll, bounded."""
    deadline = time.monotonic() + timeout
    pending = [t["topicName"] for t in topics]
    last = {}
    while pending and time.monotonic() < deadline:
        for topic in list(pending):
            head, _ = conn.call(GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
            last[topic] = answer(head)
            if head.get("code") == TOPIC_NOT_EXIST:
                pending.remove(topic)
        if pending:
            time.sleep(0.2)
    steps.expect("routes_gone_after_unregister", GET_ROUTEINFO_BY_TOPIC,
                 ["route of %s still served after %.0f s: %s" % (t, timeout, last.get(t)) for t in pending])


# ---------------------------------------------------------------------------------------------
# Sub-commands
# ---------------------------------------------------------------------------------------------

def cmd_register(args, command):
    topics = parse_topics(args.topics)
    if len(topics) < 2:
        # a 5.x name server refuses a first registration carrying exactly one topic
        raise SystemExit("register at least two topics")
    label = args.label or "fake-broker[%s]" % args.style
    steps = Steps(label)
    version = V4_9_8 if args.style == "v4" else V5_3_3
    dv = data_version(args.style, 1, int(time.time() * 1000))
    if args.style == "v5-zlib":
        body = zlib_body(topics, dv, version)
    else:
        body = json_body(args.style, topics, dv)
    ext = {"brokerName": args.broker_name, "brokerAddr": args.broker_addr, "clusterName": args.cluster,
           "haServerAddr": args.ha_addr, "brokerId": 0,
           "compressed": "true" if args.style == "v5-zlib" else "false",
           "bodyCrc32": zlib.crc32(body) & 0x7FFFFFFF}
    if args.style != "v4":
        ext["enableActingMaster"] = "false"

    try:
        conn = Connection(args.namesrv)
    except OSError as e:
        steps.fail("connect", REGISTER_BROKER, "cannot connect to %s: %s" % (args.namesrv, e))
        return 1

    rc = 0
    try:
        head, _ = conn.call(REGISTER_BROKER, ext, body, version)
        if not steps.expect("register_" + args.style.replace("-", "_"), REGISTER_BROKER,
                            [] if head.get("code") == SUCCESS else ["expected SUCCESS, got %s" % answer(head)],
                            "%s@%s in %s, %d topics, %d-byte body" % (args.broker_name, args.broker_addr,
                                                                      args.cluster, len(topics), len(body))):
            return 1
        if args.verify:
            verify_registration(conn, args, topics, dv, steps)
            head, _ = conn.call(REGISTER_BROKER, ext, body, version)
            steps.expect("reregister_same_data_version", REGISTER_BROKER,
                         [] if head.get("code") == SUCCESS else ["expected SUCCESS, got %s" % answer(head)])

        if command:
            stop = threading.Event()

            def refresh():
                while not stop.wait(20):
                    try:
                        h, _ = conn.call(REGISTER_BROKER, ext, body, version)
                        if h.get("code") != SUCCESS:
                            log("WARN %s: periodic re-registration answered %s" % (label, answer(h)))
                    except (OSError, ValueError) as e:
                        log("WARN %s: periodic re-registration failed: %s" % (label, e))
                        return

            keeper = threading.Thread(target=refresh, daemon=True)
            keeper.start()
            sys.stdout.flush()
            try:
                rc = subprocess.call(command, timeout=args.command_timeout)
            except subprocess.TimeoutExpired:
                log("FAIL %s: step command (request code %d) failed: %s did not finish within %d s" % (
                    label, GET_ROUTEINFO_BY_TOPIC, command[0], args.command_timeout))
                rc = 1
            stop.set()

        head, _ = conn.call(UNREGISTER_BROKER, {"brokerName": args.broker_name, "brokerAddr": args.broker_addr,
                                                "clusterName": args.cluster, "brokerId": 0}, version=version)
        steps.expect("unregister", UNREGISTER_BROKER,
                     [] if head.get("code") == SUCCESS else ["expected SUCCESS, got %s" % answer(head)])
        if args.verify and head.get("code") == SUCCESS:
            wait_routes_gone(conn, topics, steps, 10.0)
    except (OSError, ValueError) as e:
        steps.fail("connection", REGISTER_BROKER, "lost the name server connection: %s" % e)
    finally:
        conn.close()
    if rc:
        return rc
    return 1 if steps.failed else 0


def cmd_wait_broker(args):
    label = args.label or "wait-broker"
    if args.gone:
        step = "broker_unregistered (request code %d, observed with %d)" % (UNREGISTER_BROKER, GET_BROKER_CLUSTER_INFO)
    else:
        step = "broker_registered (request code %d, observed with %d)" % (REGISTER_BROKER, GET_BROKER_CLUSTER_INFO)
    deadline = time.monotonic() + args.timeout
    last = "no answer"
    while True:
        try:
            conn = Connection(args.namesrv, timeout=5)
            try:
                head, body = conn.call(GET_BROKER_CLUSTER_INFO, {})
            finally:
                conn.close()
            if head.get("code") == SUCCESS and body:
                ci = parse_lenient(body.decode("utf-8"))
                bd = ci.get("brokerAddrTable", {}).get(args.broker_name) or {}
                master = (bd.get("brokerAddrs") or {}).get("0")
                last = "brokerAddrTable[%s]=%s" % (args.broker_name, json.dumps(bd) if bd else "absent")
                if bool(master) != args.gone:
                    log("PASS %s: step %s: %s" % (label, step, last))
                    return 0
            else:
                last = answer(head)
        except (OSError, ValueError) as e:
            last = str(e)
        if args.pid and not process_alive(args.pid):
            log("FAIL %s: step %s failed: the broker process %d exited; last answer: %s" % (label, step, args.pid, last))
            return 1
        if time.monotonic() >= deadline:
            log("FAIL %s: step %s failed: after %.0f s: %s" % (label, step, args.timeout, last))
            return 1
        time.sleep(0.5)


def process_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        pass
    except OSError:
        return False
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def main():
    argv = sys.argv[1:]
    command = []
    if "--" in argv:
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="sub", required=True)
    reg = sub.add_parser("register", help="register a fake broker")
    reg.add_argument("namesrv", help="HOST:PORT of the name server")
    reg.add_argument("--style", choices=("v4", "v5-json", "v5-zlib"), required=True)
    reg.add_argument("--cluster", default="DefaultCluster")
    reg.add_argument("--broker-name", default="broker-a")
    reg.add_argument("--broker-addr", default="127.0.0.1:10911")
    reg.add_argument("--ha-addr", default="127.0.0.1:10912")
    reg.add_argument("--topics", default="TopicTest:4:4:6,TBW102:8:8:7",
                     help="name:readQueues:writeQueues:perm[:sysflag],... (default %(default)s)")
    reg.add_argument("--verify", action="store_true", help="assert what the name server derived")
    reg.add_argument("--label", default="")
    reg.add_argument("--command-timeout", type=int, default=300)
    reg.add_argument("--tls", action="store_true", help="connect with TLS (any certificate)")
    wait = sub.add_parser("wait-broker", help="wait until a broker is (or is no longer) registered")
    wait.add_argument("namesrv")
    wait.add_argument("broker_name")
    wait.add_argument("--gone", action="store_true")
    wait.add_argument("--timeout", type=float, default=60)
    wait.add_argument("--label", default="")
    wait.add_argument("--pid", type=int, default=0, help="give up early when this process is gone")
    wait.add_argument("--tls", action="store_true", help="connect with TLS (any certificate)")
    args = ap.parse_args(argv)
    global USE_TLS
    USE_TLS = args.tls
    if args.sub == "register":
        sys.exit(cmd_register(args, command))
    if command:
        ap.error("wait-broker takes no command")
    sys.exit(cmd_wait_broker(args))


if __name__ == "__main__":
    main()
