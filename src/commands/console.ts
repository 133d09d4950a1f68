import { Flags } from '@oclif/core';
import { hostname } from 'node:os';
import { BaseCommand } from '../base-command.js';
import { diffPages } from '../console/diff-pages.js';
import { queuePages } from '../console/queue-pages.js';
import { startConsole } from '../console/server.js';
import { usageError } from '../errors.js';
import { countFlag } from '../flags.js';
import { writeErr } from '../render/terminal.js';
import { defaultOperator } from '../ops/operator.js';
import { effectGate } from '../ops/effect/index.js';

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
    'one JSON line with the URL). Only 127.0.0.1 is served; --read-only refuses every change.';
  static override examples = [
    '<%= config.bin %> console --db mysql://ops@127.0.0.1:3306/shop --operator alice',
    '<%= config.bin %> console --port 8731 --read-only',
    '<%= config.bin %> console --db sqlite:taskrecon-demo.sqlite',
  ];

  static override flags = {
    port: countFlag(0)({ summary: 'Port on 127.0.0.1 (0 picks a free one).', default: 0 }),
    'read-only': Flags.boolean({ summary: 'Show everything, change nothing: every POST is refused.' }),
    operator: Flags.string({ summary: 'Who is acting, for the audit (default: OS user@host).' }),
  };

  async run(): Promise<void> {
    if (this.flags.port > 65_535) throw usageError(`--port ${this.flags.port}: a port is at most 65535`);
    const choice = this.context.source();
    const source = await this.openSource();
    const operator = this.flags.operator ?? defaultOperator();
    const readOnly = this.flags['read-only'];
    const running = await startConsole(
      {
        source,
        stuckAfterMs: choice.stuckAfterMs,
        operator,
        host: hostname(),
        readOnly,
        diff: diffPages(this.context, source),
        queues: queuePages(this.context),
        effects: (force) =>
          effectGate(
            source,
            {
              rules: this.context.config.rules,
              sourceDsn: this.context.dsn(choice),
              openExtra: (dsn) => this.context.openExtra(dsn),
            },
            force,
          ),
      },
      this.flags.port,
    );
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
        `console for source ${source.name} on ${running.address.address}:${result.port}${readOnly ? ' (read-only)' : ''}; Ctrl-C stops it`,
      );
    await stopped;
    await running.close();
    if (!this.jsonEnabled() && !quiet) writeErr('console stopped');
  }

  /** The result went out as the first line; nothing more on stdout. */
  override logJson(): void {}
}
