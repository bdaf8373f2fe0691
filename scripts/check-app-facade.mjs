// `app/` decides nothing (ARCHITECTURE.md, "The facade rule"): reads every non-test function of
// crates/gpurent-core/src/app/*.rs and fails on what a facade method must not hold:
//   long     a body over MAX_BODY non-blank lines
//   match    `match` or `matches!`
//   if       `if` (incl. `if let`, `else if`)
//   loop     `for`/`while`/`loop`, or an iterator that decides over rows (filter, find, fold, sum, …)
//   const    a domain constant: an integer literal ≥ 10, a float, a SCREAMING_CASE name; or a
//            `const`/`static` item of the file
//   sibling  a call on `self`/`app` into a method that another facade file defines (mod.rs and
//            ctx.rs and login.rs are the shared core, not siblings)
//   time     `Instant::now`, `SystemTime::now`, `sleep(` (not the injected `clock.sleep(`)
// scripts/app-facade-allow.txt names the violations that remain today, one function per line. The
// check fails on a violation the list does not name AND on a listed one that is gone, so the list
// can only shrink: `--shrink` rewrites it without the gone ones. Run by scripts/check-all.sh (node,
// no dependencies; it runs before anything compiles). Its own tests: scripts/test-check-app-facade.mjs.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const MAX_BODY = 15;
/** Calls into a sibling facade file, counted over the last `check` (for `--stats`). */
let siblingCalls = 0;
const SHARED = new Set(['mod.rs', 'ctx.rs', 'login.rs']);
const ROW_ITER = ['filter', 'filter_map', 'find', 'find_map', 'fold', 'sum', 'any', 'all', 'position', 'retain', 'max_by', 'min_by', 'max_by_key', 'min_by_key', 'sort', 'sort_by', 'sort_by_key', 'partition', 'take_while', 'skip_while', 'dedup', 'dedup_by_key'];

/**
 * Blank out comments, string and char literals (keeping line breaks and lengths), so that
 * braces and keywords inside them are not read as code.
 * @param {string} src
 */
export function strip(src) {
  const out = src.split('');
  const blank = (/** @type {number} */ a, /** @type {number} */ b) => {
    for (let k = a; k < b; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src[i];
    const d = src[i + 1];
    if (c === '/' && d === '/') {
      let j = i;
      while (j < n && src[j] !== '\n') j++;
      blank(i, j);
      i = j;
    } else if (c === '/' && d === '*') {
      let depth = 0;
      let j = i;
      while (j < n) {
        if (src[j] === '/' && src[j + 1] === '*') (depth++, (j += 2));
        else if (src[j] === '*' && src[j + 1] === '/') {
          depth--;
          j += 2;
          if (depth === 0) break;
        } else j++;
      }
      blank(i, j);
      i = j;
    } else if ((c === 'r' || (c === 'b' && d === 'r')) && /^(b?r)(#*)"/.test(src.slice(i, i + 260)) && !/\w/.test(src[i - 1] ?? '')) {
      const m = /^(b?r)(#*)"/.exec(src.slice(i, i + 260));
      const open = /** @type {RegExpExecArray} */ (m)[0].length;
      const close = '"' + /** @type {RegExpExecArray} */ (m)[2];
      const end = src.indexOf(close, i + open);
      const j = end < 0 ? n : end + close.length;
      blank(i + open, j - close.length);
      i = j;
    } else if (c === '"') {
      let j = i + 1;
      while (j < n && src[j] !== '"') j += src[j] === '\\' ? 2 : 1;
      blank(i + 1, j);
      i = j + 1;
    } else if (c === "'") {
      // A char literal ('x', '\n', '\u{1F600}') or a lifetime ('a, 'static).
      if (d === '\\') {
        let j = i + 2;
        while (j < n && src[j] !== "'") j++;
        blank(i + 1, j);
        i = j + 1;
      } else {
        const cp = src.codePointAt(i + 1) ?? 0;
        const w = cp > 0xffff ? 2 : 1;
        if (src[i + 1 + w] === "'") {
          blank(i + 1, i + 1 + w);
          i += 2 + w;
        } else i++;
      }
    } else i++;
  }
  return out.join('');
}

/** @param {string} s @param {number} i index of an opening brace @returns {number} index of its match */
function closing(s, i) {
  let depth = 0;
  for (let j = i; j < s.length; j++) {
    if (s[j] === '{') depth++;
    else if (s[j] === '}' && --depth === 0) return j;
  }
  return s.length - 1;
}

/**
 * The items of one file: its functions (top-level and in `impl` blocks, not in `#[cfg(test)]`
 * modules) and its `const`/`static` items.
 * @param {string} code stripped source
 * @returns {{fns: {name: string, body: string, start: number}[], consts: string[]}}
 */
export function items(code) {
  /** @type {{name: string, body: string, start: number}[]} */
  const fns = [];
  /** @type {string[]} */
  const consts = [];
  /** @param {number} from @param {number} to @param {string} owner */
  const scan = (from, to, owner) => {
    let i = from;
    let cfgTest = false;
    while (i < to) {
      const rest = code.slice(i, Math.min(to, i + 400));
      let m;
      if ((m = /^#\[cfg\(test\)\]/.exec(rest))) {
        cfgTest = true;
        i += m[0].length;
      } else if ((m = /^#!?\[/.exec(rest))) {
        let depth = 0;
        let j = i + m[0].length - 1;
        for (; j < to; j++) {
          if (code[j] === '[') depth++;
          else if (code[j] === ']' && --depth === 0) break;
        }
        i = j + 1;
      } else if ((m = /^(?:pub(?:\([\w:\s]+\))?\s+)?mod\s+(\w+)\s*([;{])/.exec(rest))) {
        if (m[2] === ';') {
          i += m[0].length;
        } else {
          const close = closing(code, i + m[0].length - 1);
          if (!cfgTest) scan(i + m[0].length, close, owner);
          i = close + 1;
        }
        cfgTest = false;
      } else if ((m = /^(?:unsafe\s+)?impl\b/.exec(rest))) {
        const open = code.indexOf('{', i);
        const head = code.slice(i, open);
        // `impl<T> Trait for Type<T>` and `impl Type` are owned by `Type`.
        const h = head.replace(/\bwhere\b[\s\S]*$/, '');
        const ty = /\bfor\s+(?:[\w:]+::)?(\w+)/.exec(h) ?? /^(?:unsafe\s+)?impl(?:<[^{]*?>)?\s+(?:[\w:]+::)?(\w+)/.exec(h);
        const close = closing(code, open);
        if (!cfgTest) scan(open + 1, close, ty ? ty[1] : '?');
        i = close + 1;
        cfgTest = false;
      } else if ((m = /^(?:pub(?:\([\w:\s]+\))?\s+)?(?:const\s+|async\s+|unsafe\s+|extern\s+"\s*"\s+)*fn\s+(\w+)/.exec(rest))) {
        // The body is the first `{` outside parentheses, brackets and angle brackets of the
        // signature; a `;` first means a declaration without one.
        let j = i + m[0].length;
        let depth = 0;
        for (; j < to; j++) {
          const ch = code[j];
          if (ch === '(' || ch === '[') depth++;
          else if (ch === ')' || ch === ']') depth--;
          else if (depth === 0 && (ch === '{' || ch === ';')) break;
        }
        if (code[j] === ';') {
          i = j + 1;
        } else {
          const close = closing(code, j);
          if (!cfgTest) fns.push({ name: owner ? `${owner}::${m[1]}` : m[1], body: code.slice(j + 1, close), start: j });
          i = close + 1;
        }
        cfgTest = false;
      } else if ((m = /^(?:pub(?:\([\w:\s]+\))?\s+)?(?:const|static)\s+(?:mut\s+)?([A-Z_][A-Z0-9_]*)\s*:/.exec(rest))) {
        if (!cfgTest) consts.push(m[1]);
        i = code.indexOf(';', i) + 1;
        cfgTest = false;
      } else if ((m = /^[\w(]/.exec(rest)) && /^(?:pub|struct|enum|type|use|trait|macro_rules|extern)\b/.test(rest)) {
        // Any other item: skip to its end (`;` or its braces), whichever comes first.
        let j = i;
        let depth = 0;
        for (; j < to; j++) {
          const ch = code[j];
          if (ch === '(' || ch === '[' || ch === '<') depth++;
          else if (ch === ')' || ch === ']' || ch === '>') depth = Math.max(0, depth - 1);
          else if (ch === ';' && depth === 0) break;
          else if (ch === '{') {
            j = closing(code, j);
            // `struct X { .. }` and `trait T { .. }` end at their brace; `struct X(..);` at `;`.
            break;
          }
        }
        i = j + 1;
        cfgTest = false;
      } else i++;
    }
  };
  scan(0, code.length, '');
  return { fns, consts };
}

/**
 * @param {string} body stripped body of a function
 * @param {(name: string) => boolean} sibling whether `name` is a method another facade file defines
 * @returns {string[]} the rules it breaks, sorted
 */
export function violations(body, sibling) {
  const found = new Set();
  const lines = body.split('\n').filter((l) => l.trim() !== '');
  if (lines.length > MAX_BODY) found.add('long');
  if (/\bmatch\b|\bmatches!/.test(body)) found.add('match');
  if (/\bif\b/.test(body)) found.add('if');
  if (/\b(?:for|while|loop)\b/.test(body) || new RegExp(`\\.\\s*(?:${ROW_ITER.join('|')})\\s*\\(`).test(body)) found.add('loop');
  // Not `for<'a>` bounds nor `impl X for Y` (no items are nested in a facade body).
  const numbers = [...body.matchAll(/(?<![\w.])\d[\d_]*(\.\d+)?/g)];
  if (numbers.some((m) => m[1] || Number(m[0].replace(/_/g, '')) >= 10) || /(?<!\w)[A-Z][A-Z0-9]*_[A-Z0-9_]+\b/.test(body)) found.add('const');
  if (/\bInstant::now\b|\bSystemTime::now\b|(?<!\.\s*)\bsleep\s*\(/.test(body)) found.add('time');
  const calls = [...body.matchAll(/\b(?:self|app)(?:\.(?:app|0))?\s*\.\s*(\w+)\s*(?:::<[^>]*>)?\s*\(/g)].filter((m) => sibling(m[1]));
  if (calls.length) found.add('sibling');
  siblingCalls += calls.length;
  return [...found].sort();
}

/**
 * @param {{name: string, text: string}[]} files the facade files (`mod.rs` among them)
 * @returns {Map<string, string[]>} `file::Owner::fn` (or `file::NAME` for a constant) → rules
 */
export function check(files) {
  siblingCalls = 0;
  // Files that are test modules of another (`#[cfg(test)] #[path = "x_tests.rs"] mod tests;`).
  const tests = new Set(
    files.flatMap((f) => [...f.text.matchAll(/#\[cfg\(test\)\]\s*(?:#\[path\s*=\s*"([^"]+)"\]\s*)?(?:pub(?:\([\w:\s]+\))?\s+)?mod\s+(\w+)\s*;/g)].map((m) => m[1] ?? `${m[2]}.rs`)),
  );
  const parsed = files.map((f) => ({ name: f.name, ...items(strip(f.text)) }));
  const mine = parsed.filter((p) => !tests.has(p.name));
  /** @type {Map<string, Set<string>>} */
  const definedIn = new Map();
  for (const p of mine) {
    for (const f of p.fns) {
      if (!f.name.startsWith('App::')) continue;
      const n = f.name.slice(5);
      definedIn.set(n, (definedIn.get(n) ?? new Set()).add(p.name));
    }
  }
  /** @type {Map<string, string[]>} */
  const out = new Map();
  for (const p of mine) {
    const own = new Set(p.fns.filter((f) => f.name.startsWith('App::')).map((f) => f.name.slice(5)));
    const sibling = (/** @type {string} */ n) => !own.has(n) && [...(definedIn.get(n) ?? [])].some((f) => f !== p.name && !SHARED.has(f));
    for (const f of p.fns) {
      const v = violations(f.body, sibling);
      if (v.length) out.set(`${p.name}::${f.name}`, v);
    }
    for (const c of p.consts) out.set(`${p.name}::${c}`, ['const']);
  }
  return out;
}

/** @param {string} text @returns {Map<string, string[]>} */
export function parseAllow(text) {
  const m = new Map();
  for (const line of text.split('\n')) {
    const l = line.replace(/#.*/, '').trim();
    if (!l) continue;
    const [key, ...rules] = l.split(/\s+/);
    m.set(key, rules.sort());
  }
  return m;
}

/**
 * @param {Map<string, string[]>} found
 * @param {Map<string, string[]>} allow
 * @returns {{fresh: string[], gone: string[]}} violations the list does not name; listed ones that are gone
 */
export function compare(found, allow) {
  const fresh = [];
  const gone = [];
  for (const [k, rules] of found) {
    const ok = allow.get(k) ?? [];
    const extra = rules.filter((r) => !ok.includes(r));
    if (extra.length) fresh.push(`${k}  ${extra.join(' ')}`);
  }
  for (const [k, rules] of allow) {
    const now = found.get(k) ?? [];
    const left = rules.filter((r) => !now.includes(r));
    if (left.length) gone.push(`${k}  ${left.join(' ')}`);
  }
  return { fresh, gone };
}

/** @param {Map<string, string[]>} m */
export function render(m) {
  return [...m]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, r]) => `${k}  ${r.join(' ')}`)
    .join('\n');
}

const HEADER = `# The facade functions that still break the rule of scripts/check-app-facade.mjs (ARCHITECTURE.md,
# "The facade rule"). The list only shrinks: a function moved into its step folder is removed here
# (\`node scripts/check-app-facade.mjs --shrink\`); nothing is added.
# file::Owner::function  rules
`;

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const dir = join(root, 'crates', 'gpurent-core', 'src', 'app');
  const allowPath = join(root, 'scripts', 'app-facade-allow.txt');
  const files = readdirSync(dir)
    .filter((n) => n.endsWith('.rs'))
    .map((name) => ({ name, text: readFileSync(join(dir, name), 'utf8') }));
  const found = check(files);
  let allowText = '';
  try {
    allowText = readFileSync(allowPath, 'utf8');
  } catch {
    // No list: every violation is new.
  }
  const allow = parseAllow(allowText);
  const { fresh, gone } = compare(found, allow);
  if (process.argv.includes('--stats')) console.log(`calls into a sibling facade file: ${siblingCalls}`);
  if (process.argv.includes('--shrink')) {
    /** @type {Map<string, string[]>} */
    const kept = new Map();
    for (const [k, rules] of allow) {
      const now = (found.get(k) ?? []).filter((r) => rules.includes(r));
      if (now.length) kept.set(k, now);
    }
    writeFileSync(allowPath, HEADER + render(kept) + '\n');
    console.log(`app-facade-allow.txt: ${kept.size} functions (was ${allow.size})`);
  } else if (fresh.length || gone.length) {
    if (fresh.length) {
      console.error(`app/ decides nothing: ${fresh.length} function(s) break the facade rule (ARCHITECTURE.md, "The facade rule"); move the decision into its step folder:`);
      for (const f of fresh) console.error(`  ${f}`);
    }
    if (gone.length) {
      console.error(`scripts/app-facade-allow.txt names violations that are gone; remove them (node scripts/check-app-facade.mjs --shrink):`);
      for (const g of gone) console.error(`  ${g}`);
    }
    process.exit(1);
  } else {
    console.log(`app/ facade rule: ok (${allow.size} functions still allowed in scripts/app-facade-allow.txt)`);
  }
}
