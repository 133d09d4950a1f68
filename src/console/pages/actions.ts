import type { CompensateAction } from '../../verbs/compensate/index.js';

/** The actions as the CLI names them, labelled for buttons. */
export const ACTION_LABELS: Record<CompensateAction, string> = {
  retry: 'Retry',
  'mark-compensated': 'Mark compensated',
  'mark-failed': 'Mark failed',
  forget: 'Forget',
};
