// No import circles in ui/js: reads every module's static `import ... from '...'` (and
// `export ... from`), follows the relative ones and fails on any cycle, printing it. Run by
// scripts/check-all.sh (node, no dependencies). Type-only JSDoc `import('...')` is not an edge.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'ui', 'js');

/** @param {string} dir @returns {string[]} */
function walk(dir) {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? walk(p) : p.endsWith('.js') ? [p] : [];
  });
}

const files = walk(root);
/** @type {Map<string, string[]>} */
const edges = new Map();
// `import { a, b } from '…'`, `import * as x from '…'`, `export { a } from '…'` (also over several
// lines), and `import '…'`.
const spec = /^\s*(?:import|export)\s+([\w$*{},\s]+?)\s*from\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]/gm;
for (const f of files) {
  const src = readFileSync(f, 'utf8');
  const to = [];
  for (const m of src.matchAll(spec)) {
    const s = m[2] ?? m[3];
    if (s.startsWith('.')) to.push(resolve(dirname(f), s));
  }
  edges.set(f, to);
}

const missing = [...edges].flatMap(([f, to]) => to.filter((t) => !edges.has(t)).map((t) => `${relative(root, f)} imports missing ${relative(root, t)}`));
for (const m of missing) console.error(m);

// Depth-first search; a grey node reached again closes a cycle.
const state = new Map(); // undefined: white, 1: grey (on stack), 2: black
const stack = [];
const cycles = [];
/** @param {string} f */
function visit(f) {
  state.set(f, 1);
  stack.push(f);
  for (const t of edges.get(f) ?? []) {
    if (state.get(t) === 1) cycles.push([...stack.slice(stack.indexOf(t)), t].map((p) => relative(root, p)).join(' -> '));
    else if (!state.get(t) && edges.has(t)) visit(t);
  }
  stack.pop();
  state.set(f, 2);
}
for (const f of files) if (!state.get(f)) visit(f);

for (const c of cycles) console.error(`import cycle: ${c}`);
if (cycles.length || missing.length) process.exit(1);
const arrows = [...edges.values()].reduce((n, to) => n + to.length, 0);
console.log(`ui/js: ${files.length} modules, ${arrows} imports, no cycles`);
