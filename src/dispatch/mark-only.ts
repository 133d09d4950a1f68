import type { Dispatcher, DispatchResult } from './types.js';

/** `mark-only`: the state change alone, nothing executed (a handler that already ran elsewhere, or a dry pipeline). */
export class MarkOnlyDispatcher implements Dispatcher {
  readonly kind = 'mark-only';

  async dispatch(): Promise<DispatchResult> {
    return { outcome: 'success' };
  }
}
