// Graphile Worker's batched drain, as a peer baseline for reactive-workqueue's drain benchmark.
//
// Run through run.sh beside this file, which installs graphile-worker into a scratch folder and
// runs this file from there. Prints progress on stderr and one JSON line on stdout:
//   {"peer":"graphile-worker","version":...,"n":...,"drain_items_per_s":...,"add_items_per_s":...}
//
// Settings follow Graphile Worker's own performance page ("Quick stats" configuration):
// concurrentJobs 24, maxPoolSize 25, localQueue.size 500 (batched fetch), completeJobBatchDelay 0
// and failJobBatchDelay 0 (batched completion). The task is a no-op.
import { readdirSync, readFileSync } from "node:fs";
import { makeWorkerUtils, run, runMigrations, Logger } from "graphile-worker";
import pg from "pg";

const version = JSON.parse(
  readFileSync(new URL("./node_modules/graphile-worker/package.json", import.meta.url), "utf8"),
).version;

const n = Number(process.env.N ?? 200000);
const concurrency = Number(process.env.CONCURRENCY ?? 24);
const localQueueSize = Number(process.env.LOCAL_QUEUE_SIZE ?? 500);
const addChunk = Number(process.env.ADD_CHUNK ?? 10000);
const connectionString = process.env.DATABASE_URL;
if (!connectionString) throw new Error("DATABASE_URL is not set");

const quiet = new Logger(() => (level, message) => {
  if (level === "error") process.stderr.write(`graphile-worker: ${message}\n`);
});
const log = (m) => process.stderr.write(`[graphile-worker peer] ${m}\n`);

await runMigrations({ connectionString, logger: quiet });
const client = new pg.Client({ connectionString });
await client.connect();
await client.query("TRUNCATE graphile_worker._private_jobs CASCADE");
await client.query("TRUNCATE graphile_worker._private_job_queues CASCADE");

// Bulk add: addJobs, one call (one statement) per chunk, sequentially from one client.
const utils = await makeWorkerUtils({ connectionString, logger: quiet });
const addStart = process.hrtime.bigint();
for (let i = 0; i < n; i += addChunk) {
  const specs = [];
  for (let j = i; j < Math.min(n, i + addChunk); j++) specs.push({ identifier: "noop", payload: {} });
  await utils.addJobs(specs);
}
const addSeconds = Number(process.hrtime.bigint() - addStart) / 1e9;
await utils.release();
await client.query("VACUUM ANALYZE graphile_worker._private_jobs");
const queued = Number((await client.query("SELECT count(*) FROM graphile_worker._private_jobs")).rows[0].count);
log(`added ${queued} jobs in ${addSeconds.toFixed(2)} s`);

// CPU over the drain, read from /proc as the Java harness reads it (CpuMeter.java): the server is
// every postgres process plus the postmasters' exited children; the client is this process.
function serverCpuTicks() {
  const stats = new Map();
  for (const pid of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(pid)) continue;
    let line;
    try {
      line = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue;
    }
    const command = line.slice(line.indexOf("(") + 1, line.lastIndexOf(")"));
    if (command !== "postgres") continue;
    const f = line.slice(line.lastIndexOf(")") + 2).split(" ");
    stats.set(pid, { parent: f[1], own: Number(f[11]) + Number(f[12]), children: Number(f[13]) + Number(f[14]) });
  }
  let ticks = 0;
  for (const s of stats.values()) ticks += s.own + (stats.has(s.parent) ? 0 : s.children);
  return ticks;
}
function machineTicks() {
  const cpu = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  const all = cpu.reduce((a, b) => a + b, 0);
  return { all, busy: all - cpu[3] - cpu[4] };
}
let cpuAvailable = true;
let serverBefore = 0;
let machineBefore = { all: 0, busy: 0 };
try {
  serverBefore = serverCpuTicks();
  machineBefore = machineTicks();
} catch {
  cpuAvailable = false;
}
const clientBefore = process.cpuUsage();

let completed = 0;
let done;
const allDone = new Promise((resolve) => (done = resolve));
const start = process.hrtime.bigint();
const runner = await run({
  connectionString,
  concurrency,
  maxPoolSize: concurrency + 1,
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
  if (!error && ++completed === n) done();
});
const timeoutMs = Number(process.env.TIMEOUT_MS ?? 600000);
const timer = setTimeout(() => done(), timeoutMs);
await allDone;
clearTimeout(timer);
// job:complete fires when the completion is queued for its batch; stop() flushes the batch, so
// the drain ends when stop() resolves and every completion is written.
await runner.stop();
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const clientUsage = process.cpuUsage(clientBefore);
let serverCpuSeconds = null;
let machineBusy = null;
if (cpuAvailable) {
  serverCpuSeconds = (serverCpuTicks() - serverBefore) / 100; // USER_HZ
  const machineAfter = machineTicks();
  machineBusy = (machineAfter.busy - machineBefore.busy) / (machineAfter.all - machineBefore.all);
}
const remaining = Number((await client.query("SELECT count(*) FROM graphile_worker._private_jobs")).rows[0].count);
await client.end();
const drained = queued - remaining;
log(`drained ${drained} jobs in ${seconds.toFixed(2)} s (${remaining} left)`);
process.stdout.write(JSON.stringify({
  peer: "graphile-worker",
  version,
  node: process.version,
  n: queued,
  drained,
  remaining,
  concurrency,
  local_queue_size: localQueueSize,
  complete_job_batch_delay: 0,
  drain_seconds: seconds,
  drain_items_per_s: drained / seconds,
  add_seconds: addSeconds,
  add_items_per_s: n / addSeconds,
  add_chunk: addChunk,
  server_cpu_us_per_item: serverCpuSeconds === null || drained === 0 ? null : (serverCpuSeconds * 1e6) / drained,
  client_cpu_us_per_item: drained === 0 ? null : (clientUsage.user + clientUsage.system) / drained,
  machine_busy: machineBusy,
}) + "\n");
