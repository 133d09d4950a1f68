import { Flags } from '../core/oclif.js';
import { BaseCommand } from '../base-command.js';
import { ExitCode } from '../errors.js';
import { runDoctor, runDoctorShards, type DoctorResult } from '../verbs/doctor/index.js';
import type { SourceChoice } from '../context.js';
import type { ShardSpec } from '../core/shards.js';
import { profileFor } from '../db/profiles/registry.js';
import { renderDoctor } from '../render/doctor.js';
import {
  brokerDoctorChecks,
  LONG_TRANSACTION_SECONDS,
  openMoveIntentChecks,
  withBrokerChecks,
} from '../verbs/doctor/index.js';
import { durationFlag, shardFlags } from '../flags.js';

export default class Doctor extends BaseCommand<typeof Doctor> {
  static override readOnly = true;
  static override summary =
    'Check a task table and its server: columns, indexes, time zones, clocks, SKIP LOCKED, audit table.';
  static override description =
    'Reads only. Each check says ok, warn or fail, with a fix hint. The index check shows the EXPLAIN of the ' +
    'real scan queries. Exits 1 when any check fails, 0 otherwise.';
  static override examples = [
    '<%= config.bin %> doctor --db mysql://app@127.0.0.1:3306/shop --profile async-task',
    '<%= config.bin %> doctor --source failed --plans',
    '<%= config.bin %> doctor --db sqlite:taskrecon-demo.sqlite --json',
  ];

  static override flags = {
    ...shardFlags,
    plans: Flags.boolean({
      summary: 'Show the plan of every scan query, not only the due and stuck counts.',
    }),
    'long-transaction': durationFlag({
      summary: `Report transactions that hold back vacuum once open this long (default ${LONG_TRANSACTION_SECONDS / 60}m; PostgreSQL).`,
    }),
  };

  async run(): Promise<DoctorResult> {
    const choice = this.context.source();
    const shards = this.context.shards(choice);
    if (shards) return this.finish(await this.doctorShards(choice, shards));
    const started = Date.now();
    const db = await this.context.open(choice);
    const connectMs = Date.now() - started;
    const appTimeZone = process.env.TASKRECON_APP_TIME_ZONE ?? this.context.config.appTimeZone;
    const result = await runDoctor(db, {
      sourceName: choice.name,
      profile: choice.profile,
      appTimeZone,
      stuckAfterMs: choice.stuckAfterMs,
      connectMs,
      readReplica: this.context.openedReplica,
      rules: this.context.config.rules,
      sourceDsn: this.context.dsn(choice),
      openDb: (dsn) => this.context.openExtra(dsn),
      ...(this.flags['long-transaction'] === undefined
        ? {}
        : { longTransactionSeconds: Math.round(this.flags['long-transaction'] / 1000) }),
    });
    withBrokerChecks(result, await openMoveIntentChecks(db));
    return this.finish(result);
  }

  private async finish(result: DoctorResult): Promise<DoctorResult> {
    withBrokerChecks(result, await brokerDoctorChecks(this.context.config));
    if (!this.jsonEnabled()) this.log(renderDoctor(result, { plans: this.flags.plans }));
    if (result.status === 'fail') this.setExit(ExitCode.findings);
    return result;
  }

  /** Every shard's checks, and whether the shards' schemas agree. */
  private doctorShards(choice: SourceChoice, shards: ShardSpec[]) {
    return runDoctorShards(shards, {
      sourceName: choice.name,
      profileOf: (spec) => profileFor({ ...choice.config, table: spec.table }, `sources.${choice.name}`),
      open: (spec) => this.context.open(choice, { dsn: spec.db }),
      appTimeZone: process.env.TASKRECON_APP_TIME_ZONE ?? this.context.config.appTimeZone,
      stuckAfterMs: choice.stuckAfterMs,
      concurrency: this.flags['shard-concurrency'],
      allowPartial: this.flags['allow-partial'],
    });
  }
}
