// Parses Mermaid flowchart text with Mermaid itself (the library GitHub and GitLab draw
// ```mermaid blocks with) and prints what it understood, as JSON, for
// tests/acceptance/cli.rs to compare with what `resolve --format mermaid` meant:
//
//   node tests/mermaid/check.mjs FILE...   ->  [{"file", "type", "vertices", "edges"}]
//
// Mermaid's parser needs a DOM only for sanitising labels; jsdom provides one, so no
// browser is involved. A file Mermaid cannot parse exits 1 with Mermaid's message.
// Labels are returned as drawn: Mermaid's entity codes (#quot;, #35;) decoded, <br>
// as a newline.
import { readFileSync } from 'node:fs';
import { JSDOM } from 'jsdom';

const dom = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import('mermaid');

// Mermaid keeps entity codes as placeholders until it draws: `#quot;` is stored as
// "ﬂ°quot¶ß" and `#35;` as "ﬂ°°35¶ß" (its encodeEntities); undo that, then decode the
// HTML as the browser would.
function drawn(text) {
  const html = String(text ?? '')
    .replace(/ﬂ°°/g, '&#')
    .replace(/ﬂ°/g, '&')
    .replace(/¶ß/g, ';')
    .replace(/<br\s*\/?>/gi, '\n');
  const area = document.createElement('textarea');
  area.innerHTML = html;
  return area.value;
}

const results = [];
for (const file of process.argv.slice(2)) {
  const text = readFileSync(file, 'utf8');
  let type;
  try {
    ({ diagramType: type } = await mermaid.parse(text));
  } catch (e) {
    console.error(`${file}: Mermaid cannot parse it: ${e.message}`);
    process.exit(1);
  }
  const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
  const db = diagram.db;
  const vertices = [...db.getVertices().values()].map((v) => ({
    id: v.id,
    text: drawn(v.text),
    shape: v.type ?? null,
    classes: v.classes ?? [],
  }));
  const edges = db.getEdges().map((e) => ({
    start: e.start,
    end: e.end,
    text: drawn(e.text),
    stroke: e.stroke,
  }));
  results.push({ file, type, vertices, edges });
}
console.log(JSON.stringify(results, null, 2));
