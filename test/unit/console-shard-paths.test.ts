import { describe, expect, it } from 'vitest';
import { html } from '../../src/console/html.js';
import { scopeLinks, scopePath, shardPrefix, splitShardPath } from '../../src/console/shards/paths.js';

describe('console shard paths', () => {
  it('names a shard in one path segment, safe in a quoted attribute, and reads it back', () => {
    const name = `eu/<i>&'9 "x"(*)!`;
    const prefix = shardPrefix(name);
    expect(prefix).toBe('/shards/eu%2F%3Ci%3E%26%279%20%22x%22%28%2A%29%21');
    expect(prefix.slice('/shards/'.length)).toMatch(/^[A-Za-z0-9%._~-]+$/);
    expect(splitShardPath(`${prefix}/tasks/7`)).toEqual({ name, rest: '/tasks/7' });
    expect(splitShardPath(prefix)).toEqual({ name, rest: '/' });
    expect(splitShardPath('/tasks/7')).toBeUndefined();
    expect(splitShardPath('/shards/%E0%A4%A/tasks')).toBeUndefined();
  });

  it('puts local links, forms and redirects under the prefix, and leaves the rest', () => {
    expect(scopePath('/tasks?list=failed', '/shards/a')).toBe('/shards/a/tasks?list=failed');
    expect(scopePath('/', '/shards/a')).toBe('/shards/a/');
    expect(scopePath('/static/console.css', '/shards/a')).toBe('/static/console.css');
    expect(scopePath('//evil.example/', '/shards/a')).toBe('//evil.example/');
    expect(scopePath('http://127.0.0.1/', '/shards/a')).toBe('http://127.0.0.1/');
  });

  it('rewrites attributes the console wrote, never text or values of a task', () => {
    const hostile = `x" href="/tasks/9`;
    const page = html`<a href="/tasks/1">one</a>
      <form method="post" action="/tasks/1/actions"><input name="q" value="${hostile}" /></form>
      <p>${`<a href="/audit">`}</p>
      <link rel="stylesheet" href="/static/console.css" />
      <a href="/" data-unscoped>all shards</a>
      <a href="/tasks/data-unscoped">tricky</a>`.text;
    const scoped = scopeLinks(page, '/shards/a');
    expect(scoped).toContain('<a href="/shards/a/tasks/1">');
    expect(scoped).toContain('action="/shards/a/tasks/1/actions"');
    expect(scoped).toContain('value="x&quot; href=&quot;/tasks/9"');
    expect(scoped).toContain('&lt;a href=&quot;/audit&quot;&gt;');
    expect(scoped).toContain('href="/static/console.css"');
    expect(scoped).toContain('<a href="/" data-unscoped>all shards</a>');
    expect(scoped).toContain('<a href="/shards/a/tasks/data-unscoped">tricky</a>');
  });
});
