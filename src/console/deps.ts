import type { BoundSource } from '../db/bind-source.js';
import type { RuleResult } from '../verbs/diff/index.js';
import type { QueuePages } from './queue-pages.js';
import type { VerdictSource } from './verdict-source.js';

/** Runs one diff rule for the diff page (the command wires it to the configured rules). */
export interface DiffPages {
  names: readonly string[];
  /** Why there is nothing to run (no rules configured), when there is not. */
  problem?: string;
  run(name: string): Promise<RuleResult>;
}

/** What the console serves and acts on. */
export interface ConsoleDeps {
  source: BoundSource;
  stuckAfterMs: number;
  /** Who acts, for the audit. */
  operator: string;
  /** This machine's name, for the audit. */
  host: string;
  readOnly: boolean;
  diff?: DiffPages;
  /** The brokers' queues, when brokers are configured. */
  queues?: QueuePages;
  /** The overview's verdict, as `report` computes it. */
  verdict?: VerdictSource;
}
