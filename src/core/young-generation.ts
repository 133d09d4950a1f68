import { setFlagsFromString } from 'node:v8';

/**
 * Stops V8 from growing its young generation for the rest of the process (it may still round a
 * growth up by a page or two). A list streamed from the wire allocates little on the JS heap and
 * much outside it: each socket read is memory of its own, freed only once the small JS object
 * holding it is collected. V8 grows the young generation as objects outlive its scavenges
 * (start-up alone takes it from 1 MB to 4 MB a half, a busy process to 16 MB a half), so
 * scavenges come seconds apart and the reads already consumed wait for them. On Node 24 the due
 * list of a 1M-row table (400,000 rows) peaked at 136–159 MB of RSS (median 149, 11 runs) and at
 * 136–153 MB (median 141) with the young generation held from the list's start, in the same time
 * or less; Node 20 stays near 120 MB either way. Held from the process's start instead it stays
 * smaller still, but start-up then takes ~50 ms longer (a scavenge every megabyte while the code
 * loads), so it is held only where a list streams from the wire, and where a RabbitMQ move
 * consumes (a delivery's body is a slice of the socket read it came in: 20,000 messages moved
 * peaked at 128–129 MB held, 135–145 MB not).
 *
 * V8 reads its growth factor each time it would grow the young generation, so setting it while the
 * process runs takes effect (the young generation's largest size, by contrast, is fixed when the
 * heap is made; test/integration/node-runtime checks it on each Node CI runs). The setting is
 * V8's own, not a Node.js API, and only ever changes the collector's pacing.
 */
export function holdYoungGeneration(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
}
