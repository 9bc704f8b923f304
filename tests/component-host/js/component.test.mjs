// The component, transpiled with jco, driven from Node over real sockets against the local peers
// (run.sh starts them and passes their URLs and keys in AGENTWIRE_COMPONENT_ENV). Every wait is
// bounded by WAIT_MS.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { createServer } from 'node:net';
import { moltzap, now, openMoltZap, openRkt, rkt, show, sw, SwitchHost } from './host.mjs';

const env = JSON.parse(process.env.AGENTWIRE_COMPONENT_ENV ?? 'null');
if (!env) throw new Error('AGENTWIRE_COMPONENT_ENV is not set: run tests/component-host/js/run.sh');

const rktConfig = { userAgent: 'component-host-js', capabilities: [], ttlS: 10, handshakeTimeoutMs: 5_000n };
const plain = { streamed: false };

/** Waits for `ready`; a `closed` or `error` before it fails at once. */
async function ready(c) {
  const [r] = await c.until((e) => {
    if (e.tag === 'closed' || e.tag === 'error') assert.fail(`no handshake: ${show(e)}`);
    return e.tag === 'ready' ? e.val : undefined;
  });
  return r;
}

/** An engine error as thrown by a command that returns `result<_, engine-error>`. */
function thrown(f) {
  try {
    f();
  } catch (e) {
    return e;
  }
  assert.fail('no error thrown');
}

test('the transpiled component exports the rkt, moltzap and switch interfaces', () => {
  assert.equal(typeof rkt.Session, 'function');
  assert.equal(typeof moltzap.Session, 'function');
  assert.equal(typeof sw.Session, 'function');
  for (const f of ['opRequest', 'opResult', 'opFailed', 'subscribeRequest', 'unsubscribeRequest']) {
    assert.equal(typeof sw[f], 'function', f);
  }
});

test('RKT: ready, a request, a stream of 7 ordered chunks and a remote error', async (t) => {
  const c = openRkt(env.rkt, rktConfig);
  t.after(() => c.end());
  const hello = await ready(c);
  assert.equal(hello.agreedVersion, 1);
  assert.equal(typeof hello.sessionTimeout, 'bigint');
  assert.ok(hello.server.capabilities.includes('weather'), show(hello));
  assert.equal(c.session.state(), 'ready');

  // A request and its response.
  let id = c.call((s, n) => s.request(n, 'weather.current', '{"city":"Seoul"}', plain));
  const [body] = await c.until((e) => {
    if (e.tag === 'failed') assert.fail(show(e.val));
    return e.tag === 'response' && e.val.id === id ? e.val.body : undefined;
  });
  assert.equal(JSON.parse(body).data.city, 'Seoul', body);

  // A stream: begin, seven chunks in order, end.
  id = c.call((s, n) => s.request(n, 'weather.forecast', '{"city":"Seoul","days":7}', { streamed: true }));
  const [, seen] = await c.until((e) => (e.tag === 'stream-end' && e.val.id === id) || undefined);
  assert.equal(seen[0]?.tag, 'stream-begin', show(seen));
  const seqs = seen.filter((e) => e.tag === 'stream-data' && e.val.id === id).map((e) => e.val.seq);
  assert.equal(seqs.length, 7, show(seen));
  assert.ok(seqs.every((q, i) => i === 0 || seqs[i - 1] < q), show(seqs));

  // A remote error (an unknown intent): a `failed` event with the server's code.
  id = c.call((s, n) => s.request(n, 'maps.navigate', undefined, plain));
  const [error] = await c.until((e) => (e.tag === 'failed' && e.val.id === id ? e.val.error : undefined));
  assert.equal(error.kind, 'remote', show(error));
  assert.equal(error.code, 602n, show(error));
  assert.equal(typeof JSON.parse(error.json), 'object');

  // Goodbye closes.
  c.call((s, n) => s.goodbye(n));
  await c.until((e) => (e.tag === 'closed' ? e.val : undefined));
  assert.equal(c.session.state(), 'closed');
});

test('an engine error is thrown as a value with its kind, and the instance goes on', async (t) => {
  const c = openRkt(env.rkt, rktConfig);
  t.after(() => c.end());
  await ready(c);

  // jco throws the `err` payload itself: the engine-error record, not an Error.
  const local = thrown(() => c.call((s, n) => s.request(n, 'echo', '{not json', plain)));
  const error = local.payload ?? local; // older jco wrapped it in a ComponentError
  assert.equal(error.kind, 'invalid', show(error));
  assert.match(error.message, /params/);
  assert.equal(error.retryable, false);
  assert.equal(typeof JSON.parse(error.json), 'object');
  // The Switch free functions too: an argument the engine refuses before any request.
  const op = thrown(() => sw.opRequest('agent', 'connection', 'post_message', '[1]'));
  assert.equal((op.payload ?? op).kind, 'invalid', show(op));
  const read = sw.opRequest('agent', undefined, 'list_rooms', '{}');
  const status = thrown(() => sw.opResult(read, 404, '{"error":"not found"}'));
  assert.equal((status.payload ?? status).code, 404n, show(status));

  // The same session, and a new one on the same instance, still work.
  assert.equal(c.session.state(), 'ready');
  const id = c.call((s, n) => s.request(n, 'weather.current', '{"city":"Seoul"}', plain));
  const [body] = await c.until((e) => (e.tag === 'response' && e.val.id === id ? e.val.body : undefined));
  assert.equal(JSON.parse(body).data.city, 'Seoul', body);
  const other = openRkt(env.rkt, rktConfig);
  t.after(() => other.end());
  await ready(other);
});

const moltzapConfig = { requestTimeoutMs: 5_000n, handshakeTimeoutMs: 5_000n };

async function moltzapAgent(t, name) {
  const c = await openMoltZap(env.moltzap, moltzapConfig);
  t.after(() => c.end());
  const id = c.call((s, n) => s.connect(n, { tag: 'agent-key', val: env.moltzapKeys[name] }));
  const [connected] = await c.until((e) => {
    if (e.tag === 'connect-failed') assert.fail(show(e.val));
    return e.tag === 'connected' && e.val.id === id ? e.val : undefined;
  });
  assert.equal(connected.generation, 'current');
  assert.equal(c.session.state(), 'ready');
  return c;
}

test('MoltZap: alice sends bob a message, bob receives it', async (t) => {
  const alice = await moltzapAgent(t, 'alice');
  const bob = await moltzapAgent(t, 'bob');
  const params = '{"to":"agent:bob","parts":[{"type":"text","text":"hello bob"}]}';
  const id = alice.call((s, n) => s.call(n, 'messages/send', params, undefined));
  const [sent] = await alice.until((e) => {
    if (e.tag === 'failed') assert.fail(show(e.val));
    return e.tag === 'response' && e.val.id === id ? JSON.parse(e.val.body) : undefined;
  });
  const [received] = await bob.until((e) => (e.tag === 'message-received' ? e.val : undefined));
  const message = JSON.parse(received.data);
  assert.equal(message.message.parts[0].text, 'hello bob', received.data);
  assert.equal(received.messageId, sent.message.id, show(sent));

  alice.call((s) => s.close(1000, 'done'));
  await alice.until((e) => (e.tag === 'disconnected' ? e.val : undefined));
});

const switchConfig = (agentId) => ({
  agentId,
  connectionId: randomUUID(),
  rooms: [env.switchLobby],
  transport: 'websocket',
  maxReconnectAttempts: 3,
  openTimeoutMs: 5_000n,
  client: 'component-host-js',
});

test('Switch: bob posts through an operation, alice receives the message event', async (t) => {
  const agents = env.switchAgents;
  const alice = new SwitchHost(env.switch, agents.alice.key, switchConfig(agents.alice.id));
  t.after(() => alice.end());
  const bob = new SwitchHost(env.switch, agents.bob.key, switchConfig(agents.bob.id));
  t.after(() => bob.end());
  for (const c of [alice, bob]) {
    const [connected] = await c.until((e) => {
      if (e.tag === 'stopped') assert.fail(show(e.val));
      return e.tag === 'connected' ? e.val : undefined;
    });
    assert.equal(connected.wire, 'websocket');
    assert.equal(connected.resumed, false);
    assert.equal(c.session.state(), 'live');
  }

  const joined = await bob.op('connect_to_room', JSON.stringify({ room_id: env.switchLobby }));
  assert.equal(JSON.parse(joined).room_id, env.switchLobby, joined);
  const posted = await bob.op('post_message', '{"body":"hello from bob"}');
  assert.equal(typeof JSON.parse(posted), 'object', posted);
  const [event] = await alice.until((e) => (e.tag === 'event' ? e.val : undefined));
  assert.equal(event.kind, 'message', show(event));
  assert.equal(event.roomId, env.switchLobby);
  assert.match(event.payload, /hello from bob/);
  assert.equal(alice.session.cursor(), event.sequence);

  // An operation the server refuses: thrown, with the HTTP status as its code.
  const refused = await bob.op('no_such_operation', '{}').then(
    () => assert.fail('no error'),
    (e) => e.payload ?? e,
  );
  assert.ok(refused.code >= 400n, show(refused));

  // Close: stopped, with no error.
  alice.call((s, n) => s.close(n));
  const [stopped] = await alice.until((e) => (e.tag === 'stopped' ? { error: e.val } : undefined));
  assert.equal(stopped.error, undefined, show(stopped));
});

// Before, `op-result` had no request and took every gateway answer as one to a post, and a host
// whose call got no answer had no way to the engine's rule.
test('Switch: a 502 or a lost call is retryable for a read, not for a post that was sent', async (t) => {
  const connection = randomUUID();
  const read = sw.opRequest('agent', connection, 'list_rooms', '{}');
  const post = sw.opRequest('agent', connection, 'post_message', '{"body":"order 1"}');
  const mayHaveRun = /the server may have carried it out/;
  const gateway = (request) => {
    const e = thrown(() => sw.opResult(request, 502, ''));
    return e.payload ?? e;
  };
  assert.equal(gateway(read).retryable, true, show(gateway(read)));
  assert.equal(gateway(post).retryable, false, show(gateway(post)));
  assert.match(gateway(post).message, mayHaveRun);
  const timedOut = sw.opFailed(post, 'timeout', 'no answer', true);
  assert.equal(timedOut.kind, 'timeout');
  assert.equal(timedOut.retryable, false, show(timedOut));
  assert.match(timedOut.message, mayHaveRun);
  assert.equal(sw.opFailed(read, 'timeout', 'no answer', true).retryable, true);
  assert.equal(sw.opFailed(post, 'closed', 'refused', false).retryable, true);

  // Through the host: a server that reads the post and closes without answering.
  const server = createServer((socket) => socket.once('data', () => socket.destroy()));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const host = new SwitchHost(`http://127.0.0.1:${server.address().port}`, 'key', switchConfig('agent'));
  t.after(() => host.end());
  const lost = await host.op('post_message', '{"body":"order 1"}').then(
    () => assert.fail('no error'),
    (e) => e,
  );
  assert.equal(lost.kind, 'closed', show(lost));
  assert.equal(lost.retryable, false, show(lost));
  assert.match(lost.message, mayHaveRun);
});
