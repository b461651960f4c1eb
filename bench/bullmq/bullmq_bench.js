// SPDX-License-Identifier: MIT
//
// bench/bullmq/bullmq_bench.js - the BullMQ peer of rp-bench-cluster.
//
// BullMQ is the Redis job queue users pick for "jobs on many machines through
// Redis", so rp-bench-cluster reports its own numbers as ratios to this
// script's, measured on the same redis-server in the same bench/run.  Two
// measurements, each repeated --runs times on a fresh queue (the median is
// reported):
//
//   throughput  --jobs no-op jobs added with addBulk in batches of --batch
//               while --workers workers (in this one Node process, each with
//               --concurrency) run them; jobs/s from the first add to the
//               last completion.  Completed jobs are removed (removeOnComplete)
//               so Redis memory stays flat, as a production queue would run.
//   ask         --asks sequential round trips: queue.add() then
//               job.waitUntilFinished(queueEvents), one at a time; p50 and p99
//               of the round trip in microseconds.
//
// Redis CPU per job comes from INFO CPU (used_cpu_sys + used_cpu_user) before
// and after each throughput run.  Output: a human summary on stdout and, with
// --kv FILE, "key=value" lines appended to FILE that rp-bench-cluster reads (bullmq_jobs_per_s,
// bullmq_ask_p50_us, bullmq_ask_p99_us, bullmq_redis_cpu_us_per_job).
//
// Invariants: every queue name carries a per-run random prefix, so a rerun on
// a server with old keys measures a clean queue; the script exits 0 only when
// every job of every run completed (a lost job is a failed measurement, not a
// slower one).
'use strict';

const { Queue, Worker, QueueEvents } = require('bullmq');
const IORedis = require('ioredis');
const fs = require('fs');

function usage(code) {
  const out = code === 0 ? process.stdout : process.stderr;
  out.write('usage: node bullmq_bench.js --port N [--host H] [--jobs N] [--batch N]\n' +
            '         [--workers N] [--concurrency N] [--asks N] [--runs N] [--kv FILE]\n');
  process.exit(code);
}

function parseArgs(argv) {
  const o = { host: '127.0.0.1', port: 0, jobs: 30000, batch: 1000, workers: 2,
              concurrency: 50, asks: 2000, runs: 3, kv: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help') usage(0);
    const key = a.replace(/^--/, '');
    if (!(key in o) || i + 1 >= argv.length) usage(2);
    const v = argv[++i];
    if (key === 'host' || key === 'kv') { o[key] = v; continue; }
    if (!/^[0-9]+$/.test(v)) usage(2);
    o[key] = parseInt(v, 10);
  }
  if (!o.port || o.port > 65535 || !o.jobs || !o.batch || !o.workers || !o.concurrency ||
      !o.runs)
    usage(2);
  return o;
}

function median(v) {
  const s = [...v].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : 0;
}

function pct(sorted, p) {
  if (!sorted.length) return 0;
  const r = Math.ceil(p * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, r)) - 1];
}

async function redisCpuSeconds(conn) {
  const info = await conn.info('cpu');
  let s = 0;
  for (const line of info.split(/\r?\n/)) {
    const m = /^used_cpu_(sys|user):([0-9.]+)$/.exec(line);
    if (m) s += parseFloat(m[2]);
  }
  return s;
}

function connect(o) {
  return new IORedis({ host: o.host, port: o.port, maxRetriesPerRequest: null });
}

// One throughput run: workers first, then every batch added back to back.
async function throughputRun(o, name, admin) {
  const connection = { host: o.host, port: o.port, maxRetriesPerRequest: null };
  const queue = new Queue(name, { connection });
  let done = 0;
  let finish;
  const all = new Promise((resolve) => { finish = resolve; });
  const workers = [];
  for (let w = 0; w < o.workers; w++) {
    const worker = new Worker(name, async () => {}, { connection, concurrency: o.concurrency });
    worker.on('completed', () => { if (++done === o.jobs) finish(); });
    workers.push(worker);
  }
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  const cpu0 = await redisCpuSeconds(admin);
  const t0 = process.hrtime.bigint();
  for (let added = 0; added < o.jobs; added += o.batch) {
    const n = Math.min(o.batch, o.jobs - added);
    const jobs = [];
    for (let i = 0; i < n; i++)
      jobs.push({ name: 'noop', data: { i: added + i },
                  opts: { removeOnComplete: true, removeOnFail: true } });
    await queue.addBulk(jobs);
  }
  await all;
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu1 = await redisCpuSeconds(admin);
  await Promise.all(workers.map((w) => w.close()));
  await queue.obliterate({ force: true });
  await queue.close();
  return { jobsPerS: o.jobs / secs, redisUsPerJob: (cpu1 - cpu0) * 1e6 / o.jobs };
}

// One ask run: sequential add + waitUntilFinished round trips.
async function askRun(o, name) {
  const connection = { host: o.host, port: o.port, maxRetriesPerRequest: null };
  const queue = new Queue(name, { connection });
  const events = new QueueEvents(name, { connection });
  const worker = new Worker(name, async (job) => job.data.x, { connection, concurrency: 1 });
  await Promise.all([events.waitUntilReady(), worker.waitUntilReady()]);
  const warm = Math.min(100, o.asks);
  const rtt = [];
  for (let i = 0; i < o.asks + warm; i++) {
    const t0 = process.hrtime.bigint();
    const job = await queue.add('ask', { x: i }, { removeOnComplete: 1000, removeOnFail: true });
    const v = await job.waitUntilFinished(events, 10000);
    const us = Number(process.hrtime.bigint() - t0) / 1e3;
    if (v !== i) throw new Error(`ask ${i}: reply ${v}`);
    if (i >= warm) rtt.push(us);
  }
  await worker.close();
  await events.close();
  await queue.obliterate({ force: true });
  await queue.close();
  rtt.sort((a, b) => a - b);
  return { p50: pct(rtt, 0.5), p99: pct(rtt, 0.99) };
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const admin = connect(o);
  const tag = `rpb${process.pid}${Date.now() % 100000}`;
  const tput = [], rcpu = [], p50 = [], p99 = [];
  console.log(`BullMQ ${require('bullmq/package.json').version}, ioredis ` +
              `${require('ioredis/package.json').version}, node ${process.version}; ` +
              `redis ${o.host}:${o.port}`);
  console.log(`throughput: ${o.jobs} no-op jobs, addBulk of ${o.batch}, ${o.workers} workers x ` +
              `concurrency ${o.concurrency}; asks: ${o.asks} sequential add+waitUntilFinished`);
  for (let r = 0; r < o.runs; r++) {
    const t = await throughputRun(o, `${tag}t${r}`, admin);
    tput.push(t.jobsPerS);
    rcpu.push(t.redisUsPerJob);
    if (o.asks > 0) {
      const a = await askRun(o, `${tag}a${r}`);
      p50.push(a.p50);
      p99.push(a.p99);
    }
    console.log(`  run ${r + 1}: ${Math.round(t.jobsPerS)} jobs/s, redis ` +
                `${t.redisUsPerJob.toFixed(2)} us CPU/job` +
                (o.asks > 0 ? `; ask p50 ${Math.round(p50[r])} us, p99 ${Math.round(p99[r])} us` : ''));
  }
  const res = { bullmq_jobs_per_s: median(tput), bullmq_redis_cpu_us_per_job: median(rcpu),
                bullmq_ask_p50_us: median(p50), bullmq_ask_p99_us: median(p99),
                bullmq_runs: o.runs };
  console.log(`median: ${Math.round(res.bullmq_jobs_per_s)} jobs/s, ask p50 ` +
              `${Math.round(res.bullmq_ask_p50_us)} us, p99 ${Math.round(res.bullmq_ask_p99_us)} us, ` +
              `redis ${res.bullmq_redis_cpu_us_per_job.toFixed(2)} us CPU/job`);
  if (o.kv)
    fs.appendFileSync(o.kv, Object.entries(res).map(([k, v]) => `${k}=${v}\n`).join(''));
  await admin.quit();
}

main().then(() => process.exit(0), (e) => {
  console.error(`bullmq_bench: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
