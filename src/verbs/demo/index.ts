/** demo: the SQLite sandbox and the guided tour over it. */
export { buildSandbox, BUSINESS_TABLES, sandboxConfig, type Sandbox } from './sandbox.js';
export { TOUR_STEPS, type TourStep } from './steps.js';
export { runTour, type StepOutcome } from './tour.js';
export { DEMO_REDIS_URL, prepareDemoQueues, type DemoQueues } from './queues.js';
