import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { humanBytes, renderBlockChart, renderConfigurations, renderMeasureReport, toMeasureResult } from '../src/report/measure';

// The JSON of `rootrank measure factories:partly_checkpointed --format json` (tests/measure/factories.py).
const fixture = () => toMeasureResult(JSON.parse(readFileSync(join(__dirname, '..', '..', 'test', 'fixtures', 'measure-partly.json'), 'utf8')));

test('one chart row per block, coloured by how it is checkpointed today', () => {
  const r = fixture();
  const svg = renderBlockChart(r);
  assert.equal((svg.match(/<g class="block /g) ?? []).length, r.blocks.length);
  assert.equal((svg.match(/class="today ckpt"/g) ?? []).length, 2);
  assert.equal((svg.match(/class="today bare"/g) ?? []).length, 4);
  assert.ok(svg.includes('layers.0') && svg.includes('in plan'));
});

test('today beside the plan, with the sizes the engine measured', () => {
  const r = fixture();
  const table = renderConfigurations(r);
  for (const name of ['none', 'as-configured', 'all-blocks', 'plan']) assert.ok(table.includes(`data-config="${name}"`));
  assert.ok(table.includes(humanBytes(r.configurations['as-configured']!.activation_bytes)));
});

test('the report: strict CSP, findings with their ids, the plan code escaped', () => {
  const html = renderMeasureReport(fixture(), { nonce: 'N0nce', cspSource: 'vscode-webview://x' });
  assert.match(html, /default-src 'none'/);
  assert.ok(!/ style="/.test(html));
  assert.ok(html.includes('<code>checkpoint.partial-coverage</code>'));
  assert.ok(html.includes('apply_activation_checkpointing(') && !html.includes('lambda module: module in blocks,\n)</script>'));
});

test('a result of another schema is refused', () => {
  assert.throws(() => toMeasureResult({ schema: 'rootrank.diagnosis/1' }), /rootrank.measure\/1/);
  assert.equal(humanBytes(1536), '1.50 KiB');
});
