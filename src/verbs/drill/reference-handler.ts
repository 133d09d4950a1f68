import { store } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';
import { startFaultServer, type FaultServer, type Work } from './fault-server.js';

/**
 * The drills' reference handler: an HTTP endpoint on loopback that grants one coupon per order,
 * idempotently by event id (the classic task-table design). `idempotent: false` is the deliberately broken
 * variant — it grants on every delivery — which the tests use to prove that drills can fail.
 */
export type HandlerVariant = 'idempotent' | 'non-idempotent';
export const HANDLER_VARIANTS = ['idempotent', 'non-idempotent'] as const;

export interface ReferenceHandler extends FaultServer {
  readonly variant: HandlerVariant;
}

/** The work of the handler: 400 for a delivery without a biz id, else the effect and 200. */
export function referenceWork(db: Db, variant: HandlerVariant): Work {
  return async (delivery) => {
    if (!delivery.bizId) return { status: 400, body: { error: 'the delivery has no bizId' } };
    const effect = {
      eventId: delivery.idempotencyKey ?? delivery.eventId,
      bizId: delivery.bizId,
      templateId: 'TPL-DRILL',
    };
    const outcome =
      variant === 'idempotent'
        ? await store.sandbox.applyEffectOnce(db, effect)
        : await store.sandbox.applyEffectEveryTime(db, effect);
    return { status: 200, body: { ok: true, outcome } };
  };
}

/** Creates the business tables if missing and starts the handler on 127.0.0.1. */
export async function startReferenceHandler(
  db: Db,
  options: { variant?: HandlerVariant; port?: number; slowMs?: number } = {},
): Promise<ReferenceHandler> {
  for (const statement of store.sandbox.referenceEffectDdl(db.dialect)) await db.execute(statement);
  const variant = options.variant ?? 'idempotent';
  const server = await startFaultServer(referenceWork(db, variant), options);
  return Object.assign(server, { variant });
}
