/**
 * An integer with its thousands grouped by commas, as `toLocaleString('en-US')` writes it, without
 * ICU: the first toLocaleString() of a process builds a number formatter (~10 ms of start-up, more
 * than some whole commands take after it). Anything but a safe integer (and -0) goes to toLocaleString().
 */
export function grouped(n: number): string {
  if (!Number.isSafeInteger(n) || Object.is(n, -0)) return n.toLocaleString('en-US');
  const digits = String(Math.abs(n));
  let out = digits.slice(0, ((digits.length - 1) % 3) + 1);
  for (let i = out.length; i < digits.length; i += 3) out += `,${digits.slice(i, i + 3)}`;
  return n < 0 ? `-${out}` : out;
}
