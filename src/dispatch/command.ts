import { spawn } from 'node:child_process';
import { classifyError, classifyExit, describeFailure } from '../core/classify.js';
import type { Dispatcher, DispatchContext, DispatchResult, DispatchTask } from './types.js';

export interface CommandDispatcherOptions {
  argv: string[];
  timeoutMs: number;
  cwd?: string;
}

/** How much of a failing command's output goes into last_error (its last lines matter most). */
const OUTPUT_TAIL_CHARS = 300;
/** A command still running this long after SIGTERM gets SIGKILL. */
const KILL_GRACE_MS = 2000;

/** Fills `{id}`, `{eventId}`, `{bizType}`, `{bizId}` in one argv element (unknown placeholders stay as written). */
export function fillTemplate(arg: string, task: DispatchTask): string {
  const values: Record<string, string> = {
    id: String(task.id),
    eventId: task.eventId ?? '',
    bizType: task.bizType ?? '',
    bizId: task.bizId ?? '',
    attempt: String(task.attempt),
  };
  return arg.replace(/\{(id|eventId|bizType|bizId|attempt)\}/g, (_m, key: string) => values[key] as string);
}

/**
 * `command`: runs an argv template (no shell: each element is one argument, so a biz id cannot
 * inject anything) with the payload on stdin. Exit 0 succeeds, 75 (EX_TEMPFAIL) is retryable,
 * anything else is permanent — unless the output names a lock wait or deadlock (src/core/classify.ts).
 * A command past its timeout is terminated and the attempt is retryable.
 */
export class CommandDispatcher implements Dispatcher {
  readonly kind = 'command';

  readonly timeoutMs: number;

  constructor(private readonly options: CommandDispatcherOptions) {
    this.timeoutMs = options.timeoutMs;
  }

  dispatch(task: DispatchTask, context: DispatchContext): Promise<DispatchResult> {
    const [program, ...args] = this.options.argv.map((a) => fillTemplate(a, task));
    return new Promise((resolve) => {
      let output = '';
      let timedOut = false;
      let settled = false;
      const finish = (result: DispatchResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        context.signal.removeEventListener('abort', onAbort);
        resolve(result);
      };
      const child = spawn(program as string, args, {
        cwd: this.options.cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        env: {
          ...process.env,
          TASKRECON_TASK_ID: String(task.id),
          TASKRECON_EVENT_ID: task.eventId ?? '',
          TASKRECON_ATTEMPT: String(task.attempt),
        },
      });
      const keep = (chunk: Buffer) => {
        output = (output + chunk.toString('utf8')).slice(-4 * OUTPUT_TAIL_CHARS);
      };
      child.stdout.on('data', keep);
      child.stderr.on('data', keep);
      const stop = () => {
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS).unref();
      };
      const timer = setTimeout(() => {
        timedOut = true;
        stop();
      }, this.options.timeoutMs);
      const onAbort = () => stop();
      context.signal.addEventListener('abort', onAbort);
      child.on('error', (error) =>
        finish({ outcome: classifyError(error), error: `cannot run ${program}: ${describeFailure(error)}` }),
      );
      child.on('close', (code, signal) => {
        const tail = output.replace(/\s+/g, ' ').trim().slice(-OUTPUT_TAIL_CHARS);
        if (timedOut)
          return finish({
            outcome: 'retryable',
            error: `timeout after ${this.options.timeoutMs} ms: ${program}`,
          });
        if (context.signal.aborted)
          return finish({ outcome: 'retryable', error: 'stopped before the command finished' });
        const outcome = classifyExit(code, output);
        if (outcome === 'success') return finish({ outcome });
        const how = code === null ? `killed by ${signal}` : `exit ${code}`;
        finish({ outcome, error: `${program} ${how}${tail ? `: ${tail}` : ''}` });
      });
      // A command that does not read stdin closes it early: that is not a failure.
      child.stdin.on('error', () => undefined);
      child.stdin.end(task.payloadText ?? '');
    });
  }
}
