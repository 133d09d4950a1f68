import { isStderrTty } from './terminal.js';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/** Work shorter than this shows no indicator at all. */
const SHOW_AFTER_MS = 1000;

export interface Progress {
  /** Sets the text after the spinner, e.g. "12,000 rows". */
  update(text: string): void;
  stop(): void;
}

/** A spinner on stderr, only on a TTY and only once the work has taken over a second. */
export function startProgress(label: string, enabled = true): Progress {
  if (!enabled || !isStderrTty()) return { update() {}, stop() {} };
  let text = '';
  let frame = 0;
  let shown = false;
  const started = Date.now();
  const timer = setInterval(() => {
    if (Date.now() - started < SHOW_AFTER_MS) return;
    shown = true;
    process.stderr.write(`\r\x1b[2K${FRAMES[frame++ % FRAMES.length]} ${label} ${text}`);
  }, 120);
  timer.unref();
  return {
    update(next) {
      text = next;
    },
    stop() {
      clearInterval(timer);
      if (shown) process.stderr.write('\r\x1b[2K');
    },
  };
}
