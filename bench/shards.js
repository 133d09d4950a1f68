#!/usr/bin/env node
/**
 * A sharded source's fan-out cost (the performance target: `scan` and `report` over 12 shards on 3
 * servers ≤ 1.2× the same per-shard statements run by a plain script with the same concurrency).
 *
 *   npm run build && node bench/shards.js [--rows 100000] [--step 1000] [--runs 3] [--concurrency 4] [--out FILE]
 *   node bench/shards.js --plain-only     # the baseline alone, from one shard's statements
 *   node bench/shards.js --cli OTHER/bin/run.js   # time another build of taskrecon
 *
 * Servers: the machine's MariaDB (127.0.0.1:3306, databases taskrecon_bench_shop_0, dropped after)
 * and two throw-away `mariadbd`s on loopback ports (test/support/mariadb-servers.ts), four shards
 * each (async_task_0…11; shard i holds rows + i × step rows, the seeded mix of the shard tests).
 * The statements: one run of each command with MariaDB's general log on for the second server,
 * whose first shard's statements (and its server's own set-up) are replayed, renamed, for every
 * shard and server by bench/shards-replay.js with the same concurrency. Wall time from spawn to exit
 * (Node start-up on both sides), median of N interleaved runs, peak RSS of each child.
 * Writes its section of bench/RESULTS.md; exits 1 naming the cause when taskrecon does not read
 * sharded sources (the baseline still runs and prints, from a single-table run's statements).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { tsImport } from 'tsx/esm/api';
import { measure, median, rssMethod } from './measure.js';
import { buildPlan, capture, shardedResult } from './shards-plan.js';
import { machineFacts, markdownTable, updateSection } from './results.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const REPLAY_JS = join(ROOT, 'bench', 'shards-replay.js');
const TARGET_RATIO = 1.2;
const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '100000' },
    step: { type: 'string', default: '1000' },
    runs: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '4' },
    out: { type: 'string', default: join(ROOT, 'bench', 'RESULTS.md') },
    'plain-only': { type: 'boolean', default: false },
    cli: { type: 'string', default: join(ROOT, 'bin', 'run.js') },
  },
});
const RUN_JS = values.cli;
const RUNS = Number(values.runs);
const CONCURRENCY = Number(values.concurrency);
const log = (message) => console.error(`[bench shards ${new Date().toISOString().slice(11, 19)}] ${message}`);
const fmt = (n, digits = 3) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const h = await tsImport('../test/support/mariadb-servers.ts', import.meta.url);

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'taskrecon-bench-shards-'));
  const configDir = join(dir, 'config');
  const plainDir = join(dir, 'plain');
  mkdirSync(configDir);
  mkdirSync(plainDir);
  log('starting two throw-away mariadbd');
  const own = await h.startMariadbServers(2, {
    bufferPoolMb: 256,
    extraArgs: ['--innodb-flush-log-at-trx-commit=2'],
  });
  const machine = h.machineMariadb();
  const servers = [machine, ...own];
  const layout = h.shardLayout({
    servers: 3,
    databasePrefix: 'taskrecon_bench_shop_',
    rowsPerShard: Number(values.rows),
    rowsStep: Number(values.step),
  });
  try {
    const started = Date.now();
    await h.seedShards(servers, layout);
    const seedSeconds = (Date.now() - started) / 1000;
    const truth = await h.groundTruth(servers, layout);
    log(`seeded ${truth.total.toLocaleString('en-US')} rows in 12 shards in ${fmt(seedSeconds, 1)} s`);
    writeFileSync(join(configDir, 'taskrecon.config.yaml'), h.shardsConfigYaml(servers, layout));
    const captured = layout.shards.find((s) => s.server === 1);
    const commands = {
      scan: { sharded: ['scan', '--json', '--source', 'tasks'], single: ['scan', '--json'] },
      // The window holds every seeded row, so the p95 compares with the exact one over all rows.
      // Each shard is a table of 100,000 rows or more with no index on created_at: by default the
      // report holds the window's figures back (the index-served ones are read); --full-scan reads
      // every figure.
      report: {
        sharded: ['report', '--json', '--source', 'tasks', '--window', '25h'],
        single: ['report', '--json', '--window', '25h'],
      },
      'report-full': {
        sharded: ['report', '--json', '--source', 'tasks', '--window', '25h', '--full-scan'],
        single: ['report', '--json', '--window', '25h', '--full-scan'],
      },
    };
    const singleArgs = [
      '--db',
      own[0].dsn(captured.database),
      '--profile',
      'async-task',
      '--table',
      captured.table,
    ];
    const plans = {};
    let unsupported;
    for (const [name, command] of Object.entries(commands)) {
      const outFile = join(dir, `${name}.json`);
      let got = values['plain-only']
        ? undefined
        : await capture(own[0], RUN_JS, command.sharded, configDir, outFile);
      const verdict = got ? shardedResult(outFile, got.run) : { ok: false, why: 'not run (--plain-only)' };
      if (!verdict.ok) {
        unsupported ??= `\`taskrecon ${command.sharded.join(' ')}\` over 12 shards ${verdict.why}`;
        got = await capture(own[0], RUN_JS, [...command.single, ...singleArgs], plainDir, outFile);
        if (got.run.code > 2)
          throw new Error(`single-table ${name} exited ${got.run.code}: ${got.run.stderr.slice(0, 1500)}`);
      }
      plans[name] = {
        ...buildPlan(got.entries, captured, layout, servers, CONCURRENCY),
        sharded: verdict.ok,
        json: verdict.json,
      };
      const planFile = join(dir, `${name}-plan.json`);
      writeFileSync(planFile, JSON.stringify(plans[name].plan));
      plans[name].file = planFile;
      log(
        `${name}: ${plans[name].perShard} statements per shard, ${plans[name].perServer} per server (${verdict.ok ? 'sharded run' : 'single-table run'})`,
      );
    }

    const series = {};
    for (let i = 0; i < RUNS; i++)
      for (const name of Object.keys(commands))
        for (const side of i % 2 ? ['plain', 'cli'] : ['cli', 'plain']) {
          if (side === 'cli' && !plans[name].sharded) continue;
          const outFile = join(dir, `${name}-${side}.out`);
          const run =
            side === 'cli'
              ? await measure(process.execPath, [RUN_JS, ...commands[name].sharded], {
                  cwd: configDir,
                  stdout: outFile,
                })
              : await measure(process.execPath, [REPLAY_JS, plans[name].file], { stdout: outFile });
          if (run.code > (side === 'cli' ? 2 : 0))
            throw new Error(`${name} ${side} exited ${run.code}: ${run.stderr.slice(0, 1500)}`);
          (series[`${name}-${side}`] ??= []).push(run);
          log(`${name} ${side} run ${i + 1}: ${fmt(run.seconds)} s, ${fmt(run.peakRssMb, 1)} MB`);
        }
    const floor = await measure(process.execPath, ['-e', '']);

    // The last runs' results against the SQL sums now (the seeded rows keep their due and stuck side for 9 minutes).
    const now = await h.groundTruth(servers, layout);
    const rows = [];
    const notes = [];
    for (const name of Object.keys(commands)) {
      const plain = series[`${name}-plain`];
      const cli = series[`${name}-cli`];
      const plainMedian = median(plain.map((r) => r.seconds));
      const replayed = JSON.parse(readFileSync(join(dir, `${name}-plain.out`), 'utf8'));
      rows.push({
        run: `plain mysql2 script, ${name}'s statements (${plans[name].perShard}/shard + ${plans[name].perServer}/server), concurrency ${CONCURRENCY}`,
        'median s': fmt(plainMedian),
        runs: plain.map((r) => fmt(r.seconds, 2)).join(', '),
        'peak RSS MB': fmt(Math.max(...plain.map((r) => r.peakRssMb)), 1),
        ratio: '',
        result: `${replayed.statements} statements, ${replayed.rows} rows`,
      });
      if (!cli) continue;
      const cliMedian = median(cli.map((r) => r.seconds));
      const ratio = cliMedian / plainMedian;
      const json = JSON.parse(readFileSync(join(dir, `${name}-cli.out`), 'utf8'));
      let result = `${json.shards.length} shards`;
      if (name === 'scan') {
        const s = json.summary;
        const equal =
          s.total === now.total &&
          s.due === now.due &&
          s.stuck === now.stuck &&
          Object.entries(now.byStatus).every(([k, n]) => s.byStatus[k] === n);
        result += `; summary ${equal ? 'equals' : '**differs from**'} the SQL sums (total ${s.total}, due ${s.due}, stuck ${s.stuck})`;
      } else if (json.metrics) {
        const m = json.metrics;
        const equal = m.due === now.due && m.stuck === now.stuck && m.failedOpen === now.byStatus.failed;
        result += `; due, stuck and failed open ${equal ? 'equal' : '**differ from**'} the SQL sums (${m.due}, ${m.stuck}, ${m.failedOpen})`;
        result +=
          m.created === null
            ? `; window figures held back (${(json.skipped ?? []).join(', ')})`
            : `; created ${m.created === now.total ? 'equals' : '**differs from**'} the SQL total (${m.created}); p95 ${m.latencyP95Seconds} s (exact nearest rank ${now.latencyP95Seconds} s)`;
      }
      rows.push({
        run: `\`taskrecon ${commands[name].sharded.join(' ')}\`, 12 shards on 3 servers`,
        'median s': fmt(cliMedian),
        runs: cli.map((r) => fmt(r.seconds, 2)).join(', '),
        'peak RSS MB': fmt(Math.max(...cli.map((r) => r.peakRssMb)), 1),
        ratio: `${fmt(ratio, 2)}× (≤ ${TARGET_RATIO}×: ${ratio <= TARGET_RATIO ? '**met**' : '**missed**'})`,
        result,
      });
      if (plans[name].shared)
        notes.push(
          `${name}: ${plans[name].shared} connection(s) served several shards; only the captured shard's statements of those were replayed.`,
        );
    }
    rows.push({
      run: 'node start-up alone (`node -e ""`)',
      'median s': fmt(floor.seconds),
      runs: fmt(floor.seconds, 2),
      'peak RSS MB': fmt(floor.peakRssMb, 1),
      ratio: '',
      result: '',
    });
    const body = [
      '## sharded source: scan and report over 12 shards on 3 servers',
      '',
      `12 shards (\`async_task_0…11\`, four per server: the machine's MariaDB and two throw-away \`mariadbd\`s with a 256 MiB buffer pool), ` +
        `${truth.total.toLocaleString('en-US')} rows (${values.rows} + i × ${values.step} in shard i; the seeded mix of the shard tests), seeded in ${fmt(seedSeconds, 1)} s. ` +
        "The baseline replays, through plain mysql2 with the same concurrency, the statements taskrecon sent for one shard (MariaDB's general log), renamed for each shard, " +
        `and each server's own set-up once. Wall time from spawn to exit, Node start-up on both sides, median of ${RUNS}, runs interleaved. Peak RSS by ${rssMethod}. ` +
        'Every shard is a table of 100,000 rows or more without an index on created_at: `report` reads the figures an index serves and holds the window back (for every shard alike), `report --full-scan` reads every figure.',
      '',
      markdownTable(rows),
      ...notes.map((n) => `- ${n}`),
      '',
      ...Object.keys(commands).flatMap((name) => [
        `Statements replayed per shard for ${name} (distinct texts, in order; the captured shard \`${captured.name}\`):`,
        '',
        '```sql',
        ...[...new Set(plans[name].sample.map((sql) => sql.replace(/\s+/g, ' ')))].map((sql) => `${sql};`),
        '```',
        '',
      ]),
      'Machine:',
      '',
      machineFacts({
        'mariadb (machine / throw-away)': `${await version(machine)} / ${await version(own[0])}`,
      }),
    ].join('\n');
    console.log(body);
    if (values['plain-only'])
      log('--plain-only: the baseline alone, from single-table runs; nothing was written to RESULTS.md');
    else if (unsupported) {
      console.error(
        `\ntaskrecon cannot run this benchmark over a sharded source yet: ${unsupported}.\n` +
          'The plain baseline above ran from a single-table run of the same command. Build a taskrecon with sharded sources ' +
          '(`npm run build`) and run again; nothing was written to RESULTS.md.',
      );
      process.exitCode = 1;
    } else {
      updateSection(values.out, 'shards', body);
      log(`wrote the shards section of ${values.out}`);
    }
  } finally {
    await h
      .dropShards([machine], { shards: layout.shards.filter((s) => s.server === 0) })
      .catch(() => undefined);
    await h.stopMariadbServers(own);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function version(server) {
  const conn = await server.connect();
  const [[row]] = await conn.query('SELECT VERSION() AS v');
  await conn.end();
  return row.v;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
