import { Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { auditDdl, notifyDdl, queueSnapshotDdl, taskTableDdl, type DdlProfile } from '../db/ddl.js';
import { mysqlDialect, sqliteDialect } from '../db/dialect.js';
import { parseDsn } from '../db/dsn.js';
import { usageError } from '../errors.js';

export interface InitResult {
  db: string | null;
  printed: boolean;
  statements: string[];
  created: string[];
}

export default class Init extends BaseCommand<typeof Init> {
  static override summary =
    "Create the reference task table and taskrecon's audit table, or print their DDL.";
  static override description =
    'Creates async_task (seed 000) or job_retries (seed 002) with the indexes scan and redrive need, and ' +
    'taskrecon_audit. Tables that exist are left as they are. Laravel and think-queue tables come from their own migrations.';
  static override examples = [
    '<%= config.bin %> init --db mysql://root@127.0.0.1:3306/shop',
    '<%= config.bin %> init --print --profile job-retries > job_retries.sql',
    '<%= config.bin %> init --db sqlite:tasks.sqlite --table my_tasks',
  ];

  static override flags = {
    print: Flags.boolean({ summary: 'Print the DDL for a DBA instead of running it.' }),
    dialect: Flags.string({
      summary: 'With --print and no --db: the SQL dialect.',
      options: ['mysql', 'sqlite'],
      default: 'mysql',
    }),
    'audit-only': Flags.boolean({ summary: "Only create taskrecon's own tables." }),
  };

  async run(): Promise<InitResult> {
    const choice = this.context.source();
    // A config with brokers and no task sources: only taskrecon's own tables (audit, snapshots).
    const ownOnly =
      this.flags['audit-only'] ||
      (!this.flags.profile &&
        !this.flags.table &&
        !this.context.config.sources &&
        !!this.context.config.brokers);
    const profile = choice.profile.name;
    if (!ownOnly && profile !== 'async-task' && profile !== 'job-retries') {
      throw usageError(
        `init creates async-task and job-retries tables, not ${profile}`,
        "Laravel's and think-queue's tables come from their migrations; use --audit-only to create taskrecon's own tables next to them.",
      );
    }
    const dsnText = this.flags.db || process.env.TASKRECON_DB || choice.config.db || this.context.config.db;
    const dialect =
      this.flags.print && !dsnText
        ? this.flags.dialect === 'sqlite'
          ? sqliteDialect
          : mysqlDialect
        : undefined;
    const targetDialect =
      dialect ?? (parseDsn(this.context.dsn(choice)).kind === 'sqlite' ? sqliteDialect : mysqlDialect);
    const statements = [
      ...(ownOnly ? [] : taskTableDdl(targetDialect, profile as DdlProfile, choice.profile.table)),
      ...auditDdl(targetDialect),
      ...notifyDdl(targetDialect),
      ...queueSnapshotDdl(targetDialect),
    ];
    if (this.flags.print) {
      this.log(statements.map((s) => `${s};`).join('\n\n'));
      return { db: null, printed: true, statements, created: [] };
    }
    const db = await this.context.open(choice, { create: true });
    const tables = [
      ...(ownOnly ? [] : [choice.profile.table]),
      'taskrecon_audit',
      'taskrecon_notify',
      'taskrecon_queue_snapshot',
    ];
    const existing = new Set<string>();
    for (const table of tables) if (await db.columns(table)) existing.add(table);
    for (const statement of statements) await db.execute(statement);
    const created = tables.filter((t) => !existing.has(t));
    for (const table of tables) this.note(existing.has(table) ? `exists   ${table}` : `created  ${table}`);
    return { db: db.display, printed: false, statements, created };
  }
}
