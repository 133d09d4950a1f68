import type * as demo from '../sql/demo.js';
import type * as drill from '../sql/drill.js';
import type * as referenceEffect from '../sql/reference-effect.js';
import type * as sweepDemo from '../sql/sweep-demo.js';

/** The sandboxes: the demo's tables, a drill's tasks and effects, the reference handler's effect. */
export interface SandboxStore {
  // The demo.
  isDemoSandbox: typeof demo.isDemoSandbox;
  markSandbox: typeof demo.markSandbox;
  insertDemoTask: typeof demo.insertDemoTask;
  insertDemoEffect: typeof demo.insertDemoEffect;
  applyDemoEffectOnce: typeof demo.applyDemoEffectOnce;
  demoSamples: typeof demo.demoSamples;
  insertSweepDemoFailures: typeof sweepDemo.insertSweepDemoFailures;

  // Drills.
  drillRunFilter: typeof drill.drillRunFilter;
  insertDrillTask: typeof drill.insertDrillTask;
  readDrillTask: typeof drill.readDrillTask;
  fastForwardRetry: typeof drill.fastForwardRetry;
  ageClaim: typeof drill.ageClaim;
  countDrillTasks: typeof drill.countDrillTasks;
  deleteDrillTasks: typeof drill.deleteDrillTasks;
  countEffects: typeof drill.countEffects;
  deleteDrillEffects: typeof drill.deleteDrillEffects;

  // The reference handler's effect table.
  referenceEffectDdl: typeof referenceEffect.referenceEffectDdl;
  applyEffectOnce: typeof referenceEffect.applyEffectOnce;
  applyEffectEveryTime: typeof referenceEffect.applyEffectEveryTime;
}
