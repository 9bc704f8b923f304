// What the scenarios need, read from the environment run.sh sets up: the peers' URLs and keys
// (AGENTWIRE_TEST_ENV, JSON) and the golden vectors from tests/vectors.
import { readFileSync, readdirSync } from "node:fs";

const vectors = new URL("../vectors/", import.meta.url);

function rktVectors() {
  const dir = new URL("rkt/", vectors);
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => JSON.parse(readFileSync(new URL(f, dir), "utf8")));
}

/** The server frames (`<=` lines) of each MoltZap 2026.425 transcript. */
function moltzapTranscripts() {
  const dir = new URL("moltzap-2026.425/", vectors);
  return readdirSync(dir)
    .filter((f) => f.endsWith(".out"))
    .sort()
    .map((f) => ({
      name: f,
      server: readFileSync(new URL(f, dir), "utf8")
        .split("\n")
        .filter((l) => / <= /.test(l))
        .map((l) => l.slice(l.indexOf(" <= ") + 4)),
    }));
}

export function testEnv() {
  const raw = process.env.AGENTWIRE_TEST_ENV;
  if (!raw) throw new Error("AGENTWIRE_TEST_ENV is not set: run tests/js/run.sh");
  return { ...JSON.parse(raw), vectors: { rkt: rktVectors(), moltzap: moltzapTranscripts() } };
}
