import type { Channel, ConsumeMessage } from 'amqplib';
import { Pacer, pacing } from '../../core/pacer.js';
import type { MoveRequest } from '../types.js';
import type { BatchCarrier } from './move-batch.js';
import { MOVED_RUN_HEADER } from './move-message.js';

/** Batches not yet acked at once: the prefetch window holds this many, so the broker never waits on us. */
const BATCHES_IN_FLIGHT = 2;

/** Batches acked but not yet settled (their intents and audit rows being written) at once, at most. */
const BATCHES_SETTLING = 3;

/** No delivery for this long: a short batch goes, or, with nothing under way, the queue's depth is asked. */
const IDLE_MS = 50;

/**
 * One pass over a queue with a consumer: the broker pushes up to a window of messages (prefetch),
 * the carrier publishes and acks them batch by batch. The pass is bounded by the queue's depth at
 * its start (and `limit`), so a message is never taken twice: not when a competing consumer
 * requeues one, not when the target routes copies back into the source (a copy carries this run's
 * id, and the pass ends at the first one). At the end the consumer is cancelled and what the window
 * holds beyond the pass is nacked back in the order it came.
 */
export async function windowPass(
  source: Channel,
  request: MoveRequest,
  carrier: BatchCarrier,
  budget: number,
): Promise<number> {
  const { batch } = pacing(request.ratePerSecond, request.batch);
  const size = Math.max(1, Math.min(batch, budget));
  await source.prefetch(Math.min(size * BATCHES_IN_FLIGHT, budget));
  const pending: ConsumeMessage[] = [];
  const beyond: ConsumeMessage[] = [];
  let taken = 0;
  let closed = false;
  let wake: (() => void) | undefined;
  const { consumerTag } = await source.consume(
    request.from,
    (m) => {
      if (m && !closed && taken < budget && m.properties.headers?.[MOVED_RUN_HEADER] !== request.runId) {
        taken++;
        pending.push(m);
      } else {
        // Past the pass, a copy this run made, or the broker cancelled the consumer (queue deleted).
        if (m) beyond.push(m);
        closed = true;
      }
      wake?.();
    },
    { noAck: false },
  );
  const pacer = new Pacer(request.ratePerSecond, request.clock);
  // A batch leaves the window when its acks reached the broker, and is done when it is settled.
  const unacked = new Set<Promise<void>>();
  const underWay = new Set<Promise<void>>();
  let failure: unknown;
  let started = 0;
  const start = (messages: ConsumeMessage[]): void => {
    started += messages.length;
    let acked = (): void => undefined;
    const ack = new Promise<void>((resolve) => (acked = resolve));
    const leave = ack.then(() => {
      unacked.delete(leave);
      wake?.();
    });
    unacked.add(leave);
    const step: Promise<void> = carrier
      .carry(messages, acked)
      .catch((error: unknown) => void (failure ??= error))
      .finally(() => {
        acked();
        underWay.delete(step);
        wake?.();
      });
    underWay.add(step);
  };
  const room = async (): Promise<void> => {
    while (unacked.size >= BATCHES_IN_FLIGHT || underWay.size >= BATCHES_SETTLING)
      await Promise.race([...unacked, ...underWay]);
  };
  const delivered = (ms: number): Promise<boolean> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        wake = undefined;
        resolve(false);
      }, ms);
      wake = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve(true);
      };
    });
  try {
    while (failure === undefined && !request.shouldStop()) {
      const complete = closed || taken >= budget;
      if (pending.length >= size || (complete && pending.length > 0)) {
        await room();
        if (failure !== undefined || request.shouldStop()) break;
        await pacer.wait(started);
        start(pending.splice(0, size));
        continue;
      }
      if (complete && pending.length === 0) break;
      if (await delivered(IDLE_MS)) continue;
      if (pending.length > 0) start(pending.splice(0, size));
      else if (underWay.size > 0) await Promise.race(underWay);
      // Nothing delivered, nothing under way: fewer messages than at the start (a consumer took some).
      else if ((await source.checkQueue(request.from)).messageCount === 0) break;
    }
  } finally {
    closed = true;
    // Every ack before the cancel: a quorum queue may return messages acked after its consumer went.
    // What the broker delivers meanwhile is beyond the pass and goes back below.
    await Promise.all(underWay);
    await source.cancel(consumerTag).catch(() => undefined);
    const back = [...pending, ...beyond].sort((a, b) => a.fields.deliveryTag - b.fields.deliveryTag);
    for (const m of back) source.nack(m, false, true);
  }
  if (failure !== undefined) throw failure;
  return started;
}
