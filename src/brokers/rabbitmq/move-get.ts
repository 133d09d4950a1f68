import type { Channel, GetMessage } from 'amqplib';
import { Pacer, pacing } from '../../core/pacer.js';
import type { MoveRequest } from '../types.js';
import type { BatchCarrier } from './move-batch.js';
import { matches } from './move-message.js';

/**
 * One pass of a filtered move (or a filtered dry run), message by message with basic.get: the
 * messages that do not match are held unacked until the pass ends, and held messages would fill a
 * consumer's prefetch window and stall it. Bounded by the queue's depth at the start; what it
 * holds is nacked back, in its order, at the end. Returns how many matched.
 */
export async function getPass(
  source: Channel,
  request: MoveRequest,
  carrier: BatchCarrier | undefined,
  depth: number,
): Promise<number> {
  const { batch: size } = pacing(request.ratePerSecond, request.batch);
  const limit = request.limit ?? Number.POSITIVE_INFINITY;
  const pacer = new Pacer(request.ratePerSecond, request.clock);
  const held: GetMessage[] = [];
  let taken = 0;
  let matched = 0;
  try {
    let drained = false;
    while (!drained && taken < depth && matched < limit && !request.shouldStop()) {
      const batch: GetMessage[] = [];
      while (batch.length < size && taken < depth && matched + batch.length < limit) {
        const message = await source.get(request.from, { noAck: false });
        if (!message) {
          // Fewer messages than at the start (a consumer took some): the pass is over.
          drained = true;
          break;
        }
        taken++;
        if (matches(message, request.match)) batch.push(message);
        else held.push(message);
      }
      matched += batch.length;
      if (batch.length === 0) continue;
      if (!carrier) {
        held.push(...batch);
        continue;
      }
      await carrier.carry(batch);
      await pacer.wait(carrier.moved);
    }
  } finally {
    held.sort((a, b) => a.fields.deliveryTag - b.fields.deliveryTag);
    for (const m of held) source.nack(m, false, true);
  }
  return matched;
}
