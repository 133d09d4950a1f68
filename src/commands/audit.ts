import { Flags } from '../core/oclif.js';
import { BaseCommand } from '../base-command.js';
import { countFlag, FORMATS, resolveTime, shardFlags, timeFlag } from '../flags.js';
import { type AuditEntry, latestAudit, resolveRunId, shardAudit, streamAudit } from '../verbs/audit/index.js';
import type { ShardSet } from '../ops/shards/set.js';
import type { AuditFilter } from '../db/port/index.js';
import {
  AUDIT_CSV_HEADER,
  auditShardLines,
  auditCsvLine,
  auditNdjsonLine,
  renderAudit,
} from '../render/audit.js';
import { writeOut } from '../render/terminal.js';

export interface AuditResult {
  count: number;
  entries: AuditEntry[];
  missingShards?: string[]; // a sharded source with --allow-partial: the shards left out
}

export default class Audit extends BaseCommand<typeof Audit> {
  static override readOnly = true;
  static override summary = 'List the audit log of manual changes: who, when, what, before, after, why.';
  static override description =
    'Reads taskrecon_audit, which compensate (and diff --enqueue) append to in the same transaction as each ' +
    'change; taskrecon never updates or deletes its rows. Newest entries by default, listed oldest first. ' +
    'With --task, the tasks of the chosen source (--source).';
  static override examples = [
    '<%= config.bin %> audit --task 1042',
    '<%= config.bin %> audit --operator alice@ops --since 24h --format csv > audit.csv',
    '<%= config.bin %> audit --action retry --action forget --limit 0 --format ndjson',
    '<%= config.bin %> audit --run 9b5aa488-beeb-4de7-8eaa-94a3f06006c9 --json',
  ];

  static override flags = {
    task: Flags.string({ summary: 'Only these task ids (of the chosen source).', multiple: true }),
    operator: Flags.string({ summary: 'Only changes by this operator (as recorded, e.g. alice@host).' }),
    action: Flags.string({
      summary: 'Only these actions (retry, mark-compensated, mark-failed, forget, …).',
      multiple: true,
    }),
    since: timeFlag({
      summary: 'Only entries at or after this time (ISO date-time, or a duration ago like 24h).',
    }),
    until: timeFlag({ summary: 'Only entries before this time.' }),
    run: Flags.string({
      summary: 'Only the changes of one run: its runId, or the start of it (the short id the table shows).',
    }),
    limit: countFlag(0)({
      summary: 'The newest N entries; 0 lists every entry (stream it with --format ndjson).',
      default: 50,
    }),
    format: Flags.string({ summary: 'Output format.', options: [...FORMATS] }),
    ...shardFlags,
  };

  async run(): Promise<AuditResult | undefined> {
    const format = this.jsonEnabled() ? 'json' : (this.flags.format ?? 'table');
    const choice = this.context.source();
    if (this.context.shards(choice)) return this.runShards(format);
    const db = await this.context.open(choice);
    const nowEpoch = await db.nowEpoch();
    const filter: AuditFilter = {
      // The table, not the source's name: the same table reached by --profile or by a named source has one history.
      taskTable: this.flags.task || this.flags.source ? choice.profile.table : undefined,
      taskIds: this.flags.task,
      operator: this.flags.operator,
      actions: this.flags.action,
      sinceEpoch: resolveTime(this.flags.since, nowEpoch),
      untilEpoch: resolveTime(this.flags.until, nowEpoch),
      runId: this.flags.run === undefined ? undefined : await resolveRunId(db, this.flags.run),
    };
    if (format === 'ndjson' || format === 'csv') {
      let buffer = format === 'csv' ? AUDIT_CSV_HEADER : '';
      let count = 0;
      const entries =
        this.flags.limit === 0
          ? streamAudit(db, filter)
          : (await latestAudit(db, { ...filter, limit: this.flags.limit }))[Symbol.iterator]();
      for await (const entry of entries) {
        buffer += format === 'csv' ? auditCsvLine(entry) : auditNdjsonLine(entry);
        if (++count % 256 === 0) {
          await writeOut(buffer);
          buffer = '';
        }
      }
      await writeOut(buffer);
      return undefined;
    }
    const entries: AuditEntry[] = [];
    if (this.flags.limit === 0) for await (const entry of streamAudit(db, filter)) entries.push(entry);
    else entries.push(...(await latestAudit(db, { ...filter, limit: this.flags.limit })));
    if (format === 'table')
      this.log(renderAudit(entries, this.flags.limit > 0 && entries.length === this.flags.limit));
    return { count: entries.length, entries };
  }

  /** A sharded source: every shard's audit rows merged, each naming its shard. */
  private async runShards(format: string): Promise<AuditResult | undefined> {
    const set = (await this.openSourceOrShards(this.flags)).set as ShardSet;
    const entries = await shardAudit(set, this.flags);
    const missing = set.missing.map((m) => m.name);
    if (format === 'ndjson' || format === 'csv')
      return void (await writeOut(auditShardLines(entries, format)));
    if (format === 'table')
      this.log(renderAudit(entries, this.flags.limit > 0 && entries.length === this.flags.limit));
    return { count: entries.length, entries, ...(missing.length ? { missingShards: missing } : {}) };
  }
}
