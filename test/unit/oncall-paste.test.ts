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

  it('gives queues commands the broker the run named, URL passwords masked, and other commands none of it', () => {
    setPasteConnection({
      config: 'ops.yaml',
      redis: 'redis://:s3cret@cache.internal:6379/2',
      framework: 'laravel',
      prefix: 'shop_database_',
      queue: 'sms',
    });
    expect(pasteCommand('queues recover --queue sms')).toBe(
      'taskrecon queues recover --queue sms --config ops.yaml --redis redis://:***@cache.internal:6379/2 --framework laravel --prefix shop_database_',
    );
    expect(pasteCommand('audit --run 1234abcd')).toBe('taskrecon audit --run 1234abcd --config ops.yaml');
    setPasteConnection({
      rabbitmq: 'amqp://ops:pw@mq.internal:5672/shop',
      api: 'http://ops:pw@mq.internal:15672',
    });
    expect(withPasteConnection('Look first (`taskrecon queues --peek 10`), then `taskrecon scan`.')).toBe(
      'Look first (`taskrecon queues --peek 10 --rabbitmq amqp://ops:***@mq.internal:5672/shop --api http://ops:***@mq.internal:15672`), then `taskrecon scan`.',
    );
    setPasteConnection({ broker: 'redis-main' });
    expect(pasteCommand('queues move --from a --to b --broker other')).toBe(
      'taskrecon queues move --from a --to b --broker other',
    );
  });
});
