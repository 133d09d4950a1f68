import { describe, expect, it } from 'vitest';
import { pasteCommand, setPasteConnection, withPasteConnection } from '../../src/render/paste.js';

describe('commands printed to paste carry the connection the user ran with', () => {
  it('adds --config, --db (password masked) and --source, quoted for a shell', () => {
    setPasteConnection({
      config: '/etc/task recon.yaml',
      db: 'mysql://app:s3cret@db.internal:3306/shop',
      source: 'orders',
      json: true,
    });
    expect(pasteCommand('audit --run 1234abcd')).toBe(
      "taskrecon audit --run 1234abcd --config '/etc/task recon.yaml' --db mysql://app:***@db.internal:3306/shop --source orders",
    );
    expect(pasteCommand('show 42 --source other')).not.toContain('--source orders');
  });

  it('completes every backticked taskrecon command of a hint, and nothing else', () => {
    setPasteConnection({ source: 'orders' });
    expect(withPasteConnection('Create it with `taskrecon init --audit-only`, or ask `your DBA`.')).toBe(
      'Create it with `taskrecon init --audit-only --source orders`, or ask `your DBA`.',
    );
  });

  it('leaves hints alone when the run used the defaults', () => {
    setPasteConnection({});
    expect(withPasteConnection('Run `taskrecon scan`.')).toBe('Run `taskrecon scan`.');
    expect(pasteCommand('scan')).toBe('taskrecon scan');
  });
});
