import { effectBlocksRetry, effectRefusal, effectRows, type TaskEffect } from '../../core/effect.js';
import type { LogicalStatus, TaskId } from '../../core/task.js';
import type { BoundSource } from '../../db/bind-source.js';
import type { AuditInsert } from '../../db/port/index.js';
import type { Row } from '../../db/types.js';
import { rowEventId, rowJson } from '../rows.js';
import {
  MAX_KEPT_RESULTS,
  type CompensateItem,
  type CompensateRequest,
  type EffectSummary,
} from './types.js';

/**
 * The effect gate of a retry: a task whose effect is already there (present or duplicated) is
 * refused unless the run forces it, and both the refusal and the force are audited (actions
 * `effect-refused` and `effect-forced`, the effect found in `after_json`).
 */

export const EFFECT_REFUSED_ACTION = 'effect-refused';
export const EFFECT_FORCED_ACTION = 'effect-forced';
/** How a person goes on past the gate (the CLI's flag; the console asks a second time instead). */
export const FORCE_EFFECT_FLAG = '--force-effect';

export type Gate = 'refused' | 'forced';

/** One decided row as the batch sees it. */
export interface Decided {
  row: Row;
  id: TaskId;
  from: LogicalStatus | 'unknown';
  item?: CompensateItem;
  effect?: TaskEffect;
  gate?: Gate;
}

export function emptyEffectSummary(): EffectSummary {
  return { present: 0, duplicated: 0, missing: 0, noRule: 0, refused: 0, forced: 0, refusedIds: [] };
}

/**
 * Puts the gate on rows the state machine would move: refused (an item) when the effect is there
 * and the run does not force, marked forced when it does. Every row carries its effect.
 */
export function applyGate<D extends Decided>(
  decided: D[],
  effects: Map<string, TaskEffect> | undefined,
  force: boolean,
  to: string | null,
): D[] {
  if (!effects) return decided;
  for (const d of decided) {
    const effect = effects.get(String(d.id));
    if (!effect) continue;
    d.effect = effect;
    if (d.item) {
      d.item.effect = effect;
      continue;
    }
    if (!effectBlocksRetry(effect)) continue;
    if (force) d.gate = 'forced';
    else {
      d.gate = 'refused';
      d.item = {
        id: d.id,
        from: d.from,
        to,
        outcome: 'refused',
        reason: effectRefusal(effect, FORCE_EFFECT_FLAG),
        effect,
      };
    }
  }
  return decided;
}

/** Counts one recorded item's effect into the run's summary. */
export function countEffect(summary: EffectSummary, item: CompensateItem, gate: Gate | undefined): void {
  if (item.effect) {
    const state = item.effect.state;
    if (state === 'no-rule') summary.noRule++;
    else summary[state]++;
  }
  if (gate === 'forced') summary.forced++;
  if (gate === 'refused') {
    summary.refused++;
    if (summary.refusedIds.length < MAX_KEPT_RESULTS) summary.refusedIds.push(item.id);
  }
}

/** The audit rows of the gated rows: a refusal changes nothing (from = to), a force goes beside the retry's own row. */
export function gateAudits(
  source: BoundSource,
  request: CompensateRequest,
  decided: readonly Decided[],
  gate: Gate,
): AuditInsert[] {
  return decided
    .filter((d) => d.gate === gate)
    .map((d) => ({
      operator: request.operator,
      host: request.host,
      action: gate === 'refused' ? EFFECT_REFUSED_ACTION : EFFECT_FORCED_ACTION,
      source: source.name,
      taskTable: source.profile.table,
      taskId: String(d.id),
      eventId: request.audit ? request.audit.eventId(d.row) : rowEventId(source.sql, d.row),
      fromStatus: d.from,
      toStatus: gate === 'refused' ? d.from : 'pending',
      beforeJson: rowJson(d.row),
      afterJson: JSON.stringify({ effect: d.effect }),
      reason:
        gate === 'refused'
          ? `retry refused, effect ${d.effect?.state ?? '?'}: ${d.effect ? effectRows(d.effect) : ''}`
          : `retried past the effect (${d.effect?.state ?? '?'}): ${request.reason ?? 'no reason given'}`,
      runId: request.runId,
    }));
}
