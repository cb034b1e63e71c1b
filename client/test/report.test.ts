import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compressRanks, contentSecurityPolicy, groupCollateral, jsonForHtml, renderReport } from '../src/report/html';
import { checkDiagnosis, rankRuns, runsCount, runsHave, toDiagnosis } from '../src/types';
import type { Diagnosis } from '../src/types';

const fixture = (): Diagnosis => toDiagnosis(JSON.parse(readFileSync(join(__dirname, '..', '..', 'test', 'fixtures', 'diagnosis-rank2.json'), 'utf8')));
const ctx = { nonce: 'N0nce', cspSource: 'vscode-webview://x', origin: 'selection in train.log', canReveal: true };

test('strict CSP: nothing by default, nonce for style and script, no remote content', () => {
  const csp = contentSecurityPolicy(ctx);
  assert.match(csp, /^default-src 'none'/);
  assert.ok(csp.includes("script-src 'nonce-N0nce'") && csp.includes("style-src 'nonce-N0nce'"));
  assert.ok(!/https?:|unsafe-inline|unsafe-eval/.test(csp));
  const html = renderReport(fixture(), ctx);
  assert.ok(!/<(script|style)(?![^>]*nonce="N0nce")[^>]*>/.test(html), 'every script/style carries the nonce');
  assert.ok(!/ style="/.test(html), 'no inline style attributes (blocked by the CSP)');
  assert.ok(!/ (src|href)="https?:/.test(html), 'no remote resources');
});

test('root cause and initiating rank up top, evidence lines revealable, collateral grouped', () => {
  const html = renderReport(fixture(), ctx);
  const top = html.indexOf('<h1>Uncaught Python exception</h1>');
  assert.ok(top > 0 && top < html.indexOf('id="why"'));
  assert.ok(html.includes('initiating rank 2'));
  assert.ok(html.includes('data-line="15"'));
  assert.match(html, /<strong>ranks 1, 3<\/strong>: A peer process exited/);
  assert.ok(html.includes('data-action="copyMarkdown"') && html.includes('data-action="runVerify"'));
});

test('server text is escaped everywhere', () => {
  const d = fixture();
  d.root_cause!.title = '<img src=x onerror=alert(1)>';
  d.root_cause!.why = '<b>why</b>';
  d.root_cause!.evidence[0]!.text = '</pre><script>x()</script>';
  d.root_cause!.fix = '<iframe>';
  const html = renderReport(d, ctx);
  assert.ok(!html.includes('<img') && !html.includes('<b>why') && !html.includes('<iframe') && !html.includes('<script>x()'));
});

test('no root cause: a clear headline and the findings', () => {
  const d: Diagnosis = { ...fixture(), root_cause: null, candidates: [], collateral: [] };
  const html = renderReport(d, { ...ctx, canReveal: false });
  assert.ok(html.includes('<h1>No known failure found</h1>'));
  assert.ok(!html.includes('data-line="'), 'nothing to reveal');
  const empty: Diagnosis = { ...d, findings: [], timeline: [], ranks_seen: [] };
  assert.ok(renderReport(empty, ctx).includes('Nothing recognised'));
});

test('rank lists are compressed; collateral groups by rule in log order', () => {
  assert.equal(compressRanks([3, 1, 2, 0, 7, 5, 6, 9]), '0–3, 5–7, 9');
  assert.equal(compressRanks([4, 5]), '4, 5');
  const groups = groupCollateral([
    { rank: 3, rule: 'b', line: 40 }, { rank: 1, rule: 'a', line: 30 }, { rank: 2, rule: 'b', line: 20 },
  ]);
  assert.deepEqual(groups.map(g => [g.rule, g.ranks, g.firstLine]), [['b', [3, 2], 20], ['a', [1], 30]]);
});

test('rank sets: ranges (schema 2) and lists (schema 1) read into the same runs', () => {
  assert.deepEqual(rankRuns('0-2,4,7-9'), [[0, 2], [4, 4], [7, 9]]);
  assert.deepEqual(rankRuns([3, 1, 2, 0, 7, 5, 6, 9]), [[0, 3], [5, 7], [9, 9]]);
  assert.deepEqual(rankRuns('0-999999'), [[0, 999999]]);
  assert.deepEqual(rankRuns('5-3,x,,2'), [[2, 2]]);  // nonsense parts are dropped, not guessed
  assert.deepEqual(rankRuns(undefined), []);
  assert.equal(runsCount(rankRuns('0-9,20-29')), 20);
  assert.ok(runsHave(rankRuns('0-9,20-29'), 25) && !runsHave(rankRuns('0-9,20-29'), 15));
});

test('a schema 1 diagnosis (a server from before rank ranges) still reads', () => {
  const old: unknown = JSON.parse(readFileSync(join(__dirname, '..', '..', 'test', 'fixtures', 'diagnosis-rank2-schema1.json'), 'utf8'));
  assert.equal(checkDiagnosis(old), undefined);
  assert.deepEqual(toDiagnosis(old).ranks_seen, [[1, 3]]);
  assert.deepEqual(fixture().ranks_seen, [[1, 3]]);
  assert.match(renderReport(toDiagnosis(old), ctx), /rank 2/);
});

test('schema check', () => {
  assert.equal(checkDiagnosis(fixture()), undefined);
  assert.match(checkDiagnosis({ schema: 'other/2' }) ?? '', /unexpected diagnosis schema/);
  assert.match(checkDiagnosis(null) ?? '', /no diagnosis/);
});

test('the saved state is embedded as inert JSON that cannot close its element', () => {
  const state = { origin: { text: '</script><script>alert(1)</script> & <!--' } };
  const json = jsonForHtml(state);
  assert.ok(!/[<>&]/.test(json));
  assert.deepEqual(JSON.parse(json), state);
  const html = renderReport(fixture(), { ...ctx, state });
  assert.equal(html.split('<script').length - 1, 2, 'the state block and the script, nothing else');
  assert.match(html, /<script type="application\/json" id="rootrank-state" nonce="N0nce">/);
});

test('confidence of the failure and of the rank is shown, escaped', () => {
  const d = fixture();
  d.root_cause!.confidence = {
    failure: { level: 'high', reason: 'matched <its> message' },
    rank: { level: 'low', reason: 'single node assumed' },
  };
  const html = renderReport(d, ctx);
  assert.ok(html.includes('Confidence: failure high (matched &lt;its&gt; message); rank low (single node assumed)'));
  d.root_cause!.confidence = undefined;
  assert.ok(!renderReport(d, ctx).includes('Confidence:'));
});
