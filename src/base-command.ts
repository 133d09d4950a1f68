import { Command, ExitError } from './core/oclif.js';
import type { InferredArgs, InferredFlags } from '@oclif/core/interfaces';
import { closest } from './config/suggest.js';
import { prepareConfigReader } from './config/find.js';
import { Context } from './context.js';
import { timeFilterWarnings, type TimeValue } from './core/filter-warnings.js';
import { bindSource, type BoundSource } from './db/bind-source.js';
import { maskDsnText } from './db/dsn.js';
import { replicaLag, replicaNote, type ReplicaLag } from './db/replica.js';
import type { Db } from './db/types.js';
import { configError, ExitCode, TaskreconError, usageError, type ExitCodeValue } from './errors.js';
import { profileFor } from './db/profiles/registry.js';
import { DEFAULT_SHARD_CONCURRENCY, openShardSet, type OpenShard, type ShardSet } from './ops/shards/set.js';
import { driftLines } from './ops/shards/drift.js';
import { connectionFlags } from './flags.js';
import { setPasteConnection, withPasteConnection } from './render/paste.js';
import { holdOutput, type QuietGate } from './render/quiet.js';
import { chalk, configureColor, setWideOutput, writeErr } from './render/terminal.js';

export type Flags<T extends typeof Command> = InferredFlags<(typeof BaseCommand)['baseFlags'] & T['flags']>;
export type Args<T extends typeof Command> = InferredArgs<T['args']>;

/**
 * What every command shares: --json, the connection flags, one Context that opens and
 * closes the database, and errors mapped to the documented exit codes with the password masked.
 */
export abstract class BaseCommand<T extends typeof Command> extends Command {
  static override enableJsonFlag = true;
  static override baseFlags = connectionFlags;

  protected flags!: Flags<T>;
  protected args!: Args<T>;
  protected context!: Context;

  override async init(): Promise<void> {
    await super.init();
    const { args, flags } = await this.parse({
      flags: this.ctor.flags,
      baseFlags: (super.ctor as typeof BaseCommand).baseFlags,
      enableJsonFlag: this.ctor.enableJsonFlag,
      args: this.ctor.args,
      strict: this.ctor.strict,
    });
    this.flags = flags as Flags<T>;
    this.args = args as Args<T>;
    configureColor(this.flags.color);
    setWideOutput(this.flags.wide ?? false);
    setPasteConnection(this.flags as Record<string, unknown>);
    // A command with a --quiet of its own (sweep) decides itself what a person needs to see.
    if ((this.flags as { quiet?: boolean }).quiet && !('quiet' in (this.ctor.flags ?? {})))
      this.quietGate = holdOutput();
    // The YAML parser and the config schema are imported only when there is a config file to read.
    await prepareConfigReader(this.flags.config, process.cwd());
    this.context = new Context(this.flags);
    // Only --since/--until given as a time (a duration ago or an instant); sweep's --since is a period.
    const time = (v: unknown) => (v !== null && typeof v === 'object' ? (v as TimeValue) : undefined);
    const window = this.flags as { since?: unknown; until?: unknown };
    const nowEpoch = Math.floor(Date.now() / 1000);
    for (const warning of timeFilterWarnings(time(window.since), time(window.until), nowEpoch))
      this.warnLine(warning);
    this.context.readOnly = this.readsOnly();
  }

  /** Read-only commands (scan, show, report, audit, doctor) read from `readDb` when one is configured. */
  static readOnly = false;

  /** Whether this run only reads (a command whose flags decide it overrides this). */
  protected readsOnly(): boolean {
    return (this.ctor as unknown as typeof BaseCommand).readOnly;
  }

  /** The lag of the read replica this run reads from, once opened (undefined: it reads the primary). */
  protected replica: ReplicaLag | undefined;

  /** After opening the replica: its lag, and a note that the figures are that old. */
  protected async noteReplica(db: Db): Promise<void> {
    if (!this.context.openedReplica) return;
    this.replica = await replicaLag(db);
    this.warnLine(replicaNote(db.display, this.replica));
  }

  /** The JSON of a run that read from a replica says how old its figures may be. */
  protected override toSuccessJson(result: unknown): unknown {
    if (!this.replica || result === null || typeof result !== 'object' || Array.isArray(result))
      return result;
    return { ...result, readReplicaLagSeconds: this.replica.lagSeconds };
  }

  /**
   * Whether `--format json` is `--json`: the result (or the error) as JSON on stdout, no notes on
   * stderr. A command that renders its JSON itself (report, which may write it to --output) says no.
   */
  static formatJsonIsJson = true;

  override jsonEnabled(): boolean {
    const flags = this.flags as { format?: unknown } | undefined;
    const formatJson =
      (this.ctor as unknown as typeof BaseCommand).formatJsonIsJson && flags?.format === 'json';
    return super.jsonEnabled() || formatJson;
  }

  /** Opens the chosen source and checks it against the live schema (exit 3 on a mismatch). */
  protected async openSource(options: { poolSize?: number } = {}): Promise<BoundSource> {
    const choice = this.context.source();
    if (this.context.shards(choice))
      throw usageError(
        `source '${choice.name}' is sharded, and ${this.id ?? 'this command'} works on one table at a time`,
        'scan, show, report, doctor, redrive, compensate, sweep, audit, diff and console work on every shard; for this command name one shard with --db DSN --table TABLE and no --source.',
      );
    const db = await this.context.open(choice, options);
    for (const warning of db.warnings) this.warnLine(warning);
    await this.noteReplica(db);
    return bindSource(db, choice.profile, choice.name);
  }

  /**
   * The chosen source, or, when it is sharded, every shard of it opened and bound (each on its own
   * server), `--shard-concurrency` at a time. Columns that differ between shards stop the run
   * (exit 3) unless `drift: 'report'` (doctor, which reports them). For a sharded source `source`
   * is its first shard.
   */
  protected async openSourceOrShards(
    shardFlags: { 'shard-concurrency'?: number; 'allow-partial'?: boolean },
    options: { poolSize?: number; drift?: 'stop' | 'report'; only?: (names: string[]) => string } = {},
  ): Promise<{ source: BoundSource; set?: ShardSet }> {
    const choice = this.context.source();
    const all = this.context.shards(choice);
    if (!all) return { source: await this.openSource(options) };
    const only = options.only?.(all.map((s) => s.name));
    const specs = only === undefined ? all : all.filter((s) => s.name === only);
    const set = await openShardSet(
      choice.name,
      specs,
      async (spec) => {
        const db = await this.context.open(choice, { ...options, dsn: spec.db });
        for (const warning of db.warnings) this.warnLine(`shard ${spec.name}: ${warning}`);
        const profile = profileFor({ ...choice.config, table: spec.table }, `sources.${choice.name}`);
        return bindSource(db, profile, choice.name);
      },
      {
        concurrency: shardFlags['shard-concurrency'] ?? DEFAULT_SHARD_CONCURRENCY,
        allowPartial: shardFlags['allow-partial'] ?? false,
      },
    );
    for (const m of set.missing) this.warnLine(`shard ${m.name} left out: ${m.error}`);
    if (set.drift.length > 0 && options.drift !== 'report')
      throw configError(
        `the shards of source '${choice.name}' have different schemas: ${driftLines(set.drift, set.shards[0]?.spec.name ?? '').join('; ')}`,
        'Migrate every shard to one schema (taskrecon doctor lists the differences), then run again.',
      );
    // The first shard stands for the source where one table is needed (taskrecon's own tables).
    return { source: (set.shards[0] as OpenShard).source, set };
  }

  /** A message for the operator on stderr (never on stdout, which carries data). */
  protected note(message: string): void {
    if (!this.jsonEnabled()) writeErr(withPasteConnection(message));
  }

  protected warnLine(message: string): void {
    writeErr(`${chalk.yellow('warning')} ${withPasteConnection(message)}`);
  }

  /** Sets the exit code a result calls for (findings 1, critical 2) without throwing. */
  protected setExit(code: ExitCodeValue): void {
    if (code > (Number(process.exitCode) || 0)) process.exitCode = code;
  }

  /** Under --quiet: output held until the run ends, then printed only when the exit code is not 0. */
  protected quietGate: QuietGate | undefined;

  /** A log line the user asked for explicitly (e.g. `--log-format json`): on stderr, even under --quiet. */
  protected logLine(line: string): void {
    if (this.quietGate) this.quietGate.throughErr(line);
    else writeErr(line);
  }

  override logJson(json: unknown): void {
    // The success JSON comes after finally(): a quiet run that needed nobody prints none.
    if (this.quietGate?.outcome === 'silent') return;
    process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
  }

  override async catch(error: Error & { exitCode?: number; oclif?: { exit?: number } }): Promise<void> {
    if (error instanceof ExitError) throw error;
    const described = describeError(error, this.flagNames());
    process.exitCode = described.exit;
    if (this.jsonEnabled()) {
      this.logJson({
        error: {
          code: described.code,
          message: described.message,
          hint: described.hint ? withPasteConnection(described.hint) : null,
          exit: described.exit,
        },
      });
      return;
    }
    if ((this.flags as { format?: unknown } | undefined)?.format === 'ndjson') {
      // A stream cut short ends with the error, so that no reader takes the lines before it as complete.
      process.stdout.write(
        `${JSON.stringify({ error: { code: described.code, message: described.message, exit: described.exit } })}\n`,
      );
    }
    if (described.code === 'CANCELLED') {
      writeErr(described.message);
      return;
    }
    writeErr(`${chalk.red('Error:')} ${described.message}`);
    if (described.hint) writeErr(`${chalk.dim('Hint:')} ${withPasteConnection(described.hint)}`);
    if (process.env.DEBUG && error.stack) writeErr(maskDsnText(error.stack));
  }

  /** Every flag this command takes, for "did you mean" on a mistyped one. */
  private flagNames(): string[] {
    const ctor = this.ctor as unknown as typeof BaseCommand;
    return Object.keys({ ...ctor.baseFlags, ...(ctor.flags ?? {}) });
  }

  override async finally(error: Error | undefined): Promise<void> {
    this.quietGate?.release(error !== undefined || (Number(process.exitCode) || 0) !== 0);
    await this.context?.close();
    await super.finally(error);
  }
}

interface DescribedError {
  code: string;
  message: string;
  hint: string | undefined;
  exit: ExitCodeValue | typeof CANCELLED_EXIT;
}

/** Ctrl-C at a prompt: the shell's exit for SIGINT (128 + 2); nothing was changed. */
export const CANCELLED_EXIT = 130;

/**
 * oclif rewrites the message of an error thrown by a flag's parser in place, to
 * `Parsing --flag \n\t<message>\nSee more help with --help`: keep only the message, which names the flag.
 */
function withoutParseFrame(message: string): string {
  const framed = /^Parsing --\S+ ?\n\t([\s\S]*?)\nSee more help with --help$/.exec(message);
  return framed ? (framed[1] as string) : message;
}

/** Every error becomes a code, a masked message, a hint and an exit code; nothing reaches the user as a stack trace. */
export function describeError(error: unknown, flagNames: readonly string[] = []): DescribedError {
  if (error instanceof TaskreconError) {
    return {
      code: error.code,
      message: maskDsnText(withoutParseFrame(error.message)),
      hint: error.hint && maskDsnText(error.hint),
      exit: error.exit,
    };
  }
  const e = error as Error & { oclif?: { exit?: number } };
  if (e?.name === 'ExitPromptError' || e?.name === 'AbortPromptError') {
    // The operator pressed Ctrl-C at a prompt: every change waits for the confirmation, so none was made.
    return {
      code: 'CANCELLED',
      message: 'cancelled, nothing changed',
      hint: undefined,
      exit: CANCELLED_EXIT,
    };
  }
  if (e?.oclif) {
    // oclif's parse errors (unknown flag, missing argument, bad option): usage, exit 3.
    const lines = maskDsnText(e.message)
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !/^See more help/.test(l));
    const cause = (e as { cause?: unknown }).cause;
    const hint = cause instanceof TaskreconError ? cause.hint : undefined;
    return {
      code: 'USAGE',
      message: lines.join(' ') || 'usage error',
      hint: hint ?? flagSuggestion(e.message, flagNames) ?? 'See --help.',
      exit: ExitCode.couldNotRun,
    };
  }
  return {
    code: 'INTERNAL',
    message: maskDsnText(e?.message ?? String(error)),
    hint: 'This looks like a bug in taskrecon; run again with DEBUG=1 for the stack trace.',
    exit: ExitCode.couldNotRun,
  };
}

/** "Did you mean --limit?" for each nonexistent flag of an oclif parse error that is close to a real one. */
function flagSuggestion(message: string, flagNames: readonly string[]): string | undefined {
  const typed = /Nonexistent flags?: (.+)/.exec(message)?.[1];
  if (!typed) return undefined;
  const guesses = typed
    .split(/,\s*/)
    .map((flag) => flag.trim().replace(/^-+/, '').split('=')[0] ?? '')
    .map((name) => closest(name, flagNames))
    .filter((g): g is string => g !== undefined);
  return guesses.length ? `Did you mean ${guesses.map((g) => `--${g}`).join(', ')}? See --help.` : undefined;
}
