import { dirname } from 'node:path';
import { readConfig } from './config/find.js';
import type { LoadedConfig } from './config/load.js';
import type { SourceConfig, TaskreconConfig } from './config/schema.js';
import { closest } from './config/suggest.js';
import { parseDuration } from './core/duration.js';
import { configError, usageError } from './errors.js';
import { connect } from './db/connect.js';
import { parseDsn, resolveFileDsn } from './db/dsn.js';
import { expandShards, type ShardSpec } from './core/shards.js';
import { profileFor } from './db/profiles/registry.js';
import type { Profile } from './db/profiles/types.js';
import type { Db } from './db/types.js';

/** What every command may say about where to look: the flags of `connectionFlags`, parsed. */
export interface ConnectionInput {
  db?: string;
  'password-file'?: string;
  config?: string;
  source?: string;
  profile?: string;
  table?: string;
  'read-db'?: string;
  'max-statement-time'?: number;
}

export interface SourceChoice {
  name: string;
  config: SourceConfig;
  profile: Profile;
  stuckAfterMs: number;
}

export const NO_DSN_HINT =
  'Pass --db mysql://user:pass@host:3306/db (or sqlite:PATH), set TASKRECON_DB, or put `db:` in taskrecon.config.yaml. ' +
  'To try taskrecon without a server, run `taskrecon demo`: it builds a SQLite sandbox and prints commands to run on it.';

/**
 * Resolves flags > environment > config file > defaults into a source and a connection.
 * Commands get one through BaseCommand; tests and the demo may build one directly.
 */
export class Context {
  private loaded: LoadedConfig | undefined;
  private readonly opened: Db[] = [];
  /** Set by read-only commands: open() then reads from the replica when one is configured. */
  readOnly = false;
  /** Whether the last open() went to the read replica. */
  openedReplica = false;

  constructor(
    readonly input: ConnectionInput,
    readonly env: NodeJS.ProcessEnv = process.env,
    readonly cwd: string = process.cwd(),
  ) {}

  get config(): TaskreconConfig {
    this.loaded ??= readConfig(this.input.config, this.cwd);
    return this.loaded.config;
  }

  get configPath(): string | undefined {
    void this.config;
    return this.loaded?.path;
  }

  /** The source to work on: --profile inline, else --source, else the only or the default configured one, else async-task. */
  source(): SourceChoice {
    const sources = this.config.sources ?? {};
    let name: string;
    let config: SourceConfig;
    if (this.input.profile) {
      name = this.input.source ?? this.input.profile;
      config = { ...(sources[name] ?? {}), profile: this.input.profile };
    } else if (this.input.source) {
      const found = sources[this.input.source];
      if (!found) {
        const names = Object.keys(sources);
        const guess = closest(this.input.source, names);
        throw usageError(
          `unknown source '${this.input.source}'`,
          names.length
            ? `${guess ? `Did you mean '${guess}'? ` : ''}Configured sources: ${names.join(', ')}.`
            : 'No sources are configured: add `sources:` to taskrecon.config.yaml, or describe one with --profile.',
        );
      }
      name = this.input.source;
      config = found;
    } else {
      const entries = Object.entries(sources);
      const defaults = entries.filter(([, s]) => s.default);
      if (defaults.length > 1) {
        throw configError(
          `sources ${defaults.map(([n]) => n).join(', ')} are all marked default`,
          'Mark one source `default: true`.',
        );
      }
      const picked = defaults[0] ?? (entries.length === 1 ? entries[0] : undefined);
      if (!picked && entries.length > 1) {
        throw usageError(
          `${entries.length} sources are configured and none is the default`,
          `Pick one with --source (${entries.map(([n]) => n).join(', ')}), or mark one \`default: true\`.`,
        );
      }
      [name, config] = picked ?? ['async-task', { profile: 'async-task' }];
    }
    if (this.input.table) config = { ...config, table: this.input.table };
    const profile = profileFor(config, `sources.${name}`);
    const stuckAfterMs =
      config.stuckAfter === undefined
        ? profile.defaultStuckAfterMs
        : parseDuration(config.stuckAfter, `sources.${name}.stuckAfter`);
    return { name, config, profile, stuckAfterMs };
  }

  /** The DSN: --db, else TASKRECON_DB, else the source's `db`, else the config's `db`. */
  dsn(source?: SourceChoice): string {
    const fromInput = this.input.db || this.env.TASKRECON_DB;
    if (fromInput) return fromInput;
    const fromConfig = source?.config.db || this.config.db;
    if (!fromConfig && source?.config.shards)
      throw usageError(
        `source '${source.name}' is sharded, and this command reads one database`,
        "Each shard's audit and taskrecon tables are in that shard's database: pass --db with one shard's DSN, or set `db:` at the top of the config for taskrecon's own tables.",
      );
    if (!fromConfig) throw usageError('no database given', NO_DSN_HINT);
    // A relative file path in a config file is relative to that file, wherever the command runs.
    const path = this.configPath;
    return path ? resolveFileDsn(fromConfig, dirname(path)) : fromConfig;
  }

  /**
   * The shards of a sharded source (`shards:` in its config), in config order; undefined for a
   * source of one table. A DSN in a config file is resolved as `db:` is.
   */
  shards(source: SourceChoice): ShardSpec[] | undefined {
    const entries = source.config.shards;
    if (!entries) return undefined;
    const where = `sources.${source.name}`;
    if (source.config.table !== undefined || source.config.db !== undefined)
      throw configError(
        `${where} has both shards and ${source.config.table !== undefined ? 'table' : 'db'}`,
        'A sharded source names its tables and servers in `shards:` only: remove `table:` and `db:`.',
      );
    if (this.input.db || this.input.table)
      throw usageError(
        `source '${source.name}' is sharded: --db and --table would pick one table of it`,
        `Drop --db/--table to work on every shard, or name one shard's table and server without --source.`,
      );
    const path = this.configPath;
    const resolved = entries.map((e) => ({ ...e, db: path ? resolveFileDsn(e.db, dirname(path)) : e.db }));
    return expandShards(
      resolved,
      (dsn) => {
        const parsed = parseDsn(dsn);
        return 'database' in parsed ? parsed.database : (parsed.file.split('/').pop() ?? parsed.file);
      },
      where,
    );
  }

  /** The read replica's DSN: --read-db, else TASKRECON_READ_DB, else config `readDb`; undefined when none. */
  readDsn(): string | undefined {
    return this.input['read-db'] || this.env.TASKRECON_READ_DB || this.config.readDb || undefined;
  }

  /** The time limit of every read statement: --max-statement-time, else config `maxStatementTime`, else the default. */
  maxStatementTimeMs(): number | undefined {
    if (this.input['max-statement-time'] !== undefined) return this.input['max-statement-time'];
    const configured = this.config.maxStatementTime;
    return configured === undefined ? undefined : parseDuration(configured, 'maxStatementTime');
  }

  /**
   * Opens the database; closed by close(). A read-only command reads from the replica when one is
   * configured, unless `write` asks for the primary.
   */
  async open(
    source?: SourceChoice,
    options: { poolSize?: number; create?: boolean; write?: boolean; dsn?: string } = {},
  ): Promise<Db> {
    const timeout =
      this.config.connectTimeout === undefined
        ? undefined
        : parseDuration(this.config.connectTimeout, 'connectTimeout');
    const replica = this.readOnly && !options.write && !options.dsn ? this.readDsn() : undefined;
    this.openedReplica = replica !== undefined;
    const db = await connect(replica ?? options.dsn ?? this.dsn(source), {
      maxStatementTimeMs: this.maxStatementTimeMs(),
      passwordFile: this.input['password-file'] ?? this.config.passwordFile,
      appTimeZone: this.env.TASKRECON_APP_TIME_ZONE ?? this.config.appTimeZone,
      connectTimeoutMs: timeout,
      poolSize: options.poolSize,
      create: options.create,
    });
    this.opened.push(db);
    return db;
  }

  /**
   * Opens another database (a business table that lives elsewhere: diff, doctor, drill), pinned
   * to the app's time zone as the source is; closed by close(). The one way to open an extra
   * connection.
   */
  async openExtra(dsn: string): Promise<Db> {
    const db = await connect(dsn, {
      appTimeZone: this.env.TASKRECON_APP_TIME_ZONE ?? this.config.appTimeZone,
    });
    this.opened.push(db);
    return db;
  }

  async close(): Promise<void> {
    const dbs = this.opened.splice(0);
    await Promise.allSettled(dbs.map((db) => db.close()));
  }
}
