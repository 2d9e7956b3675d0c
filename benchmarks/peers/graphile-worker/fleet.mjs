// Graphile Worker as a member of the fleet benchmark (Fleet.java), one Node process per member.
//
// Run through run.sh beside this file (PEER_SCRIPT=fleet.mjs). ROLE=add prepares the drain: it
// empties the jobs table, adds N no-op jobs with addJobs (10,000 per call), VACUUM ANALYZEs, and
// prints one JSON line. ROLE=work is one worker process; it speaks the same lines as the Java
// members (FleetMember.java): it connects its pool and prints "ready"; on "go" it starts the
// runner and prints "progress N" (jobs completed by this process) at most every 20 ms; on "stop"
// it stops the runner, which flushes the batched completions, and prints "done {json}"; on "exit"
// it closes its pool and exits. The pool is ours, opened in full before "ready" and kept until
// "exit", so the parent can read its sessions' CPU while they are still open.
//
// Worker settings as in drain.mjs (Graphile Worker's own performance page): localQueue.size
// LOCAL_QUEUE_SIZE (500) for batched fetch, completeJobBatchDelay 0 for batched completion,
// CONCURRENCY (24) jobs at once in this process, a pool of CONCURRENCY + 1 connections.
import { createInterface } from "node:readline";
import { readFileSync } from "node:fs";
import { makeWorkerUtils, run, runMigrations, Logger } from "graphile-worker";
import pg from "pg";

const role = process.env.ROLE ?? "work";
const n = Number(process.env.N ?? 200000);
const concurrency = Number(process.env.CONCURRENCY ?? 24);
const localQueueSize = Number(process.env.LOCAL_QUEUE_SIZE ?? 500);
const connectionString = process.env.DATABASE_URL;
if (!connectionString) throw new Error("DATABASE_URL is not set");
// The worker gets our pool; a connection string beside it (its preset reads DATABASE_URL) is refused.
delete process.env.DATABASE_URL;
const version = JSON.parse(
  readFileSync(new URL("./node_modules/graphile-worker/package.json", import.meta.url), "utf8"),
).version;
const quiet = new Logger(() => (level, message) => {
  if (level === "error") process.stderr.write(`graphile-worker: ${message}\n`);
});
const epochMicros = () => Math.round((performance.timeOrigin + performance.now()) * 1000);
const say = (line) => process.stdout.write(line + "\n");

if (role === "add") {
  await runMigrations({ connectionString, logger: quiet });
  const client = new pg.Client({ connectionString });
  await client.connect();
  await client.query("TRUNCATE graphile_worker._private_jobs CASCADE");
  await client.query("TRUNCATE graphile_worker._private_job_queues CASCADE");
  const utils = await makeWorkerUtils({ connectionString, logger: quiet });
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i += 10000) {
    const specs = [];
    for (let j = i; j < Math.min(n, i + 10000); j++) specs.push({ identifier: "noop", payload: {} });
    await utils.addJobs(specs);
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  await utils.release();
  await client.query("VACUUM ANALYZE graphile_worker._private_jobs");
  const queued = Number((await client.query("SELECT count(*) FROM graphile_worker._private_jobs")).rows[0].count);
  await client.end();
  say(JSON.stringify({ peer: "graphile-worker", version, node: process.version, queued, add_seconds: seconds }));
  process.exit(0);
}

const lines = createInterface({ input: process.stdin });
const waiting = [];
const received = [];
lines.on("line", (line) => {
  const word = line.trim();
  const next = waiting.shift();
  if (next) next(word);
  else received.push(word);
});
lines.on("close", () => {
  for (const next of waiting.splice(0)) next("exit");
  received.push("exit");
});
const nextLine = () => (received.length ? Promise.resolve(received.shift()) : new Promise((r) => waiting.push(r)));
async function expect(word) {
  const line = await nextLine();
  if (line !== word) throw new Error(`expected '${word}' from the parent but got '${line}'`);
}

const pool = new pg.Pool({ connectionString, max: concurrency + 1, idleTimeoutMillis: 0, application_name: "fleet-graphile" });
pool.on("error", (e) => process.stderr.write(`graphile-worker peer: pool error: ${e.message}\n`));
const opened = await Promise.all(Array.from({ length: concurrency + 1 }, () => pool.connect()));
opened.forEach((c) => c.release());
say("ready");
await expect("go");

const began = epochMicros();
let completed = 0;
let last = 0;
const runner = await run({
  pgPool: pool,
  concurrency,
  noHandleSignals: true,
  pollInterval: 1000,
  logger: quiet,
  taskList: { noop: async () => {} },
  preset: {
    worker: {
      concurrentJobs: concurrency,
      maxPoolSize: concurrency + 1,
      localQueue: { size: localQueueSize },
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
    },
  },
});
runner.events.on("job:complete", ({ error }) => {
  if (!error) {
    completed++;
    last = epochMicros();
  }
});
let reported = -1;
const reporter = setInterval(() => {
  if (completed !== reported) {
    say(`progress ${completed}`);
    reported = completed;
  }
}, 20);
await expect("stop");
clearInterval(reporter);
await runner.stop();
say("done " + JSON.stringify({
  member: process.pid,
  version,
  completed,
  began_epoch_us: began,
  // job:complete fires when the completion joins its batch; stop() then flushes the batch.
  last_completion_epoch_us: last,
  concurrency,
  local_queue_size: localQueueSize,
}));
while ((await nextLine()) !== "exit") {}
await pool.end();
process.exit(0);
