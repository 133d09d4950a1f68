import type { RetryPolicy } from '../../core/backoff.js';
import type { BoundSource } from '../../db/bind-source.js';
import { store, type EffectTable, EFFECT_KEY, EFFECT_TABLE } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';
import type { Dispatcher } from '../../dispatch/types.js';
import type { DrillEnv } from './env.js';
import { startFaultProxy } from './fault-proxy.js';
import type { FaultServer } from './fault-server.js';
import {
  drillPrefix,
  newRunId,
  runScenarios,
  STEP_TIMEOUT_MS,
  type DrillListener,
  type ScenarioResult,
} from '../../core/drill-framework.js';
import { expectationOf } from './policy.js';
import { startReferenceHandler, type HandlerVariant } from './reference-handler.js';
import { createDrillSandbox, type DrillSandbox } from './sandbox.js';
import { SCENARIOS } from './scenarios/index.js';
import { buildDrillSystem } from './system.js';

/** The JSON contract of `drill`; more fields may be added. */
export interface DrillResult {
  runId: string;
  target: {
    mode: 'sandbox' | 'system';
    /** One line for humans: where the drill ran. */
    description: string;
    db: string;
    source: string;
    table: string;
    handler: string;
  };
  /** Scenarios that passed / failed. */
  passed: number;
  failed: number;
  durationMs: number;
  /** Drill task rows left in place (with --keep), else 0. */
  keptRows: number;
  /** With --keep on the sandbox: the SQLite file to inspect. */
  sandboxFile: string | null;
  scenarios: ScenarioResult[];
}

/** The biz type the sandbox's reference handler is told (it grants coupons). */
export const SANDBOX_BIZ_TYPE = 'coupon';

/** A staging system to drill instead of the sandbox: the task table, its handler and the diff rule's business table. */
export interface SystemTarget {
  source: BoundSource;
  handlerUrl: string;
  bizType: string;
  effect: EffectTable;
  /** Where the business table is (default: the task table's database). */
  effectDb?: Db;
  leaseMs: number;
}

export interface DrillOptions {
  /** Scenario names to run (default: all, in suite order). */
  scenarios?: string[];
  keep?: boolean;
  /** The http dispatcher's timeout for drill deliveries. */
  timeoutMs: number;
  /** The retry policy the drill expects (the biz type's configured policy). */
  policy: RetryPolicy;
  listener?: DrillListener;
  /** Drill a staging system; without it, the embedded sandbox with the reference handler. */
  system?: SystemTarget;
  /** Sandbox only: the reference handler's variant (`non-idempotent` is deliberately broken). */
  handlerVariant?: HandlerVariant;
  /** The policy redrive actually runs with (default: `policy`); lets tests drill a broken one. */
  redrivePolicy?: RetryPolicy;
  /** Wraps the dispatcher redrive and the drill deliver with (tests drill a misclassifying one). */
  wrapDispatcher?: (dispatcher: Dispatcher) => Dispatcher;
  /** Per-step timeout (default STEP_TIMEOUT_MS). */
  stepTimeoutMs?: number;
}

/** Lease of drill claims on the sandbox: short, since the drill fast-forwards past it anyway. */
const SANDBOX_LEASE_MS = 60_000;

/**
 * Runs the drill suite: sets up the target (sandbox or staging), runs the chosen scenarios one
 * after the other, and removes every drill row (task rows by the run's event-id prefix, business
 * rows by the drill keys) unless `keep`.
 */
export async function runDrill(options: DrillOptions): Promise<DrillResult> {
  const started = performance.now();
  const runId = newRunId();
  const prefix = drillPrefix(runId);
  const chosen = options.scenarios?.length
    ? SCENARIOS.filter((s) => options.scenarios?.includes(s.name))
    : SCENARIOS;

  let sandbox: DrillSandbox | undefined;
  let target: FaultServer | undefined;
  let env: DrillEnv | undefined;
  let keptRows = 0;
  const system = options.system;
  try {
    let source: BoundSource;
    let effectDb: Db;
    let effect: EffectTable;
    let handlerBizType: string;
    let leaseMs: number;
    if (system) {
      source = system.source;
      effectDb = system.effectDb ?? system.source.db;
      effect = system.effect;
      handlerBizType = system.bizType;
      leaseMs = system.leaseMs;
      target = await startFaultProxy(system.handlerUrl, {
        upstreamTimeoutMs: options.timeoutMs * 20,
        bizType: system.bizType,
      });
    } else {
      sandbox = await createDrillSandbox();
      source = sandbox.source;
      effectDb = sandbox.db;
      effect = { table: EFFECT_TABLE, key: EFFECT_KEY };
      handlerBizType = SANDBOX_BIZ_TYPE;
      leaseMs = SANDBOX_LEASE_MS;
      target = await startReferenceHandler(sandbox.db, { variant: options.handlerVariant ?? 'idempotent' });
    }
    const base: Omit<DrillEnv, 'system'> = {
      runId,
      source,
      effectDb,
      effect,
      bizType: `drill-${runId}`,
      handlerBizType,
      target,
      timeoutMs: options.timeoutMs,
      leaseMs,
      policy: expectationOf(options.policy),
      inserted: [],
    };
    env = {
      ...base,
      system: buildDrillSystem(base, {
        policy: options.redrivePolicy ?? options.policy,
        wrapDispatcher: options.wrapDispatcher,
      }),
    };
    // A step makes a few deliveries at most: it gets the step timeout, or longer for a slow handler.
    const stepTimeoutMs = options.stepTimeoutMs ?? Math.max(STEP_TIMEOUT_MS, options.timeoutMs * 3 + 5000);
    const scenarios = await runScenarios(chosen, env, options.listener, { stepTimeoutMs });
    const passed = scenarios.filter((s) => s.status === 'passed').length;
    if (options.keep) keptRows = await store.sandbox.countDrillTasks(source, prefix);
    const display = system
      ? `${source.db.display} ${source.profile.table} via ${system.handlerUrl}`
      : 'the embedded sandbox';
    return {
      runId,
      target: {
        mode: system ? 'system' : 'sandbox',
        description: display,
        db: source.db.display,
        source: source.name,
        table: source.profile.table,
        handler: system ? system.handlerUrl : target.url,
      },
      passed,
      failed: scenarios.length - passed,
      durationMs: Math.round(performance.now() - started),
      keptRows,
      sandboxFile: sandbox && options.keep ? sandbox.file : null,
      scenarios,
    };
  } finally {
    await target?.close();
    await env?.system.close?.();
    if (env && !options.keep) {
      await store.sandbox.deleteDrillTasks(env.source, prefix);
      await store.sandbox.deleteDrillEffects(env.effectDb, env.effect, prefix);
    }
    await sandbox?.dispose(Boolean(options.keep));
  }
}
