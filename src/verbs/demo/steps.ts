import type { Sandbox } from './sandbox.js';

/**
 * The guided tour of `taskrecon demo`: each step runs the real command on the sandbox and prints
 * what it shows and the command to run it yourself. A capability adds its step here.
 */
export interface TourStep {
  /** The command id; the step is left out when this build has no such command. */
  command: string;
  title: string;
  /** One or two sentences on what to look at in the output. */
  why: string;
  args(sandbox: Sandbox): string[];
  /** Exit codes that mean the step worked (findings exit 1 by design). */
  okExits?: number[];
}

export const TOUR_STEPS: TourStep[] = [
  {
    command: 'scan',
    title: 'Where are the tasks? scan',
    why: 'Counts by status and biz type, then the three lists an on-call engineer starts from: stuck processing rows (their worker died), overdue pending rows, and failed rows waiting for a human.',
    args: () => ['scan', '--limit', '5'],
  },
  {
    command: 'show',
    title: 'One failed task in full: show',
    why: 'Every field, the payload pretty-printed, the whole last error (control characters escaped) and the audit history of manual changes.',
    args: (sandbox) => ['show', String(sandbox.samples.failedId ?? 1)],
  },
  {
    command: 'doctor',
    title: 'Can taskrecon trust this table? doctor',
    why: 'Columns and types against the profile, the index scan and redrive read through (with the EXPLAIN of the real queries), time zones and clock skew, SKIP LOCKED, the last_error length and the audit table; exit 1 when a check fails.',
    args: () => ['doctor'],
  },
  {
    command: 'diff',
    title: 'Did the work really happen? diff',
    why: 'Reconciles each task with the business row it was meant to write (the rules in the sandbox config): missing effects (the task says success, no coupon: the worker crashed after reporting), duplicates (idempotency broken), orphans (a row no task explains) and unsettled ones (the effect is there, the task failed). Reads only.',
    args: () => ['diff', '--samples', '3'],
    okExits: [0, 1],
  },
  {
    command: 'diff',
    title: 'Send the missing ones back: diff --enqueue',
    why: 'The same reconciliation, and every task whose effect is missing goes back to pending, due now, through the state machine, each change with its audit row. On a terminal without --yes it asks first; --dry-run only counts.',
    args: () => [
      'diff',
      '--enqueue',
      '--reason',
      'effects lost when the worker crashed',
      '--yes',
      '--samples',
      '0',
    ],
    okExits: [0, 1],
  },
  {
    command: 'redrive',
    title: 'Run what is due: redrive',
    why: "The reconciliation job cron runs every minute (the classic task-table design): it claims stuck processing rows whose lease expired and due pending rows — the enqueued ones among them — in batches, runs each through its biz type's handler and records success, a retry with backoff (1s, 4s, 16s … 2h) or failed. The sandbox's handler writes the task's coupon, points or SMS row, once per event id, so a duplicate delivery adds nothing. Here four handlers run at once (--concurrency 4), each a short process of its own. Claims are fenced, so many hosts can run it at once; --dry-run only counts.",
    args: () => ['redrive', '--batch', '100', '--pause', '0ms', '--concurrency', '4'],
  },
  {
    command: 'diff',
    title: 'Did the redrive fix it? diff again',
    why: 'No task says success without its business row any more: 0 missing. Duplicates, orphans and unsettled tasks are still there: a redrive cannot take back a second coupon or settle a failed task whose effect did happen; those need a person.',
    args: () => ['diff', '--samples', '1'],
    okExits: [0, 1],
  },
  {
    command: 'compensate',
    title: 'Fix what failed, by hand: compensate',
    why: "The manual compensation entry of the classic task-table design: failed coupon tasks that timed out go back to pending, due now, each change a guarded write with its audit row in the same transaction. Before a retry each task's effect is looked up with the diff rules: a task whose coupon is already there (diff's unsettled) is not retried but listed and audited, unless --force-effect. On a terminal without --yes it opens a picker and asks first; --dry-run shows what would change.",
    args: () => [
      'compensate',
      '--action',
      'retry',
      '--biz-type',
      'coupon',
      '--error-like',
      'timed out',
      '--limit',
      '3',
      '--reason',
      'coupon service is back',
      '--yes',
    ],
    okExits: [0, 1],
  },
  {
    command: 'sweep',
    title: 'The hourly failure sweep: sweep --dry-run',
    why: "What cron runs every hour over the think-queue failed_jobs table: each failure under its job class's rule — SMS retried at once (20/s), warehouse jobs only inside 09:00-18:00 and never in the 01:00-05:00 maintenance (otherwise deferred, with the time they become eligible), schema errors held for a person; a job that fails again after its sweep is a second failure, alerted once. --dry-run only says what it would do.",
    args: () => ['sweep', '--since', '1h', '--dry-run'],
    okExits: [0, 1],
  },
  {
    command: 'audit',
    title: 'Who did what? audit',
    why: 'Every manual change with who, when, before, after and why, from the append-only taskrecon_audit table; `show ID` prints one task with its history.',
    args: () => ['audit', '--limit', '5'],
  },
  {
    command: 'report',
    title: 'Is the system healthy? report',
    why: 'What cron runs every few minutes: failure rate and latency over the last hour, backlog, stuck and failed tasks, each checked against its threshold. The exit code is the Nagios status (0 OK, 1 WARNING, 2 CRITICAL); --format prometheus and --notify feed dashboards and chat alerts.',
    args: () => ['report', '--window', '1h'],
    okExits: [0, 1, 2],
  },
  {
    command: 'drill',
    title: 'Would it hold up? drill',
    why: 'The fault drill of the classic task-table design, scripted: a dead target retried per the policy until failed and then compensated, a duplicate delivery, a 4xx, a worker that dies mid-task and a handler slower than its timeout — each checked step by step on a sandbox of its own, waits fast-forwarded. CI runs it before a release (exit 1 and --junit on failure).',
    args: () => ['drill'],
  },
];
