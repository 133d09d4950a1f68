import type { DrillEnv } from '../env.js';
import type { Scenario } from '../../../core/drill-framework.js';
import { duplicateDelivery } from './duplicate-delivery.js';
import { permanentError } from './permanent-error.js';
import { slowTarget } from './slow-target.js';
import { unreachableTarget } from './unreachable-target.js';
import { workerCrash } from './worker-crash.js';

/** The drill suite, in the order it runs. */
export const SCENARIOS: ReadonlyArray<Scenario<DrillEnv>> = [
  unreachableTarget,
  duplicateDelivery,
  permanentError,
  workerCrash,
  slowTarget,
];

export const SCENARIO_NAMES = SCENARIOS.map((s) => s.name);
