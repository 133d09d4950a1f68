/** BullMQ's side of the Redis broker, imported when first needed (see bullmq/api.ts). */
export function bullmqApi(): Promise<typeof import('./bullmq/api.js')> {
  return import('./bullmq/api.js');
}
