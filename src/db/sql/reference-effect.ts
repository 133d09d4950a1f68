import type { Dialect } from '../dialect.js';
import type { Db, Queryable } from '../types.js';

/**
 * The business side of the drills' reference handler: a coupon is granted per order (the effect),
 * and the handler remembers each event id it has processed in the same transaction (the classic task-table design:
 * a unique key on the event id, checked in the transaction of the business write). The effect
 * table itself has no unique key, so a handler that skips the check leaves visible duplicates.
 */
export const EFFECT_TABLE = 'user_coupon';
export const EFFECT_KEY = 'order_id';
export const PROCESSED_TABLE = 'handler_processed_event';

/** DDL of the effect table and the processed-event table, per dialect. */
export function referenceEffectDdl(dialect: Dialect): string[] {
  return dialect.ddl.referenceEffect(EFFECT_TABLE, PROCESSED_TABLE);
}

export interface EffectDelivery {
  eventId: string;
  bizId: string;
  templateId: string;
}

/**
 * Records the event as processed, unless it already was.
 * In: event id. Out: true when this call recorded it (first delivery), false for a repeat.
 * Side effect: an INSERT of one row that does nothing on a key conflict (INSERT IGNORE, ON CONFLICT DO
 * NOTHING); a concurrent repeat waits on the key's lock.
 */
async function markProcessed(tx: Queryable, dialect: Dialect, eventId: string): Promise<boolean> {
  const { verb, suffix } = dialect.insertUnlessConflict;
  const result = await tx.execute(`${verb} ${PROCESSED_TABLE} (event_id) VALUES (?)${suffix}`, [eventId]);
  return result.affectedRows === 1;
}

/**
 * Grants the coupon of one delivery.
 * In: the delivery. Out: nothing. Side effect: one INSERT into the effect table.
 */
async function grantCoupon(tx: Queryable, delivery: EffectDelivery): Promise<void> {
  await tx.execute(`INSERT INTO ${EFFECT_TABLE} (order_id, coupon_template_id, event_id) VALUES (?, ?, ?)`, [
    delivery.bizId,
    delivery.templateId,
    delivery.eventId,
  ]);
}

/**
 * Applies a delivery's effect at most once per event id: the processed mark and the grant commit together.
 * Out: 'applied', or 'duplicate' when the event was processed before.
 */
export async function applyEffectOnce(db: Db, delivery: EffectDelivery): Promise<'applied' | 'duplicate'> {
  return db.transaction(async (tx) => {
    if (!(await markProcessed(tx, db.dialect, delivery.eventId))) return 'duplicate';
    await grantCoupon(tx, delivery);
    return 'applied';
  });
}

/** The deliberately broken variant: grants on every delivery, never checking the event id. */
export async function applyEffectEveryTime(db: Db, delivery: EffectDelivery): Promise<'applied'> {
  await db.transaction((tx) => grantCoupon(tx, delivery));
  return 'applied';
}
