import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { layoutTimeline, renderTimeline } from '../src/report/timeline';
import { rankRuns, toDiagnosis } from '../src/types';
import type { Diagnosis } from '../src/types';

const fixture = (): Diagnosis => toDiagnosis(JSON.parse(readFileSync(join(__dirname, '..', '..', 'test', 'fixtures', 'diagnosis-rank2.json'), 'utf8')));

test('one row per rank, a launcher row for rank-less events, log order when times are missing', () => {
  const lay = layoutTimeline(fixture());
  assert.deepEqual(lay.rows, [1, 2, 3, null]);
  assert.equal(lay.axis, 'order');
  assert.equal(lay.min, 15);
});

test('the initiating failure is marked and comes before the collateral symptoms', () => {
  const svg = renderTimeline(fixture());
  assert.ok(svg.startsWith('<svg'));
  const initiating = svg.indexOf('class="event initiating"');
  assert.ok(initiating > 0, 'initiating marker');
  assert.equal(svg.split('class="event initiating"').length - 1, 1, 'exactly one initiating marker');
  assert.match(svg, /<g class="event initiating" data-line="15"/);
  assert.match(svg, /<text class="row initiating"[^>]*>rank 2<\/text>/);
  // symptom markers sit to the right of the onset line
  const onset = Number(/<line class="onset" x1="([\d.]+)"/.exec(svg)?.[1]);
  const symptomXs = [...svg.matchAll(/class="dot symptom" x="([\d.]+)"/g)].map(m => Number(m[1]) + 5);
  assert.ok(symptomXs.length >= 2);
  for (const x of symptomXs) assert.ok(x > onset, `symptom at ${x} after onset ${onset}`);
});

test('uses time when every event has one', () => {
  const d = fixture();
  d.timeline = d.timeline.map((e, i) => ({ ...e, time: 100 + i * 2.5 }));
  const lay = layoutTimeline(d);
  assert.equal(lay.axis, 'time');
  assert.match(renderTimeline(d), /\+\d+(\.\d+)? s/);
});

test('event text is escaped (it comes from the log)', () => {
  const d = fixture();
  d.timeline[0]!.text = '<script>alert(1)</script>';
  const svg = renderTimeline(d);
  assert.ok(!svg.includes('<script>'));
  assert.ok(svg.includes('&lt;script&gt;'));
});

test('empty timeline draws nothing; many quiet ranks are summarised', () => {
  assert.equal(renderTimeline({ timeline: [], ranks_seen: [], root_cause: null }), '');
  const d = fixture();
  d.ranks_seen = [[0, 127]];
  const svg = renderTimeline(d, { maxRows: 8 });
  assert.match(svg, /125 ranks without events are not drawn/);
});

test('a million ranks, written as one range, are counted, not listed', () => {
  const d = fixture();
  d.ranks_seen = rankRuns('0-999999');
  const layout = layoutTimeline(d);
  assert.deepEqual(layout.rows.filter(r => r !== null), [1, 2, 3]);
  assert.equal(layout.hiddenRows, 999997);
  assert.match(renderTimeline(d), /999997 ranks without events are not drawn/);
});

test('drawn at the width the webview measured (text is never scaled down)', () => {
  const narrow = renderTimeline(fixture(), { width: 330 });
  assert.match(narrow, /viewBox="0 0 330 /);
  const wide = renderTimeline(fixture(), { width: 900 });
  assert.match(wide, /viewBox="0 0 900 /);
  assert.match(wide, /text-anchor="end">line 63<\/text>/);
});
