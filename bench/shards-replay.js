#!/usr/bin/env node
/**
 * The plain baseline of bench/shards.js: a mysql2 script that runs a plan of statements with no
 * taskrecon code loaded. The plan (JSON, written by bench/shards.js from what taskrecon sent):
 *
 *   { "concurrency": 4,
 *     "units": [ { "host", "port", "database", "phase": "server" | "shard",
 *                  "connections": [ ["SQL", …], … ] } ] }
 *
 * "server" units (a server's own set-up, read once per server) run first, all at once; then the
 * "shard" units, `concurrency` at a time. Within a unit each connection runs its statements in
 * order and the unit's connections run side by side, as taskrecon's did. Every row is read (and
 * counted) in full. Prints {"statements": n, "rows": n} on stdout.
 *
 *   node bench/shards-replay.js plan.json
 */
import mysql from 'mysql2/promise';
import { readFileSync } from 'node:fs';

const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'));
let statements = 0;
let rows = 0;

async function runUnit(unit) {
  await Promise.all(
    unit.connections.map(async (list) => {
      const conn = await mysql.createConnection({
        host: unit.host,
        port: unit.port,
        user: 'root',
        database: unit.database,
        dateStrings: true,
        supportBigNumbers: true,
      });
      try {
        for (const sql of list) {
          const [result] = await conn.query(sql);
          statements += 1;
          if (Array.isArray(result)) rows += result.length;
        }
      } finally {
        await conn.end();
      }
    }),
  );
}

async function pool(units, concurrency) {
  let next = 0;
  const worker = async () => {
    while (next < units.length) await runUnit(units[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, units.length) }, worker));
}

async function main() {
  const servers = plan.units.filter((u) => u.phase === 'server');
  const shards = plan.units.filter((u) => u.phase === 'shard');
  await Promise.all(servers.map(runUnit));
  await pool(shards, plan.concurrency ?? 4);
  process.stdout.write(`${JSON.stringify({ statements, rows })}\n`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
