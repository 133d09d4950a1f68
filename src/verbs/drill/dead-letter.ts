import { openRabbitBroker } from '../../brokers/rabbitmq/index.js';
import { DEAD_LETTER_SCENARIO, deadLetterTopology } from '../../brokers/rabbitmq/topology-drill.js';
import type { BrokerConfig, RabbitBrokerConfig } from '../../config/brokers.js';
import { resolveBrokerUrl } from '../../config/secrets.js';
import { usageError } from '../../errors.js';
import type { DrillResult } from './drill.js';
import { newRunId, runScenarios, type DrillListener } from '../../core/drill-framework.js';

/**
 * The `dead-letter-topology` scenario in the drill command: it runs on a RabbitMQ broker of the
 * config (`--broker NAME --queue Q`), not on the task-table sandbox, so it is planned and run
 * apart from the other scenarios and its result merged in.
 */

/** Retries drilled when the broker config gives no `maxRetries`. */
export const DEFAULT_DRILL_RETRIES = 3;

export interface DeadLetterPlan {
  broker: string;
  config: RabbitBrokerConfig;
  queue: string;
  parkingQueue?: string;
}

export interface DrillPlan {
  /** Sandbox/system scenarios to run; undefined = all; [] = none. */
  scenarios: string[] | undefined;
  deadLetter?: DeadLetterPlan;
  /** Set when the dead-letter scenario is left out: the one line that says how to run it. */
  skipped?: string;
}

export const HOW_TO_RUN = `${DEAD_LETTER_SCENARIO}: skipped (needs a RabbitMQ broker): run drill --scenario ${DEAD_LETTER_SCENARIO} --broker NAME --queue QUEUE`;

export function planDrill(
  flags: { scenario?: string[]; broker?: string; queue?: string; 'parking-queue'?: string },
  brokers: Record<string, BrokerConfig> | undefined,
): DrillPlan {
  const named = flags.scenario ?? [];
  const wanted = named.includes(DEAD_LETTER_SCENARIO) || flags.broker !== undefined;
  const others = named.filter((s) => s !== DEAD_LETTER_SCENARIO);
  const scenarios = named.length === 0 ? (wanted ? [] : undefined) : others;
  if (!wanted) return { scenarios, skipped: HOW_TO_RUN };
  if (!flags.broker || !flags.queue)
    throw usageError(
      `--scenario ${DEAD_LETTER_SCENARIO} needs --broker NAME and --queue QUEUE`,
      'Name a RabbitMQ broker of `brokers:` and the business queue whose retry topology to drill.',
    );
  const config = brokers?.[flags.broker];
  if (!config)
    throw usageError(
      `--broker: no broker '${flags.broker}' in brokers:`,
      `Brokers configured: ${Object.keys(brokers ?? {}).join(', ') || '(none)'}.`,
    );
  if (config.kind !== 'rabbitmq') throw usageError(`--broker: '${flags.broker}' is not a RabbitMQ broker`);
  if (!config.api)
    throw usageError(
      `broker '${flags.broker}' has no \`api:\`: the drill reads the queue's arguments and bindings from the management API`,
      'Add `api: http://user:pass@host:15672` to the broker.',
    );
  return {
    scenarios,
    deadLetter: { broker: flags.broker, config, queue: flags.queue, parkingQueue: flags['parking-queue'] },
  };
}

/** Runs the dead-letter scenario; a missing vhost or queue, or an unreachable broker, is exit 3 before any step. */
export async function runDeadLetterDrill(
  plan: DeadLetterPlan,
  listener?: DrillListener,
): Promise<DrillResult> {
  const started = performance.now();
  const broker = openRabbitBroker(plan.broker, resolveBrokerUrl(plan.broker, plan.config));
  const api = broker.api;
  if (!api) throw usageError(`broker '${plan.broker}' has no \`api:\``);
  try {
    await api.checkVhost();
    if (!(await api.queue(plan.queue)))
      throw usageError(
        `queue '${plan.queue}' does not exist in vhost '${broker.target.vhost}' of ${broker.target.display}`,
        'Check --queue.',
      );
    await broker.connect();
    const runId = newRunId();
    const env = {
      api,
      connect: () => broker.connect(),
      runId,
      queue: plan.queue,
      maxRetries: plan.config.maxRetries ?? DEFAULT_DRILL_RETRIES,
      parkingQueue: plan.parkingQueue,
    };
    const scenarios = await runScenarios([deadLetterTopology], env, listener);
    const passed = scenarios.filter((s) => s.status === 'passed').length;
    return {
      runId,
      target: {
        mode: 'system',
        description: `RabbitMQ ${broker.target.display}, queue ${plan.queue}`,
        db: '',
        source: '',
        table: '',
        handler: broker.target.display,
      },
      passed,
      failed: scenarios.length - passed,
      durationMs: Math.round(performance.now() - started),
      keptRows: 0,
      sandboxFile: null,
      scenarios,
    };
  } finally {
    await broker.close();
  }
}

/** One result of the sandbox/system run and the dead-letter run (either may be absent, not both). */
export function mergeDrillResults(
  first: DrillResult | undefined,
  second: DrillResult | undefined,
): DrillResult {
  if (!first) return second as DrillResult;
  if (!second) return first;
  return {
    ...first,
    passed: first.passed + second.passed,
    failed: first.failed + second.failed,
    durationMs: first.durationMs + second.durationMs,
    scenarios: [...first.scenarios, ...second.scenarios],
  };
}
