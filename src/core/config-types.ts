/**
 * The config sections the pure core reads, as plain types: the zod schemas in config/ produce
 * values of these shapes, so core/ needs nothing from the layers above it.
 */
import type { LogicalStatus } from './task.js';

/** A duration as written in the config: `10m`, `2h`, or seconds. */
export type DurationText = string | number;

/** One retry policy under `retry:`. */
export interface RetryPolicySpec {
  policy: 'fixed' | 'exponential' | 'exponential-jitter' | 'schedule';
  schedule?: DurationText[];
  base?: DurationText;
  factor?: number;
  cap?: DurationText;
  interval?: DurationText;
  maxAttempts?: number;
  jitter?: DurationText;
}

/** One diff rule under `rules:` (the fields the core reads). */
export interface RuleSpec {
  name: string;
  bizType: string;
  taskStatus?: LogicalStatus[];
  taskKey?: 'bizId' | 'eventId' | 'id';
  source?: string;
  business: {
    table: string;
    key: string;
    where?: string;
    expect?: string;
    db?: string;
    orphans?: boolean;
  };
}
