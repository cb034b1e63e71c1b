/**
 * A small, safe Markdown-to-HTML renderer for the report: paragraphs, `code spans`, fenced code, bullet and
 * numbered lists, **bold**, and [links](https://…). Every piece of text is HTML-escaped before any markup is
 * added, so server or log text can never inject HTML into the webview. Links become buttons carrying a
 * `data-href` (the webview asks the extension to open them); only http(s) targets are kept.
 */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, c => ESCAPES[c] ?? c);
}

export function isSafeUrl(url: string): boolean {
  return /^https?:\/\/[^\s"'<>]+$/i.test(url);
}

/** Inline markup of one line or paragraph: code spans first (their content stays literal), then bold and links. */
export function renderInline(text: string): string {
  const out: string[] = [];
  const parts = text.split(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/);
  // split with two groups yields [text, ticks, code, text, ticks, code, ..., text]
  for (let i = 0; i < parts.length; i += 3) {
    out.push(renderEmphasisAndLinks(parts[i] ?? ''));
    if (i + 2 < parts.length) out.push(`<code>${escapeHtml(parts[i + 2] ?? '')}</code>`);
  }
  return out.join('');
}

function renderEmphasisAndLinks(text: string): string {
  let html = '';
  const link = /\[([^\]]+)\]\(([^)\s]+)\)|<(https?:\/\/[^>\s]+)>|\*\*([^*]+)\*\*/g;
  let last = 0;
  for (let m = link.exec(text); m; m = link.exec(text)) {
    html += escapeHtml(text.slice(last, m.index));
    if (m[4] !== undefined) {
      html += `<strong>${escapeHtml(m[4])}</strong>`;
    } else {
      const label = m[1] ?? m[3] ?? '';
      const href = m[2] ?? m[3] ?? '';
      html += isSafeUrl(href)
        ? `<a href="#" class="link" data-href="${escapeHtml(href)}" title="${escapeHtml(href)}">${escapeHtml(label)}</a>`
        : escapeHtml(m[0]);
    }
    last = m.index + m[0].length;
  }
  return html + escapeHtml(text.slice(last));
}

type Block =
  | { kind: 'p'; lines: string[] }
  | { kind: 'code'; lang: string; lines: string[] }
  | { kind: 'ul' | 'ol'; items: string[] }
  | { kind: 'h'; level: number; text: string };

function parseBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] ?? '';
    const fence = /^\s*(```+|~~~+)\s*([\w+-]*)\s*$/.exec(line);
    if (fence) {
      const closer = fence[1] ?? '```';
      const code: string[] = [];
      i++;
      while (i < lines.length && !(lines[i] ?? '').trim().startsWith(closer)) code.push(lines[i++] ?? '');
      i++; // the closing fence (or the end of the text)
      blocks.push({ kind: 'code', lang: fence[2] ?? '', lines: code });
      continue;
    }
    if (!line.trim()) { i++; continue; }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      blocks.push({ kind: 'h', level: (heading[1] ?? '#').length, text: heading[2] ?? '' });
      i++;
      continue;
    }
    const bullet = /^\s*([-*+]|\d+[.)])\s+/;
    const first = bullet.exec(line);
    if (first) {
      const kind = /\d/.test(first[1] ?? '') ? 'ol' : 'ul';
      const items: string[] = [];
      while (i < lines.length && (lines[i] ?? '').trim()) {
        const cur = lines[i] ?? '';
        const m = bullet.exec(cur);
        if (m) items.push(cur.slice(m[0].length));
        else if (items.length) items[items.length - 1] = `${items[items.length - 1] ?? ''} ${cur.trim()}`; // continuation line
        i++;
      }
      blocks.push({ kind, items });
      continue;
    }
    const para: string[] = [];
    while (i < lines.length) {
      const cur = lines[i] ?? '';
      if (!cur.trim() || /^\s*(```|~~~)/.test(cur) || bullet.test(cur) || /^#{1,6}\s/.test(cur)) break;
      para.push(cur.trim());
      i++;
    }
    blocks.push({ kind: 'p', lines: para });
  }
  return blocks;
}

/** Markdown -> HTML fragment. Headings are demoted below the report's own (h4 and smaller). */
export function renderMarkdown(markdown: string): string {
  return parseBlocks(markdown).map(block => {
    switch (block.kind) {
      case 'code': {
        const lang = block.lang ? ` data-lang="${escapeHtml(block.lang)}"` : '';
        return `<pre class="code"${lang}><code>${escapeHtml(block.lines.join('\n'))}</code></pre>`;
      }
      case 'ul':
      case 'ol':
        return `<${block.kind}>${block.items.map(item => `<li>${renderInline(item)}</li>`).join('')}</${block.kind}>`;
      case 'h': {
        const level = Math.min(6, block.level + 3);
        return `<h${level}>${renderInline(block.text)}</h${level}>`;
      }
      case 'p':
        return `<p>${renderInline(block.lines.join(' '))}</p>`;
    }
  }).join('\n');
}
