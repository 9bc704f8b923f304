// Strings the component returns reach JavaScript exactly as the engine holds them, a leading
// U+FEFF included (jco's glue decodes them with a TextDecoder that would drop it: transpile.mjs
// keeps it). Sans-IO: no socket, no peer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { moltzap, rkt } from './out/engine.js';

const T = 1_782_648_000_000n;
const BOM = '\ufeff';
const rktReply = (kind, to, body) =>
  `RKT/1.0 ${kind}\nVersion: 1\nMessage-ID: m-${kind}\nReply-To: ${to}\nSession-ID: s\nTimestamp: 2026-06-28T12:00:00Z\n\n${body}`;

test('RKT: a response body and a close reason that start with U+FEFF keep it', () => {
  const s = new rkt.Session({ capabilities: [], keepalive: false });
  s.handleOpen(T);
  const hello = s.pollTransmit().val;
  const helloId = /^Message-ID: (.*)$/m.exec(hello)[1];
  s.handleText(T, rktReply('HELLO_ACK', helloId, '{"agreed_version":1,"session_timeout":300}'));
  assert.equal(s.pollEvent()?.tag, 'ready');
  const id = s.discover(T);
  s.pollTransmit();
  s.handleText(T, rktReply('RESPONSE', id, `${BOM}not json`));
  const response = s.pollEvent();
  assert.equal(response?.tag, 'response');
  assert.equal(response.val.body, `${BOM}not json`);
  s.handleClose(T, 4000, `${BOM}bye`);
  const closed = s.pollEvent();
  assert.equal(closed?.tag, 'closed');
  assert.equal(closed.val.reason, `${BOM}bye`);
});

test('MoltZap: a close reason that starts with U+FEFF keeps it', () => {
  const s = new moltzap.Session({});
  s.handleOpen(T);
  s.close(1000, `${BOM}bye`);
  const frame = s.pollTransmit();
  assert.equal(frame?.tag, 'close');
  assert.equal(frame.val.reason, `${BOM}bye`);
});
