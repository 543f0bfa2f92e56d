#!/usr/bin/env node
'use strict';
/*
 * Route lookups through ali-ons 3.12.0 (npm; a pure-JavaScript RocketMQ remoting client) against
 * the name server under test. A broker must be registered first: run.sh wraps this script in
 * `fake_broker.py register ... -- node check.js ...`, which keeps the registration alive.
 *
 *   NODE_PATH=<cache>/ali-ons/node_modules node check.js HOST:PORT [--topic TopicTest]
 *       [--queues 4] [--perm 6] [--broker-name broker-a] [--broker-addr 127.0.0.1:10911]
 *       [--label TEXT]
 *
 * Everything goes through ali-ons' own code: MQClientAPI (its remoting client, frame codec and
 * JSON2 route parser) and MQClient's conversion of a route into publish/subscribe queues.
 * Two passes:
 *   v121  ali-ons as shipped: every request carries version 121 (< V4_9_4 = 401), so a Java
 *         name server answers routes in fastjson's legacy form ({0:"addr"}, not strict JSON);
 *   v479  the same client with its version getter raised to 479 (V5_3_3, what current Java
 *         clients send): routes must come back as standard JSON ({"0":"addr"}).
 * Steps per pass (request code 105 = GET_ROUTEINFO_BY_TOPIC):
 *   route_registered_topic   getTopicRouteInfoFromNameServer(topic)
 *   route_TBW102             getDefaultTopicRouteInfoFromNameServer("TBW102") (8 queues, perm 7)
 *   route_unknown_topic      getTopicRouteInfoFromNameServer(<fresh name>) -> MQClientException 17
 * Each answer's frame is checked too: ali-ons reads the whole header-length word as the length
 * (serialize type must be 0 = JSON), JSON.parse()s the header, and matches answers by opaque.
 *
 * Output: one line per step, "PASS <label>: step <name> (request code 105)[: detail]" or
 * "FAIL <label>: step <name> (request code 105) failed: <reason>". Exit status 0 = all passed,
 * 1 = a step failed, 2 = usage error.
 */

const RemotingCommand = require('ali-ons/lib/protocol/command/remoting_command');
const MQClientAPI = require('ali-ons/lib/mq_client_api');
const MQClient = require('ali-ons/lib/mq_client');
const RequestCode = require('ali-ons/lib/protocol/request_code');
const ResponseCode = require('ali-ons/lib/protocol/response_code');
const MixAll = require('ali-ons/lib/mix_all');

const ROUTE_CODE = RequestCode.GET_ROUTEINTO_BY_TOPIC; // sic, ali-ons' spelling; = 105
const TBW102 = MixAll.DEFAULT_TOPIC;

function usage() {
  console.error('usage: node check.js HOST:PORT [--topic T] [--queues N] [--perm P] ' +
    '[--broker-name NAME] [--broker-addr ADDR] [--label TEXT]');
  process.exit(2);
}

const opts = {
  topic: 'TopicTest', queues: 4, perm: 6, brokerName: 'broker-a', brokerAddr: '127.0.0.1:10911',
  defaultQueues: 8, defaultPerm: 7, label: 'ali-ons 3.12.0',
};
{
  const args = process.argv.slice(2);
  const positional = [];
  for (let i = 0; i < args.length; i++) {
    const take = () => (i + 1 < args.length ? args[++i] : usage());
    switch (args[i]) {
      case '--topic': opts.topic = take(); break;
      case '--queues': opts.queues = Number(take()); break;
      case '--perm': opts.perm = Number(take()); break;
      case '--broker-name': opts.brokerName = take(); break;
      case '--broker-addr': opts.brokerAddr = take(); break;
      case '--label': opts.label = take(); break;
      default: positional.push(args[i]);
    }
  }
  if (positional.length !== 1 || !/^[^:]+:\d+$/.test(positional[0])) usage();
  opts.namesrv = positional[0];
}

let failures = 0;
function report(pass, step, problems, detail) {
  const where = `${opts.label} ${pass}: step ${step} (request code ${ROUTE_CODE})`;
  if (problems.length) {
    failures++;
    console.log(`FAIL ${where} failed: ${problems.join('; ')}`);
  } else {
    console.log(`PASS ${where}${detail ? ': ' + detail : ''}`);
  }
}

// Observe (not alter) ali-ons' decoder: remember the raw text of every answer by opaque.
const frames = new Map();
const originalDecode = RemotingCommand.decode;
RemotingCommand.decode = function(packet) {
  const word = packet.readUInt32BE(4);
  const headerLength = word & 0xffffff;
  const frame = {
    serializeType: word >>> 24,
    header: packet.slice(8, 8 + headerLength).toString('utf8'),
    body: packet.length > 8 + headerLength ? packet.slice(8 + headerLength).toString('utf8') : '',
  };
  const command = originalDecode.call(this, packet);
  frame.command = command;
  frames.set(command.opaque, frame);
  return command;
};
// Remember the opaque of the last request ali-ons encoded.
let lastOpaque;
let lastVersion;
const originalEncode = RemotingCommand.prototype.encode;
RemotingCommand.prototype.encode = function() {
  lastOpaque = this.opaque;
  const frame = originalEncode.call(this);
  lastVersion = JSON.parse(frame.slice(8, 8 + frame.readUInt32BE(4)).toString('utf8')).version;
  return frame;
};

function frameProblems(opaque) {
  const f = frames.get(opaque);
  if (!f) return [ `no answer frame with opaque ${opaque}` ];
  const problems = [];
  if (f.serializeType !== 0) {
    problems.push(`answer uses serialize type ${f.serializeType}; ali-ons needs 0 (JSON) because it reads the whole word as header length`);
  }
  try { JSON.parse(f.header); } catch (e) { problems.push(`answer header is not strict JSON: ${f.header}`); }
  if (!f.command.isResponseType) problems.push(`answer flag ${f.command.flag} lacks the response bit`);
  return problems;
}

function routeProblems(route, topic, queues, perm) {
  const problems = [];
  const qd = route.queueDatas.filter(q => q.brokerName === opts.brokerName);
  if (qd.length !== 1) {
    problems.push(`expected one queueData of ${opts.brokerName}, got ${JSON.stringify(route.queueDatas)}`);
  } else {
    for (const [ k, v ] of [[ 'readQueueNums', queues ], [ 'writeQueueNums', queues ], [ 'perm', perm ]]) {
      if (qd[0][k] !== v) problems.push(`queueData.${k}=${qd[0][k]}, expected ${v}`);
    }
  }
  const bd = route.brokerDatas.find(b => b.brokerName === opts.brokerName);
  const master = bd && bd.brokerAddrs && bd.brokerAddrs[MixAll.MASTER_ID];
  if (master !== opts.brokerAddr) {
    problems.push(`brokerAddrs[${MixAll.MASTER_ID}] of ${opts.brokerName} is ${JSON.stringify(master)}, expected ${opts.brokerAddr}`);
  }
  // What an ali-ons producer and consumer would use.
  const pub = MQClient.prototype._topicRouteData2TopicPublishInfo.call(null, topic, route)
    .messageQueueList.filter(mq => mq.brokerName === opts.brokerName).length;
  const sub = MQClient.prototype._topicRouteData2TopicSubscribeInfo.call(null, topic, route)
    .filter(mq => mq.brokerName === opts.brokerName).length;
  const wantPub = (perm & 2) ? queues : 0;
  const wantSub = (perm & 4) ? queues : 0;
  if (pub !== wantPub) problems.push(`ali-ons derives ${pub} publish queues, expected ${wantPub}`);
  if (sub !== wantSub) problems.push(`ali-ons derives ${sub} subscribe queues, expected ${wantSub}`);
  return problems;
}

function bodyForm(opaque) {
  const f = frames.get(opaque);
  if (!f) return 'no body';
  try { JSON.parse(f.body); return 'standard JSON body'; } catch (e) { return 'legacy (fastjson) body'; }
}

function bodyFormProblems(opaque, pass) {
  const f = frames.get(opaque);
  if (!f) return [];
  const sent = pass === 'v121' ? 121 : 479;
  if (lastVersion !== sent) return [ `ali-ons sent version ${lastVersion}, expected ${sent}` ];
  let strict = true;
  try { JSON.parse(f.body); } catch (e) { strict = false; }
  if (pass === 'v121') {
    // Java (fastjson legacy writer) for version < 401: numeric map keys unquoted.
    return /"brokerAddrs":\{\d+:/.test(f.body) ? [] :
      [ `version 121 must get the legacy route form with unquoted brokerAddrs keys, like Java; got ${f.body}` ];
  }
  return strict ? [] : [ `version 479 must get standard (strict) JSON; got ${f.body}` ];
}

async function lookup(fn) {
  try {
    return { route: await fn(), opaque: lastOpaque };
  } catch (err) {
    return { err, opaque: lastOpaque };
  }
}

async function runPass(api, pass) {
  // 1. the registered topic
  {
    const { route, err, opaque } = await lookup(() => api.getTopicRouteInfoFromNameServer(opts.topic, 5000));
    let problems = frameProblems(opaque);
    if (err || !route) {
      problems.push(`expected a route, got ${err ? `${err.name} code=${err.code} ${err.message}` : 'nothing'}`);
    } else {
      problems = problems.concat(bodyFormProblems(opaque, pass), routeProblems(route, opts.topic, opts.queues, opts.perm));
    }
    report(pass, `route_registered_topic(${opts.topic})`, problems,
      route && `${opts.queues}/${opts.queues} perm ${opts.perm} on ${opts.brokerName}@${opts.brokerAddr}, ${bodyForm(opaque)}`);
  }
  // 2. TBW102, the default topic a producer falls back to for auto-created topics
  {
    const { route, err, opaque } = await lookup(() => api.getDefaultTopicRouteInfoFromNameServer(TBW102, 5000));
    let problems = frameProblems(opaque);
    if (err || !route) {
      problems.push(`expected a route, got ${err ? `${err.name} code=${err.code} ${err.message}` : 'nothing'}`);
    } else {
      problems = problems.concat(bodyFormProblems(opaque, pass), routeProblems(route, TBW102, opts.defaultQueues, opts.defaultPerm));
    }
    report(pass, 'route_TBW102', problems,
      route && `${opts.defaultQueues}/${opts.defaultQueues} perm ${opts.defaultPerm} on ${opts.brokerName}, ${bodyForm(opaque)}`);
  }
  // 3. a topic nobody registered
  {
    const missing = `NoSuchTopic_${pass}_${Date.now()}`;
    const { route, err, opaque } = await lookup(() => api.getTopicRouteInfoFromNameServer(missing, 5000));
    const problems = frameProblems(opaque);
    if (!err) {
      problems.push(`expected MQClientException TOPIC_NOT_EXIST(17), got route ${JSON.stringify(route)}`);
    } else if (err.name !== 'MQClientException' || err.code !== ResponseCode.TOPIC_NOT_EXIST) {
      problems.push(`expected MQClientException TOPIC_NOT_EXIST(17), got ${err.name} code=${err.code} ${err.message}`);
    }
    report(pass, 'route_unknown_topic', problems, err && `MQClientException code ${err.code}`);
  }
}

async function main() {
  const logger = { debug() {}, info() {}, warn() {}, error(...a) { console.error('[ali-ons]', ...a); } };
  const api = new MQClientAPI({ nameSrv: opts.namesrv, httpclient: {}, logger, responseTimeout: 5000 });
  api.on('error', err => console.error('[ali-ons channel error]', err && err.message));
  await api.ready();

  await runPass(api, 'v121');
  // A newer client: same codec, version raised to what 5.3.3 Java clients send.
  const stock = Object.getOwnPropertyDescriptor(RemotingCommand.prototype, 'version');
  Object.defineProperty(RemotingCommand.prototype, 'version', { get() { return 479; }, configurable: true });
  try {
    await runPass(api, 'v479');
  } finally {
    Object.defineProperty(RemotingCommand.prototype, 'version', stock);
  }
  await api.close();
  process.exit(failures ? 1 : 0);
}

setTimeout(() => {
  console.log(`FAIL ${opts.label}: step overall (request code ${ROUTE_CODE}) failed: no result within 60 s`);
  process.exit(1);
}, 60000).unref();

main().catch(err => {
  console.log(`FAIL ${opts.label}: step setup (request code ${ROUTE_CODE}) failed: ${err && err.stack || err}`);
  process.exit(1);
});
