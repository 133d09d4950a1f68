import { Flags } from './core/oclif.js';
import { parseDuration } from './core/duration.js';
import { LOGICAL_STATUSES } from './core/task.js';
import { usageError } from './errors.js';

/** Flags every command takes: where the database is and which task table to read. */
export const connectionFlags = {
  db: Flags.string({
    summary: 'Database DSN: mysql://user:pass@host:3306/db or sqlite:PATH.',
    description: 'Overrides TASKRECON_DB and `db:` in the config file. The password is never printed.',
    helpGroup: 'CONNECTION',
  }),
  'password-file': Flags.string({
    summary: 'Read the database password from this file.',
    helpGroup: 'CONNECTION',
  }),
  config: Flags.string({
    summary: 'Config file (default: taskrecon.config.{yaml,yml,json} found upward).',
    helpGroup: 'CONNECTION',
  }),
  source: Flags.string({ summary: 'Which configured source (task table) to use.', helpGroup: 'CONNECTION' }),
  profile: Flags.string({
    summary: 'Describe the source inline by a built-in profile.',
    options: [
      'async-task',
      'job-retries',
      'laravel-failed-jobs',
      'laravel-jobs',
      'thinkphp-failed-jobs',
      'pg-boss',
      'solid-queue',
      'river',
      'oban',
    ],
    helpGroup: 'CONNECTION',
  }),
  table: Flags.string({
    summary: "Table name, when it is not the profile's default.",
    helpGroup: 'CONNECTION',
  }),
  'read-db': Flags.string({
    summary: 'Read replica DSN: read-only commands (scan, show, report, audit, doctor, diff) read from it.',
    description:
      'Overrides TASKRECON_READ_DB and `readDb:` in the config file. Writes always go to --db; doctor reports the replica lag.',
    helpGroup: 'CONNECTION',
  }),
  'max-statement-time': Flags.custom<number>({
    parse: async (input, _context, options) => parseDuration(input, `--${options.name}`),
  })({
    summary: 'Time limit of every read statement (default 30s; 0 for none).',
    description:
      'Overrides `maxStatementTime:` in the config file. A statement that runs longer is stopped and the command exits 3, naming it and the index that would help.',
    helpGroup: 'CONNECTION',
  }),
  quiet: Flags.boolean({
    char: 'q',
    summary: 'Print nothing when the run succeeded and found nothing that needs a person (for cron).',
    description:
      'Everything is held back and printed only when the command exits non-zero (findings, critical, could not run): a healthy cron job writes zero bytes, so cron mails only when it matters.',
  }),
  color: Flags.boolean({
    summary:
      'Colour output: --color forces it when piped, --no-color turns it off (default: on a terminal, unless NO_COLOR is set; FORCE_COLOR forces it).',
    allowNo: true,
  }),
  wide: Flags.boolean({
    summary:
      'Show every value in full: tables do not cut cells to the terminal width (piped output never cuts).',
  }),
};

/** A duration flag: `10m`, `30s`, `2h`; parsed to milliseconds, with an error that names the flag. */
export const durationFlag = Flags.custom<number>({
  parse: async (input, _context, options) => parseDuration(input, `--${options.name}`),
});

/** A whole number ≥ min, with an error that names the flag. */
export function countFlag(min: number) {
  return Flags.custom<number>({
    parse: async (input, _context, options) => {
      if (!/^-?\d+$/.test(input.trim()) || Number(input) < min) {
        throw usageError(`--${options.name}: '${input}' must be a whole number ≥ ${min}`);
      }
      return Number(input);
    },
  });
}

/** A point in time for --since/--until: an ISO date-time, or a duration ago (`2h` = two hours before now). */
export const timeFlag = Flags.custom<{ ago: number } | { epoch: number }>({
  parse: async (input, _context, options) => {
    if (/^\d+(?:\.\d+)?\s*(ms|s|m|min|h|d)$/.test(input.trim()))
      return { ago: parseDuration(input, `--${options.name}`) };
    const ms = Date.parse(input);
    if (Number.isNaN(ms)) {
      throw usageError(
        `--${options.name}: '${input}' is neither a date-time nor a duration`,
        'Use e.g. 2026-11-29T08:00:00Z, or 2h for two hours ago.',
      );
    }
    return { epoch: Math.floor(ms / 1000) };
  },
});

/** Resolves a --since/--until value against the run's database "now". */
export function resolveTime(
  value: { ago: number } | { epoch: number } | undefined,
  nowEpoch: number,
): number | undefined {
  if (!value) return undefined;
  return 'ago' in value ? nowEpoch - Math.round(value.ago / 1000) : value.epoch;
}

export const statusFlag = Flags.string({
  summary: 'Only tasks in this logical status.',
  options: [...LOGICAL_STATUSES],
  multiple: true,
});

/** `--error-like` of scan and compensate: the last error (a failed job's exception) contains this text. */
export const errorLikeFlag = Flags.string({
  summary: 'Only tasks whose last error contains this text (or matches this LIKE pattern with %).',
});

/** `--queue` of scan and compensate, on tables with a queue column (failed jobs, Laravel's jobs). */
export const queueFlag = Flags.string({ summary: 'Only jobs of these queues.', multiple: true });

export const FORMATS = ['table', 'json', 'ndjson', 'csv'] as const;
export type Format = (typeof FORMATS)[number];

/** The flags of a command that works on every shard of a sharded source. */
export const shardFlags = {
  'shard-concurrency': countFlag(1)({
    summary: 'On a sharded source: how many shards are read or written at once.',
    default: 4,
  }),
  'allow-partial': Flags.boolean({
    summary: 'On a sharded source: go on without the shards that cannot be reached, naming them.',
    description:
      'Without it, a shard that cannot be reached stops the run (exit 3) naming it. With it, the output names the missing shards and sums the rest exactly.',
  }),
};
