#!/usr/bin/env python3
"""Regenerates the committed seed corpora under fuzz/corpus/<target>/seed-*.

Run from the repository root:  python3 fuzz/seeds/make_seeds.py
Inputs: the captured Java 5.3.3 frames (tests/fixtures/java-5.3.3), conf/namesrv.conf, and
hand-written registration bodies in the 4.9.x and 5.x shapes of Java's RegisterBrokerBody.
The structured targets (register_body_structured, route_table) take `arbitrary` input, so
their seeds are inputs kept from earlier fuzzing runs (see fuzz/README.md), not made here.
"""
import glob
import os
import struct
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures", "java-5.3.3")
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def frames(data):
    off = 0
    while off + 8 <= len(data):
        (length,) = struct.unpack(">i", data[off:off + 4])
        (word,) = struct.unpack(">I", data[off + 4:off + 8])
        hlen = word & 0xFFFFFF
        yield word >> 24, data[off + 8:off + 8 + hlen], data[off + 8 + hlen:off + 4 + length], data[off:off + 4 + length]
        off += 4 + length


# frame_decode: whole captured frames (one of each kind), plus a stream of two frames.
FRAME_FILES = [
    "01-all-topics-empty.response",
    "02-unknown-code-json.request",
    "03-unknown-code-rocketmq.request",
    "03-unknown-code-rocketmq.response",
    "04-register-master.request",
    "05-register-slave.response",
    "06-route-standard-json.response",
    "07-route-legacy-json-v121.request",
    "07-route-legacy-json-v121.response",
    "08-route-rocketmq-header.request",
    "09-route-unknown-topic.response",
    "10-cluster-info.response",
    "14-kv-put.request",
    "20-query-data-version-same.request",
    "22-broker-member-group.response",
    "26-namesrv-config.response",
    "27-namesrv-config-update-blacklisted.request",
]
for name in FRAME_FILES:
    put("frame_decode", name, open(os.path.join(FIX, name + ".bin"), "rb").read())
stream = b"".join(
    open(os.path.join(FIX, n + ".bin"), "rb").read()
    for n in ["08-route-rocketmq-header.request", "06-route-standard-json.request", "03-unknown-code-rocketmq.response"]
)
put("frame_decode", "stream-three-frames", stream)

# header_json / header_binary: the header slices of the captured frames.
seen = set()
for path in sorted(glob.glob(os.path.join(FIX, "*.bin"))):
    base = os.path.basename(path)[:-4]
    for kind, header, _body, _whole in frames(open(path, "rb").read()):
        if header in seen:
            continue
        seen.add(header)
        target = "header_json" if kind == 0 else "header_binary"
        if target == "header_json" and not any(base.startswith(p) for p in
                ("01", "02", "04", "05", "06", "07", "09", "14", "20", "22", "23", "27")):
            continue
        put(target, base, header)


# header_binary has only two captured headers: add hand-made ones (the layout of RocketMQSerializable#rocketMQProtocolEncode).
def bin_header(code, lang, version, opaque, flag, remark, ext):
    out = struct.pack(">hBhii", code, lang, version, opaque, flag)
    r = remark.encode()
    out += struct.pack(">i", len(r)) + r
    block = b""
    for k, v in ext:
        k, v = k.encode(), v.encode()
        block += struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v
    return out + struct.pack(">i", len(block)) + block


put("header_binary", "register-ext-fields", bin_header(103, 0, 479, 5, 0, "", [
    ("brokerName", "broker-a"), ("brokerAddr", "127.0.0.1:10911"), ("clusterName", "DefaultCluster"),
    ("haServerAddr", "127.0.0.1:10912"), ("brokerId", "0"), ("compressed", "true"), ("bodyCrc32", "12345")]))
put("header_binary", "response-remark-utf8", bin_header(17, 12, 479, 9, 1, "topic T\u00e9 not exist, apply first please!", []))
put("header_binary", "unknown-language-empty-strings", bin_header(-1, 0xFF, -1, -1, 2, "", [("", "v"), ("k", "")]))

# register_body: the captured 5.x JSON body, 4.9.x and pre-V3_0_11 shapes, and zlib bodies.
for kind, header, body, _ in frames(open(os.path.join(FIX, "04-register-master.request.bin"), "rb").read()):
    put("register_body", "java-5.3.3-register-master", body)
put("register_body", "json-5x-static-topic",
    '{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"stateVersion":0,'
    '"timestamp":1700000000123},"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000000},'
    '"topicConfigTable":{"TopicTest":{"attributes":{"message.type":"NORMAL"},"order":false,"perm":6,"readQueueNums":4,'
    '"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4},'
    '"T\\u00e9":{"topicName":"T\\u00e9","perm":"7","attributes":{"$ref":"$.x"}}},"topicQueueMappingDetailMap":{},'
    '"topicQueueMappingInfoMap":{"StaticTopic":{"bname":"broker-a","currIdMap":{0:0,1:1},"dirty":false,'
    '"epoch":1700000000000,"scope":"__global__","topic":"StaticTopic","totalQueues":2}}}}')
put("register_body", "json-49x",
    '{"filterServerList":["127.0.0.1:40001"],"topicConfigSerializeWrapper":{"dataVersion":{"counter":2,'
    '"timestamp":1700000000123},"topicConfigTable":{"TBW102":{"order":false,"perm":7,"readQueueNums":8,'
    '"topicFilterType":"SINGLE_TAG","topicName":"TBW102","topicSysFlag":0,"writeQueueNums":8},'
    '"%RETRY%group":{"order":false,"perm":6,"readQueueNums":1,"topicFilterType":"SINGLE_TAG",'
    '"topicName":"%RETRY%group","topicSysFlag":0,"writeQueueNums":1}}}}')
put("register_body", "old-wrapper",
    '{"dataVersion":{"counter":2,"timestamp":5},"topicConfigTable":{"A":{"topicName":"A","readQueueNums":1,'
    '"writeQueueNums":1,"perm":6}}}')
put("register_body", "json-pretty-nulls",
    '{\n  "filterServerList" : null,\n  "topicConfigSerializeWrapper" : {\n    "dataVersion" : null,\n'
    '    "topicConfigTable" : { "A" : { "topicName" : "A" } },\n    "topicQueueMappingInfoMap" : null\n  }\n}\n')


def chunk(b):
    return struct.pack(">i", len(b)) + b


def compressed(dv, topics, fs, mappings=None):
    raw = chunk(dv) + struct.pack(">i", len(topics)) + b"".join(chunk(t) for t in topics) + chunk(fs)
    if mappings is not None:
        raw += struct.pack(">i", len(mappings)) + b"".join(chunk(m) for m in mappings)
    return zlib.compress(raw, 9)


put("register_body", "zlib-5x", compressed(
    b'{"counter":7,"stateVersion":1,"timestamp":1700000000123}',
    [b"TopicTest 4 4 6 SINGLE_TAG {}", b"T2 8 8 7 MULTI_TAG ", b'TopicA 4 4 6 SINGLE_TAG {"message.type":"NORMAL"}'],
    b'["127.0.0.1:40001"]',
    [b'{"bname":"broker-a","currIdMap":{0:0},"dirty":false,"epoch":1,"scope":"__global__","topic":"S","totalQueues":1}']))
put("register_body", "zlib-49x", compressed(
    b'{"counter":2,"timestamp":1700000000123}',
    [b"TBW102 8 8 7 SINGLE_TAG ", b"TopicTest 4 4 6 SINGLE_TAG "],
    b"[]"))

# properties: the shipped config, plus the syntax corners of java.util.Properties.
put("properties", "namesrv.conf", open(os.path.join(ROOT, "conf", "namesrv.conf"), "rb").read())
put("properties", "syntax-corners",
    "# comment\n! also\n\n  a=1\nb : 2\nc 3\nd\te=f\ng=\nh\n  i = x y \n"
    "a=one \\\n    two\\\r\n three\nb=\\u0041\\tz\\\\\nc\\ d=e\\=f\nk\\:x=1\n"
    "even=\\\\\nsurrogates=\\uD83D\\uDE00 \\uD800 end\n#key\\\n\\#key=!v\nlast=\\")
put("properties", "latin1", b"kvConfigPath=/tmp/caf\xe9/kv.json\r\nlistenPort = 9876\r\n")
put("properties", "bad-unicode", "x=1\ny=\\u12G4\n")

# proxy_header: PROXY protocol headers (v1 TCP4/TCP6/UNKNOWN, v2 PROXY with TLVs, LOCAL, UNIX)
# followed by the first bytes of a RocketMQ frame, and near misses.
V2_SIG = b"\r\n\r\n\x00\r\nQUIT\n"
FRAME_START = b"\x00\x00\x00\x10\x00\x00\x00\x0c"
put("proxy_header", "v1-tcp4", b"PROXY TCP4 203.0.113.7 10.0.0.1 40000 9876\r\n" + FRAME_START)
put("proxy_header", "v1-tcp6", b"PROXY TCP6 2001:db8::7 2001:db8::1 40000 9876\r\n" + FRAME_START)
put("proxy_header", "v1-unknown", b"PROXY UNKNOWN\r\n\x16\x03\x01")
put("proxy_header", "v1-no-crlf", b"PROXY TCP4 203.0.113.7 10.0.0.1 40000 9876")
ipv4 = bytes([203, 0, 113, 7, 10, 0, 0, 1]) + struct.pack(">HH", 40000, 9876)
tlvs = b"\x04" + struct.pack(">H", 9) + b"vpce-0abc" + b"\x05" + struct.pack(">H", 1) + b"\xff"
put("proxy_header", "v2-tcp4-tlvs", V2_SIG + b"\x21\x11" + struct.pack(">H", len(ipv4 + tlvs)) + ipv4 + tlvs + FRAME_START)
ipv6 = bytes(15) + b"\x07" + bytes(15) + b"\x01" + struct.pack(">HH", 1, 2)
put("proxy_header", "v2-tcp6", V2_SIG + b"\x21\x21" + struct.pack(">H", len(ipv6)) + ipv6)
put("proxy_header", "v2-local", V2_SIG + b"\x20\x00\x00\x00" + b"\x16\x03\x01")
unix = b"/tmp/a".ljust(108, b"\x00") + b"/tmp/b".ljust(108, b"\x00")
put("proxy_header", "v2-unix", V2_SIG + b"\x21\x31" + struct.pack(">H", len(unix)) + unix)
put("proxy_header", "v2-short-length", V2_SIG + b"\x21\x11\x00\x04" + ipv4)
