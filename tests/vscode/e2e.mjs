// rootrank in a real VS Code (code-server) driven through its UI by playwright-core + Debian Chromium.
// Run by run-e2e.sh, which installs everything, builds the .vsix and starts code-server.
// Env: CS_URL (workbench URL with ?folder=), OUT (screenshots folder), CHROMIUM (browser binary).
// Prints one line per check and a closing line "vscode-e2e: N passed, M failed"; exits 1 on any failure.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { chromium } from 'playwright-core';

const URL = process.env.CS_URL;
const OUT = process.env.OUT || '.';
const t0 = performance.now();
const log = (s) => console.log(`[${((performance.now() - t0) / 1000).toFixed(1)}s] ${s}`);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run', '--disable-quic', '--disable-dev-shm-usage'],
});
const context = await browser.newContext({
  viewport: { width: 1500, height: 940 }, permissions: ['clipboard-read', 'clipboard-write'],
});
const page = await context.newPage();
const consoleErrors = [];
page.on('console', m => { if (m.type() === 'error') consoleErrors.push(m.text().slice(0, 200)); });
// A beforeunload prompt (an editor with unsaved text) would keep the old page on a reload: leave it.
page.on('dialog', d => (d.type() === 'beforeunload' ? d.accept() : d.dismiss()).catch(() => {}));

let passed = 0;
let failed = 0;
let fatal = false;
async function check(name, fn) {
  if (fatal) { failed++; log(`SKIP ${name} (an earlier essential check failed)`); return false; }
  try {
    await fn();
    passed++;
    log(`ok   ${name}`);
    return true;
  } catch (e) {
    failed++;
    log(`FAIL ${name}: ${String(e?.message ?? e).split('\n')[0]}`);
    if (e?.details) console.log(e.details);  // what the check chose to show whole (a log's traceback)
    await page.screenshot({ path: `${OUT}/fail-${name}.png` }).catch(() => {});
    await page.keyboard.press('Escape').catch(() => {});
    return false;
  }
}
const shot = (name) => page.screenshot({ path: `${OUT}/${name}.png` });

// Keys typed while a webview has focus stay in the webview: give the workbench focus first. The click on
// the side bar's title can miss on a loaded machine (a toast over it, the bar mid-layout): then focus the
// workbench element itself, which takes keys the same way.
async function focusWorkbench() {
  const clicked = await page.locator('.part.sidebar .composite.title').first().click({ timeout: 5000 }).then(() => true, () => false);
  if (!clicked) await page.evaluate(() => { document.activeElement?.blur?.(); document.querySelector('.monaco-workbench')?.focus(); });
}
// Run a command from the palette. On a loaded 2-core machine the palette can open late, or re-render its
// list under the click: a timed-out click never ran the command, so open the palette again (three tries)
// and say which step timed out when the last one fails.
async function runCommand(title) {
  const input = page.locator('.quick-input-widget input');
  // click the row whose label starts with the title (Enter would run whichever row is first)
  const escaped = title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: new RegExp('^' + escaped) }).first();
  for (let attempt = 1; ; attempt++) {
    let step = 'focus the workbench';
    try {
      await focusWorkbench();
      step = 'open the command palette';
      await page.keyboard.press('F1');
      await input.waitFor({ timeout: 10000 });
      await input.fill('>' + title);
      step = `click the palette row "${title}"`;
      // the last try skips Playwright's wait for a still row: a list re-rendered under the click on a busy
      // machine never holds still for it
      await row.click({ timeout: 10000, force: attempt === 3 });
      return;
    } catch (e) {
      // a click that threw after the palette closed was taken (a reload navigates under it): never run twice
      if (step.startsWith('click') && !(await input.isVisible().catch(() => false))) return;
      const why = `${step}: ${String(e?.message ?? e).split('\n')[0]}`;
      if (attempt >= 3) throw new Error(why);
      log(`     command "${title}": ${why}; trying again`);
      await page.screenshot({ path: `${OUT}/retry-command-${attempt}.png` }).catch(() => {});
      await page.keyboard.press('Escape').catch(() => {});
    }
  }
}
async function openFile(name) {
  await page.locator('.explorer-folders-view .monaco-list-row', { hasText: name }).first().click();
  await page.locator('.tabs-container .tab.active', { hasText: name }).first().waitFor({ timeout: 20000 });
}
// An element's box, once it has one: boundingBox() is null while the element is re-rendered or hidden
// (the squiggles are redrawn when new diagnostics arrive), so ask again for a while.
async function boxOf(locator, timeout = 10000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const box = await locator.boundingBox({ timeout: Math.max(deadline - Date.now(), 1) }).catch(() => null);
    if (box) return box;
    if (Date.now() > deadline) throw new Error('no bounding box for ' + locator);
    await page.waitForTimeout(200);
  }
}
// Monaco renders spaces as U+00A0
const editorText = async () => (await page.locator('.editor-instance .monaco-editor .view-lines').first().innerText()).replace(/\u00a0/g, ' ');
// The report webview: an iframe (the webview host) holding the content iframe.
function report() {
  return page.locator('iframe.webview.ready').last().contentFrame().locator('iframe#active-frame').contentFrame();
}
async function setTheme(name) {
  await runCommand('Preferences: Color Theme');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Light Modern' }).first().waitFor({ timeout: 10000 });
  await page.keyboard.type(name);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: new RegExp('^' + name) }).first().click({ timeout: 10000 });
  await page.waitForTimeout(800);  // the webview re-themes asynchronously
}

// Click an item of an open context menu; a click during the menu's opening animation can be lost, so
// click again until the menu closes.
async function clickMenuItem(text) {
  const item = page.locator('.monaco-menu .action-item', { hasText: text }).first();
  await item.waitFor({ timeout: 10000 });
  for (let attempt = 1; ; attempt++) {
    await item.hover();
    await item.locator('.action-label').click({ timeout: 5000 }).catch(() => {});
    try { await item.waitFor({ state: 'detached', timeout: 2000 }); return; } catch (e) {
      if (attempt === 4) throw new Error(`menu item "${text}" did not run`);
    }
  }
}

// Reload the workbench and wait for the new page (not the old one that is going away).
// On a loaded machine the command can be lost (the palette closes before the row is clicked) or the
// workbench can take long to unload: after 30 s without a navigation the page is reloaded as a browser
// would (the same thing for the web workbench).
async function reloadWindow() {
  for (let attempt = 1; ; attempt++) {
    // settled at once (null, or the timeout): a page reload slower than 30 s must not leave it rejected
    // with no one awaiting it, which ends node
    const navigated = page.waitForEvent('framenavigated', { predicate: f => f === page.mainFrame(), timeout: 30000 })
      .then(() => null, e => e);
    // a modal dialog (a prompt the extension raised on the settings change) keeps the palette from taking
    // the click: then reload the page as a browser would
    const modal = await page.locator('.monaco-dialog-box').count() > 0;
    if (attempt === 1 && !modal) await runCommand('Developer: Reload Window').catch(e => log(`reload: ${String(e).split('\n')[0]}`));
    else await page.reload({ waitUntil: 'commit', timeout: 60000 }).catch(() => {});
    const failed = await navigated;
    if (!failed) break;
    if (attempt === 3) throw failed;
    log(`reload: no navigation 30 s after ${attempt === 1 && !modal ? '"Developer: Reload Window"' : 'a page reload'}; reloading the page`);
  }
  await page.waitForLoadState('load');
  await page.waitForSelector('.explorer-folders-view .monaco-list-row', { timeout: 60000 });
}

await page.goto(URL);

// 1. the workbench loads and the extension's server starts
await check('workbench', async () => {
  await page.waitForSelector('.explorer-folders-view .monaco-list-row', { timeout: 90000 });
}) || (fatal = true);

// 2. squiggle on the checkpoint call, from the server
await check('squiggle-on-checkpoint-call', async () => {
  await openFile('train.py');
  await page.waitForSelector('.squiggly-warning, .squiggly-error', { timeout: 45000 });
  await runCommand('View: Focus Problems');
  await page.locator('.markers-panel .monaco-list-row', { hasText: 'use_reentrant' }).first().waitFor({ timeout: 10000 });
  await shot('1-squiggle-problems');
}) || (fatal = true);

// 3. the server's hover (the checkpoint mode explanation, not only VS Code's diagnostic hover)
await check('hover', async () => {
  await page.locator('.editor-instance .view-lines').first().click();
  const sq = page.locator('.squiggly-warning, .squiggly-error').first();
  const box = await boxOf(sq);
  await page.mouse.move(box.x + 4, box.y + box.height / 2);
  await page.mouse.move(box.x + box.width / 3, box.y + box.height / 2);
  await page.locator('.monaco-hover', { hasText: 'checkpoint.use-reentrant-explicit' })
    .filter({ hasText: /Reentrant|reentrant/ }).first().waitFor({ timeout: 15000 });
  await shot('2-hover');
  await page.keyboard.press('Escape');
});

// 4. the quick fix from the server, applied through the lightbulb menu; the warning clears
await check('quick-fix', async () => {
  const sq = page.locator('.squiggly-warning, .squiggly-error').first();
  const box = await boxOf(sq);
  await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
  const item = page.locator('.action-widget .monaco-list-row', { hasText: 'use_reentrant=False' }).first();
  // Ctrl+. right after the diagnostic arrives can come back empty: ask again, up to 4 times
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press('Control+.');
    try { await item.waitFor({ timeout: 5000 }); break; } catch (e) {
      if (attempt === 4) throw e;
      await page.keyboard.press('Escape');
      const again = await boxOf(sq);
      await page.mouse.click(again.x + again.width / 2, again.y + again.height / 2);
    }
  }
  await shot('3-quickfix-menu');
  await item.click();
  await page.waitForFunction(() => document.querySelector('.editor-instance .view-lines')?.innerText.includes('use_reentrant=False'),
    null, { timeout: 10000 });
  await page.waitForSelector('.squiggly-warning', { state: 'detached', timeout: 15000 });
  if (!(await editorText()).includes('checkpoint(block, x, use_reentrant=False)')) throw new Error('fix not in the text');
});

// 4b. source.fixAll.rootrank on save (enabled in settings.json): the safe fix is applied when the file is saved
await check('fix-all-on-save', async () => {
  await openFile('fixall.py');
  await page.locator('.editor-group-container.active .squiggly-warning').first().waitFor({ timeout: 30000 });
  await page.locator('.editor-group-container.active .editor-instance .view-lines').first().click();
  await page.keyboard.press('Control+S');
  await page.waitForFunction(() => document.querySelector('.editor-group-container.active .editor-instance .view-lines')
    ?.innerText.replace(/\u00a0/g, ' ').includes('checkpoint(block, x, use_reentrant=True)'), null, { timeout: 15000 });
  await page.locator('.tabs-container .tab.active.dirty', { hasText: 'fixall.py' }).waitFor({ state: 'detached', timeout: 10000 });
  const saved = readFileSync(join(process.env.WS, 'fixall.py'), 'utf8');
  if (!saved.includes('use_reentrant=True')) throw new Error('the fix is not on disk');
});

// 5. Diagnose a selected multi-rank traceback from the editor's context menu: the report names rank 2
await check('diagnose-selection-report', async () => {
  await openFile('crash.log');
  await page.locator('.editor-instance .view-lines').first().click();
  await page.keyboard.press('Control+A');
  const lines = page.locator('.editor-instance .view-lines').first();
  const box = await boxOf(lines);
  await page.mouse.click(box.x + 80, box.y + 40, { button: 'right' });
  await clickMenuItem('Diagnose Selection');
  const r = report();
  await r.locator('h1', { hasText: 'Uncaught Python exception' }).waitFor({ timeout: 30000 });
  await r.locator('.rank-badge', { hasText: 'initiating rank 2' }).waitFor({ timeout: 5000 });
  await r.locator('svg.timeline .event.initiating').waitFor({ timeout: 5000 });
  await r.locator('#collateral', { hasText: 'ranks 1, 3' }).waitFor({ timeout: 5000 });
  await page.waitForTimeout(500);
  await shot('4-report-dark');
});

// 6. an evidence line in the report reveals the log line in the editor
await check('evidence-reveals-line', async () => {
  await report().locator('#evidence a.lineref[data-line="15"]').click();
  await page.locator('.statusbar-item', { hasText: /Ln 15, Col/ }).first().waitFor({ timeout: 10000 });
});

// 7. Copy as Markdown puts the server's markdown on the clipboard
await check('copy-as-markdown', async () => {
  await report().locator('button[data-action="copyMarkdown"]').click();
  await page.waitForFunction(async () => (await navigator.clipboard.readText()).includes('Root cause'), null, { timeout: 10000 });
});

// 7b. the fix and verify sections; "Run in terminal" asks before running anything
await check('verify-asks-first', async () => {
  const r = report();
  await r.locator('#fix pre.code, #fix p').first().waitFor({ timeout: 5000 });
  await r.locator('#verify').scrollIntoViewIfNeeded();
  await shot('4b-report-fix-verify-dark');
  await r.locator('button[data-action="runVerify"]').click();
  const dialog = page.locator('.monaco-dialog-box', { hasText: 'Run the verify command' });
  await dialog.waitFor({ timeout: 10000 });
  await shot('4c-verify-confirm');
  await dialog.locator('.monaco-button', { hasText: 'Cancel' }).click();
  await dialog.waitFor({ state: 'detached', timeout: 5000 });
  if (await page.locator('.terminal-tab, .single-terminal-tab', { hasText: 'rootrank verify' }).count()) throw new Error('ran without asking');
});

// 8. the report in light and high-contrast themes
await check('report-light-theme', async () => {
  await setTheme('Light Modern');
  await report().locator('h1', { hasText: 'Uncaught Python exception' }).waitFor({ timeout: 10000 });
  const cls = await report().locator('body').getAttribute('class');
  if (!/vscode-light/.test(cls ?? '')) throw new Error(`webview body class is ${cls}`);
  await report().locator('header').scrollIntoViewIfNeeded();
  await shot('5-report-light');
  await setTheme('Dark High Contrast');
  await shot('6-report-high-contrast');
  await setTheme('Dark Modern');
});

// 9. a failed terminal command: the notification offers Diagnose, which opens the report
await check('terminal-failed-command', async () => {
  await runCommand('Terminal: Create New Terminal');
  const xterm = page.locator('.terminal-wrapper .xterm').first();
  await xterm.waitFor({ timeout: 15000 });
  await page.waitForTimeout(2500);  // the shell starts and shell integration reports in
  await xterm.click();
  await page.keyboard.type('python3 crash.py');
  await page.keyboard.press('Enter');
  const toast = page.locator('.notification-toast', { hasText: 'failed (exit 1)' }).filter({ hasText: 'rank 2' });
  await toast.waitFor({ timeout: 30000 });
  await shot('7-terminal-notification');
  await toast.locator('.monaco-button', { hasText: 'Diagnose' }).click();
  const r = report();
  await r.locator('.origin', { hasText: 'python3 crash.py (exit 1)' }).waitFor({ timeout: 15000 });
  await r.locator('.rank-badge', { hasText: 'initiating rank 2' }).waitFor({ timeout: 5000 });
  await shot('8-report-from-terminal');
});

// 9a. the palette command on the last failed command; its evidence opens the captured output in an editor
await check('diagnose-last-failed-command', async () => {
  await runCommand('rootrank: Diagnose Last Failed Terminal Command');
  const r = report();
  await r.locator('.origin', { hasText: 'python3 crash.py (exit 1)' }).waitFor({ timeout: 15000 });
  const ref = r.locator('#evidence a.lineref').first();
  const line = Number(await ref.getAttribute('data-line'));
  await ref.click();
  await page.locator('.tabs-container .tab.active', { hasText: 'terminal output.log' }).waitFor({ timeout: 10000 });
  await page.locator('.statusbar-item', { hasText: new RegExp(`Ln ${line}, Col`) }).first().waitFor({ timeout: 10000 });
  const active = (await page.locator('.editor-group-container.active .editor-instance .view-lines').first().innerText()).replace(/\u00a0/g, ' ');
  if (!active.includes('ValueError: random_crop')) throw new Error('the captured output is not in the editor');
  await shot('8b-terminal-evidence-in-editor');
});

// 9b. the terminal's selection (copied through the clipboard, which is restored afterwards)
await check('terminal-selection', async () => {
  await page.evaluate(() => navigator.clipboard.writeText('user clipboard'));
  await page.locator('.terminal-wrapper .xterm').first().click();
  await runCommand('Terminal: Select All');
  await runCommand('rootrank: Diagnose Terminal Selection');
  await report().locator('.origin', { hasText: /^terminal selection$/ }).waitFor({ timeout: 15000 });
  await report().locator('.rank-badge', { hasText: 'initiating rank 2' }).waitFor({ timeout: 5000 });
  await page.waitForFunction(async () => (await navigator.clipboard.readText()) === 'user clipboard', null, { timeout: 5000 });
});

// 9c. rootrank watch in the integrated terminal: the status bar follows the job; a stall notifies
await check('watch-status-bar', async () => {
  await runCommand('Terminal: Create New Terminal');  // created after activation: it has the status folder
  await page.waitForTimeout(2500);
  await page.locator('.terminal-wrapper .xterm').last().click();
  const py = process.env.RR_PY || 'python3';
  await page.keyboard.type(`${py} -m rootrank watch --stall 2 -- ${py} stall.py`);
  await page.keyboard.press('Enter');
  const item = page.locator('.statusbar-item', { hasText: /rootrank: .*stalled \d+ s at stall\.py:7/ });
  await item.first().waitFor({ timeout: 60000 });
  const toast = page.locator('.notification-toast', { hasText: /rootrank: .*stalled/ });
  await toast.waitFor({ timeout: 15000 });
  await shot('8c-watch-stalled');
  await toast.locator('.monaco-button', { hasText: 'Open Report' }).click();
  await page.locator('.tabs-container .tab', { hasText: /stacks-1\.txt/ }).waitFor({ timeout: 15000 });
  // Ctrl-C in the terminal, as a user stops the job (killing the terminal left rootrank running there)
  await runCommand('Terminal: Focus Terminal');
  await page.keyboard.press('Control+C');
  await item.first().waitFor({ state: 'hidden', timeout: 60000 });
  await runCommand('Terminal: Kill the Active Terminal Instance');
});

// 9d. rootrank: Watch Terminal: attach to a command already running in the terminal (shell integration);
//     the failure it prints while it still runs gives the status bar item and a notification
await check('watch-terminal', async () => {
  await runCommand('Terminal: Create New Terminal');
  await page.waitForTimeout(2500);  // the shell starts and shell integration reports in
  await page.locator('.terminal-wrapper .xterm').last().click();
  await page.keyboard.type('python3 fails_later.py');
  await page.keyboard.press('Enter');
  await page.waitForTimeout(1500);  // it runs: attach now, mid-run
  await runCommand('rootrank: Watch Terminal');
  const toast = page.locator('.notification-toast', { hasText: /rootrank: failed: rank 2/ });
  await toast.waitFor({ timeout: 40000 });
  await page.locator('.statusbar-item', { hasText: /rootrank: failed: rank 2/ }).first().waitFor({ timeout: 10000 });
  await shot('8d-watch-terminal-failed');
  await runCommand('Terminal: Focus Terminal');
  await page.keyboard.press('Control+C');
  await runCommand('Terminal: Kill the Active Terminal Instance');
});

// 9e. the workspace's failed logs in a tree view (the server scans them); a click opens the report
await check('failed-logs-view', async () => {
  await runCommand('rootrank: Scan Workspace for Failed Logs');
  // the row of this view (the explorer's own file list has the file too)
  const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Failed Logs' }) });
  const row = pane.locator('.monaco-list-row', { hasText: 'slurm-4000123.out' });
  await row.first().waitFor({ timeout: 60000 });
  const text = await row.first().innerText();
  if (!text.includes('A node of the Slurm allocation failed')) throw new Error(`no root cause beside the file: ${text}`);
  await shot('8e-failed-logs-view');
  await row.first().click();
  await report().locator('.origin', { hasText: /slurm-4000123\.out/ }).waitFor({ timeout: 20000 });
});

// 10. Diagnose a log file from the explorer's context menu
await check('explorer-diagnose-file', async () => {
  await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'crash.log' }).first().click({ button: 'right' });
  await clickMenuItem('Diagnose Log File');
  await report().locator('.origin', { hasText: /^crash\.log$/ }).waitFor({ timeout: 15000 });
  await report().locator('.rank-badge', { hasText: 'initiating rank 2' }).waitFor({ timeout: 5000 });
});

// 11. the report survives a window reload; a missing interpreter gets a clear notification saying what to do;
//     fixing the setting restarts the server
await check('missing-python-then-restart', async () => {
  const settingsPath = process.env.SETTINGS;
  const original = readFileSync(settingsPath, 'utf8');
  const settings = JSON.parse(original);
  writeFileSync(settingsPath, JSON.stringify({ ...settings, 'rootrank.interpreter': ['/nonexistent/bin/python3'] }, null, 2));
  // code-server does not always notice an outside change to settings.json: reload the window to be sure
  await reloadWindow();
  // the open report survives the reload (WebviewPanelSerializer + the state kept in the webview)
  await report().locator('.rank-badge', { hasText: 'initiating rank 2' }).waitFor({ timeout: 30000 });
  await openFile('train.py');  // activates the extension (onLanguage:python)
  const toast = page.locator('.notification-toast', { hasText: 'rootrank could not run' }).filter({ hasText: 'not found' });
  await toast.waitFor({ timeout: 30000 });
  await toast.locator('.monaco-button', { hasText: 'Open Settings' }).waitFor({ timeout: 5000 });
  await shot('9-missing-python');
  await toast.locator('.codicon-notifications-clear, .codicon-close').first().click().catch(() => {});
  writeFileSync(settingsPath, JSON.stringify(settings, null, 2));
  await reloadWindow();
  // the server starts again with the good interpreter and answers Diagnose Clipboard
  await page.evaluate(t => navigator.clipboard.writeText(t), readFileSync(process.env.CRASH_LOG, 'utf8'));
  await runCommand('rootrank: Diagnose Clipboard');
  await report().locator('.origin', { hasText: /^clipboard$/ }).waitFor({ timeout: 30000 });
  await report().locator('.rank-badge', { hasText: 'initiating rank 2' }).waitFor({ timeout: 5000 });
});

// 11a. Measure Checkpointing: asks what to measure, runs the probe in the workspace's interpreter, shows
// the chart; then the hover on the checkpoint call shows the measured numbers
await check('measure-checkpointing', async () => {
  // the command asks what to measure, then which factory. On a loaded machine a palette click can be lost, or
  // a late notification can take the focus between the two questions: start over until the second one shows.
  const factory = page.locator('.quick-input-list .monaco-list-row', { hasText: 'A factory' }).first();
  const factoryQuestion = page.locator('.quick-input-widget', { hasText: 'rootrank: factory' });
  for (let attempt = 1; ; attempt++) {
    await runCommand('rootrank: Measure Checkpointing');
    const asked = await factory.waitFor({ timeout: 15000 }).then(() => true, () => false)
      && await factory.click({ timeout: 10000 }).then(() => true, () => factory.click({ timeout: 5000, force: true }).then(() => true, () => false))
      && await factoryQuestion.waitFor({ timeout: 10000 }).then(() => true, () => false);
    if (asked) break;
    if (attempt >= 3) throw new Error('"rootrank: Measure Checkpointing" did not ask for a factory');
    log(`     measure: no question for a factory (attempt ${attempt}); running the command again`);
    await page.screenshot({ path: `${OUT}/retry-measure-${attempt}.png` }).catch(() => {});
    await page.keyboard.press('Escape').catch(() => {});
  }
  const input = page.locator('.quick-input-widget input');
  await input.fill('measure_model:build');
  await page.keyboard.press('Enter');
  const chart = report().locator('svg.chart');
  await chart.waitFor({ timeout: 120000 });
  const rows = await report().locator('svg.chart g.block').count();
  if (rows !== 4) throw new Error(`${rows} block rows in the chart`);
  await report().locator('tr[data-config="plan"]').waitFor({ timeout: 5000 });
  await report().locator('code', { hasText: 'checkpoint.partial-coverage' }).first().waitFor({ timeout: 5000 });
  await shot('11-measure-chart');
  // one wide editor, so the checkpoint call on its line is on screen
  await runCommand('View: Close All Editor Groups');
  // the files the earlier checks edited are not saved: drop those edits
  const dontSave = page.locator('.monaco-dialog-box .monaco-button', { hasText: "Don't Save" });
  await dontSave.click({ timeout: 5000 }).catch(() => {});
  await openFile('measure_model.py');
  // the cursor on the call (line 23, inside `checkpoint`), then the hover from the keyboard: no mouse
  // geometry to race with the editor's layout
  await page.locator('.editor-instance .view-lines').first().click();
  await runCommand('Go to Line/Column...');
  await page.keyboard.type('23:17');
  await page.keyboard.press('Enter');
  await runCommand('Show or Focus Hover');
  await page.locator('.monaco-hover', { hasText: 'Last measurement' }).filter({ hasText: 'layers.0-1' }).first().waitFor({ timeout: 20000 });
  await shot('12-measure-hover');
  await page.keyboard.press('Escape');
});

// 11b. the extension's output channel
await check('show-log', async () => {
  // On a loaded 2-core machine the panel can open after the palette closes, or the palette click can be
  // lost: try twice before calling it a failure.
  const channelText = page.locator('.part.panel .output-view, .part.panel .monaco-editor', { hasText: /starting:|\[info\]/ }).first();
  for (let attempt = 1; ; attempt++) {
    await runCommand('rootrank: Show Server Log');
    try {
      await channelText.waitFor({ timeout: 15000 });
      break;
    } catch (e) {
      if (attempt >= 2) throw e;
      log('     show-log: the output panel did not show the channel; trying again');
      await page.screenshot({ path: `${OUT}/retry-show-log.png` }).catch(() => {});
      await page.keyboard.press('Escape').catch(() => {});
    }
  }
  await shot('10-output-channel');
});

// A Jupyter notebook: the server checks the cells as one module (the import sits in another cell) and the
// squiggle shows in the cell that calls checkpoint(), with the entry's hover.
await check('notebook-cell-squiggle', async () => {
  await openFile('notebook.ipynb');
  const cell = page.locator('.notebook-editor .cell-editor-container .squiggly-warning, .notebook-editor .cell-editor-container .squiggly-error');
  await cell.first().waitFor({ timeout: 60000 });
  await runCommand('View: Focus Problems');
  await page.locator('.markers-panel .monaco-list-row', { hasText: 'use_reentrant' }).first().waitFor({ timeout: 10000 });
  await shot('11-notebook-cell');
});

// 11c. "Try a Sample Failure" (after the reload checks, which expect the earlier report): the bundled real
// log opens in an editor, and its report names rank 0 and says that the checkpoint being written when it
// was killed may be partial
await check('try-sample-failure', async () => {
  await runCommand('rootrank: Try a Sample Failure');
  const r = report();
  await r.locator('.origin', { hasText: /^hf-trainer-2-ranks-killed-during-checkpoint-save\.log$/ }).waitFor({ timeout: 15000 });
  await r.locator('.rank-badge', { hasText: 'initiating rank 0' }).waitFor({ timeout: 5000 });
  await r.getByText('may be partial').first().waitFor({ timeout: 5000 });
  await page.locator('.tabs-container .tab', { hasText: 'hf-trainer-2-ranks-killed-during-checkpoint-save.log' }).first()
    .waitFor({ timeout: 5000 });
  await shot('10b-sample-failure');
});

// 11d. an interpreter named by the workspace's own settings (a cloned repository's .vscode/settings.json) runs
// only after a modal prompt; the answer is kept for the workspace; refused, the user's own interpreter runs
await check('workspace-interpreter-asks-first', async () => {
  const wsSettings = join(process.env.WS, '.vscode', 'settings.json');
  const before = existsSync(wsSettings) ? readFileSync(wsSettings, 'utf8') : undefined;
  const serverLog = () => readdirSync(process.env.LOGS_DIR, { recursive: true }).filter(f => String(f).endsWith('rootrank.log'))
    .map(f => readFileSync(join(process.env.LOGS_DIR, String(f)), 'utf8')).join('\n');
  const starts = (commandLine) => serverLog().split('\n').filter(l => l.includes(`starting: ${commandLine} -m rootrank lsp`)).length;
  async function waitFor(what, predicate, timeout = 60000) {
    const deadline = Date.now() + timeout;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error('timed out waiting for ' + what);
      await page.waitForTimeout(500);
    }
  }
  const prompt = page.locator('.monaco-dialog-box', { hasText: "This workspace's settings ask rootrank" });
  const setWorkspaceInterpreter = (value) => {
    mkdirSync(dirname(wsSettings), { recursive: true });
    writeFileSync(wsSettings, JSON.stringify({ ...(before ? JSON.parse(before) : {}), 'rootrank.interpreter': value }, null, 2));
  };
  try {
    const mine = `${process.env.RR_PY} -X utf8`;
    setWorkspaceInterpreter([process.env.RR_PY, '-X', 'utf8']);
    await reloadWindow();
    await openFile('train.py');  // activates the extension
    await prompt.waitFor({ timeout: 60000 });
    if (starts(mine)) throw new Error('the workspace interpreter ran before the prompt was answered');
    await shot('11d-workspace-interpreter-prompt');
    await prompt.locator('.monaco-button', { hasText: /^Allow$/ }).click();
    await waitFor('the allowed interpreter to start the server', () => starts(mine) === 1);
    // remembered: no prompt after a reload, the same interpreter runs again
    await reloadWindow();
    await openFile('train.py');
    await waitFor('the server to start again without asking', () => starts(mine) === 2);
    if (await prompt.count()) throw new Error('asked again after Allow');
    // another command line from the workspace, refused: the user's interpreter runs, never the workspace's
    const evil = '/nonexistent/evil/python';
    setWorkspaceInterpreter([evil]);
    const userStarts = starts(process.env.RR_PY);
    await reloadWindow();
    await openFile('train.py');
    await prompt.waitFor({ timeout: 60000 });
    await prompt.locator('.monaco-button', { hasText: 'Use Default Interpreter' }).click();
    await waitFor('the user\'s interpreter to start the server', () => starts(process.env.RR_PY) > userStarts);
    if (!serverLog().includes(`not running the interpreter from this workspace's settings (${evil})`)) {
      throw new Error('the refusal is not in the log');
    }
    if (await page.locator('.notification-toast', { hasText: 'rootrank could not run' }).count()) {
      throw new Error('the refused interpreter was tried');
    }
  } finally {
    if (before === undefined) rmSync(wsSettings, { force: true }); else writeFileSync(wsSettings, before);
    await reloadWindow().catch(() => {});
  }
});

// 12. the extension's log (client + server): the settings it sent were understood, nothing crashed
await check('server-log-clean', async () => {
  const logs = readdirSync(process.env.LOGS_DIR, { recursive: true }).filter(f => String(f).endsWith('rootrank.log'));
  if (!logs.length) throw new Error('no rootrank.log under ' + process.env.LOGS_DIR);
  const text = logs.map(f => readFileSync(join(process.env.LOGS_DIR, String(f)), 'utf8')).join('\n');
  const lines = text.split('\n');
  const problem = /unknown setting|Traceback|failed on|could not read the client's settings|did not start|diagnosis failed/;
  // a traceback comes with the 30 lines after it (down to its exception), so that a CI log alone tells what broke
  const bad = lines.flatMap((l, i) => !problem.test(l) ? [] : l.includes('Traceback') ? [lines.slice(i, i + 31).join('\n')] : [l]);
  if (bad.length) throw Object.assign(new Error(`log problems (${bad.length})`), { details: bad.slice(0, 5).join('\n') });
});

if (failed) console.log('browser console errors (first 10):\n  ' + consoleErrors.slice(0, 10).join('\n  '));
await browser.close();
console.log(`vscode-e2e: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
