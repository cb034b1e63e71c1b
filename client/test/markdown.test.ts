import { test } from 'node:test';
import assert from 'node:assert/strict';
import { escapeHtml, renderInline, renderMarkdown } from '../src/report/markdown';

test('escapes HTML in plain text, code spans and fenced code', () => {
  assert.equal(escapeHtml(`<img src=x onerror="alert('x')">&`), '&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt;&amp;');
  const html = renderMarkdown('Hello <script>alert(1)</script> `<b>` done\n\n```python\nif a < b and "x":\n    pass\n```');
  assert.ok(!html.includes('<script>'));
  assert.ok(html.includes('<p>Hello &lt;script&gt;alert(1)&lt;/script&gt; <code>&lt;b&gt;</code> done</p>'));
  assert.ok(html.includes('<pre class="code" data-lang="python"><code>if a &lt; b and &quot;x&quot;:\n    pass</code></pre>'));
});

test('paragraphs join wrapped lines; blank lines split them', () => {
  assert.equal(renderMarkdown('one\ntwo\n\nthree'), '<p>one two</p>\n<p>three</p>');
});

test('bullet and numbered lists, with continuation lines', () => {
  assert.equal(renderMarkdown('- a `x`\n- b\n  more'), '<ul><li>a <code>x</code></li><li>b more</li></ul>');
  assert.equal(renderMarkdown('1. first\n2. second'), '<ol><li>first</li><li>second</li></ol>');
});

test('links: only http(s), rendered as data-href (opened by the extension), never javascript:', () => {
  assert.equal(renderInline('[docs](https://pytorch.org/docs)'),
    '<a href="#" class="link" data-href="https://pytorch.org/docs" title="https://pytorch.org/docs">docs</a>');
  const bad = renderInline('[x](javascript:alert(1))');
  assert.ok(!bad.includes('data-href'));
  assert.ok(!bad.includes('<a'));
});

test('code span content is literal: no bold or links inside', () => {
  assert.equal(renderInline('`**a** [b](https://c)`'), '<code>**a** [b](https://c)</code>');
  assert.equal(renderInline('**bold** and `a<b`'), '<strong>bold</strong> and <code>a&lt;b</code>');
});

test('unterminated fence runs to the end and stays escaped', () => {
  assert.equal(renderMarkdown('```\n<x>'), '<pre class="code"><code>&lt;x&gt;</code></pre>');
});

test('headings are demoted below the report headings', () => {
  assert.equal(renderMarkdown('## Fix'), '<h5>Fix</h5>');
});
