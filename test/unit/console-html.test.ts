import { describe, expect, it } from 'vitest';
import { escapeHtml, html } from '../../src/console/html.js';

/** The template under another name, so that the formatter leaves these literals as written. */
const tag = html;

describe('console HTML escaping', () => {
  it('escapes every interpolated value, in text and in attributes', () => {
    const evil = `<script>window.pwned=1</script>"' onload=x \``;
    const out = html`<p title="${evil}">${evil}</p>`.text;
    expect(out).not.toContain('<script>');
    expect(out).not.toMatch(/"\s*onload/);
    expect(out).toBe(
      '<p title="&lt;script&gt;window.pwned=1&lt;/script&gt;&quot;&#39; onload=x &#96;">&lt;script&gt;window.pwned=1&lt;/script&gt;&quot;&#39; onload=x &#96;</p>',
    );
  });

  it('keeps markup built by the template, joins arrays, drops null/undefined/false', () => {
    const items = ['a<b', 'c'].map((x) => html`<li>${x}</li>`);
    expect(tag`<ul>${items}${null}${undefined}${false}</ul>`.text).toBe('<ul><li>a&lt;b</li><li>c</li></ul>');
    expect(html`${0}`.text).toBe('0');
  });

  it('escapes a value that only looks like markup', () => {
    expect(escapeHtml({ toString: () => '<i>' })).toBe('&lt;i&gt;');
  });
});
