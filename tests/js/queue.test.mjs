// The buffer under events() and stream(): what it has dropped or handed out is not kept alive.
import { test } from "node:test";
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import { Queue } from "../../npm/dist/calls.js";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc");

/** How many of `refs` are still alive after a full collection. */
async function alive(refs) {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 10));
  }
  return refs.filter((r) => r.deref() !== undefined).length;
}

test("values dropped past the bound are not kept", async () => {
  const q = new Queue(2, 1 << 30, (q) => q.dropOldest());
  const refs = [];
  for (let i = 0; i < 1000; i++) {
    const v = { i, pad: new Array(100).fill(i) };
    refs.push(new WeakRef(v));
    q.push(v, 1);
  }
  assert.equal(q.size, 2);
  assert.equal(q.dropped, 998);
  assert.equal(await alive(refs), 2);
});

test("values read while the queue never empties are not kept", async () => {
  const q = new Queue(10, 1 << 30, (q) => q.dropOldest());
  const refs = [];
  for (let i = 0; i < 3000; i++) {
    const v = { i };
    refs.push(new WeakRef(v));
    q.push(v, 1);
    if (i >= 2) assert.equal((await q.next()).value.i, i - 2);
  }
  assert.equal(q.size, 2);
  assert.equal(await alive(refs), 2);
});

test("the byte bound drops as many of the oldest as it takes, and one value always fits", () => {
  const q = new Queue(100, 10, (q) => q.dropOldest());
  for (const n of [4, 4, 4]) q.push(n, n);
  assert.deepEqual([q.size, q.dropped], [2, 1]);
  q.push(50, 50); // over the bound alone: it fits once the queue is empty
  assert.deepEqual([q.size, q.dropped], [1, 3]);
});

// Queues sharing a byte bound, the overflow policy dropping the oldest: a value for an empty
// queue, its sharers holding the bytes, made no room and looped for ever; it is taken, over the
// bound by that one value, and the bound holds again for the next.
test("a policy that makes no room takes the value instead of looping", () => {
  const all = { n: 0 };
  const full = new Queue(100, 10, (q) => q.dropOldest(), undefined, all);
  const empty = new Queue(100, 10, (q) => q.dropOldest(), undefined, all);
  full.push("a", 8);
  empty.push("b", 4);
  assert.deepEqual([full.size, empty.size, all.n, empty.dropped], [1, 1, 12, 0]);
  empty.push("c", 4); // its own oldest goes: room enough again
  assert.deepEqual([empty.size, all.n, empty.dropped], [1, 12, 1]);
});

test("an error ends the queue once: every reader waiting gets it, or else the next read; then the end", async () => {
  const boom = new Error("boom");
  const waiting = new Queue(10, 1 << 30, () => {});
  const a = waiting.next();
  const b = waiting.next();
  waiting.end(boom);
  await assert.rejects(a, boom);
  await assert.rejects(b, boom);
  assert.deepEqual(await waiting.next(), { value: undefined, done: true });

  const later = new Queue(10, 1 << 30, () => {});
  later.push(1, 1);
  later.end(boom);
  assert.deepEqual(await later.next(), { value: 1, done: false });
  await assert.rejects(later.next(), boom);
  assert.deepEqual(await later.next(), { value: undefined, done: true });
});

test("fail drops the values waiting: the next read is its error", async () => {
  const boom = new Error("boom");
  const q = new Queue(10, 1 << 30, () => {});
  for (let i = 0; i < 5; i++) q.push(i, 1);
  q.fail(boom);
  assert.equal(q.size, 0);
  await assert.rejects(q.next(), boom);
  assert.deepEqual(await q.next(), { value: undefined, done: true });
});
