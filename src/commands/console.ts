import { Flags } from '../core/oclif.js';
import { hostname } from 'node:os';
import { BaseCommand } from '../base-command.js';
import { requestLink } from '../console/control/client.js';
import { startConsole } from '../console/server.js';
import { wireConsole } from '../console/wiring.js';
import { usageError } from '../errors.js';
import { countFlag, shardFlags } from '../flags.js';
import { writeErr } from '../render/terminal.js';
import { defaultOperator } from '../ops/operator.js';

export interface ConsoleResult {
  url: string;
  port: number;
  readOnly: boolean;
  operator: string;
}

export default class Console extends BaseCommand<typeof Console> {
  static override summary = 'Serve the manual-compensation console on 127.0.0.1 until Ctrl-C.';
  static override description =
    'A local web page over the task table: overview and trends, failed/stuck/due lists with filters (error text and ' +
    'payload included), task detail with its audit history, the audit log and diff findings; Retry, Mark compensated, ' +
    'Mark failed and Forget on one task or on a frozen preview of a filtered list, each with a required reason, ' +
    'through the state machine and audited. The first stdout line is the URL with a one-time token (with --json: ' +
    'one JSON line with the URL); `console --link` prints a fresh one-time link of the running console for another ' +
    'browser. Only 127.0.0.1 is served; --read-only refuses every change. On a sharded source the overview adds ' +
    'every shard and lists each one; every other page, and every change, is per shard under /shards/NAME/.';
  static override examples = [
    '<%= config.bin %> console --db mysql://ops@127.0.0.1:3306/shop --operator alice',
    '<%= config.bin %> console --port 8731 --read-only',
    '<%= config.bin %> console --db sqlite:taskrecon-demo.sqlite',
    '<%= config.bin %> console --link',
  ];

  static override flags = {
    port: countFlag(0)({ summary: 'Port on 127.0.0.1 (0 picks a free one).', default: 0 }),
    'read-only': Flags.boolean({ summary: 'Show everything, change nothing: every POST is refused.' }),
    link: Flags.boolean({
      summary: 'Print a fresh one-time sign-in link of the console already running (as this user) and exit.',
      description:
        'Asks the running console over its control socket (a Unix socket only its owner can reach) for a new ' +
        'one-time link, valid 10 minutes, for one more browser; browsers already signed in stay signed in. ' +
        'With several consoles running, --port says which.',
      exclusive: ['read-only', 'operator', 'allow-partial'],
    }),
    ...shardFlags,
    operator: Flags.string({
      summary:
        'Who is acting, for the audit (default: TASKRECON_OPERATOR, else config operator, else OS user@host).',
    }),
  };

  async run(): Promise<void> {
    if (this.flags.port > 65_535) throw usageError(`--port ${this.flags.port}: a port is at most 65535`);
    if (this.flags.link) return this.printLink();
    const choice = this.context.source();
    const opened = await this.openSourceOrShards(this.flags);
    const operator = this.flags.operator ?? defaultOperator(this.context.env, this.context.config.operator);
    const readOnly = this.flags['read-only'];
    const common = { stuckAfterMs: choice.stuckAfterMs, operator, host: hostname(), readOnly };
    const deps = wireConsole(this.context, opened, common);
    const running = await startConsole(deps, this.flags.port);
    if (running.controlProblem)
      this.warnLine(`\`console --link\` cannot reach this console: ${running.controlProblem}`);
    // Listen for Ctrl-C before the URL goes out: whoever reads the URL may stop the console at once.
    const stopped = new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    // The URL is what the person asked for, even under --quiet (which then holds back the notes only).
    const quiet = this.quietGate !== undefined;
    this.quietGate?.release(false);
    const result: ConsoleResult = { url: running.url, port: running.address.port, readOnly, operator };
    process.stdout.write(this.jsonEnabled() ? `${JSON.stringify(result)}\n` : `${running.url}\n`);
    if (!quiet)
      this.note(
        `console for source ${opened.source.name} on ${running.address.address}:${result.port}${readOnly ? ' (read-only)' : ''}; ` +
          '`taskrecon console --link` prints a link for another browser; Ctrl-C stops it',
      );
    await stopped;
    await running.close();
    if (!this.jsonEnabled() && !quiet) writeErr('console stopped');
  }

  /** --link: one more one-time link from the running console, as its first line would be. */
  private async printLink(): Promise<void> {
    const answer = await requestLink(this.flags.port);
    this.quietGate?.release(false);
    process.stdout.write(this.jsonEnabled() ? `${JSON.stringify(answer)}\n` : `${answer.url}\n`);
  }

  /** The result went out as the first line; only an error's JSON follows (run returns nothing). */
  override logJson(json: unknown): void {
    if (json !== undefined) super.logJson(json);
  }
}
