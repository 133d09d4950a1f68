/** drill: scripted fault drills on a sandbox or a real system; sits above the verbs it drives. */
export * from './drill.js';
export type { DrillEvent, ScenarioResult, StepResult } from '../../core/drill-framework.js';
export { HANDLER_VARIANTS, type HandlerVariant } from './reference-handler.js';
export { SCENARIO_NAMES } from './scenarios/index.js';
export { checkHandlerUrl, findRule, systemTarget } from './system-target.js';
export {
  drillTarget,
  runDrills,
  SANDBOX_TIMEOUT_MS,
  SYSTEM_TIMEOUT_MS,
  type DrillTarget,
} from './request.js';
