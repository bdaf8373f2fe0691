// zh-CN and en must have exactly the same keys, and every {placeholder} of a text must appear in
// its translation. Run by scripts/check-all.sh (node, no dependencies).
import { DICTIONARIES as DICTS } from '../ui/js/i18n.js';

let bad = 0;
const [en, zh] = [DICTS.en, DICTS['zh-CN']];
const ph = (s) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort().join(',');
for (const k of Object.keys(en)) {
  if (!(k in zh)) { console.error(`zh-CN lacks ${k}`); bad++; continue; }
  if (ph(en[k]) !== ph(zh[k])) { console.error(`${k}: placeholders differ: en {${ph(en[k])}} zh {${ph(zh[k])}}`); bad++; }
}
for (const k of Object.keys(zh)) if (!(k in en)) { console.error(`en lacks ${k}`); bad++; }
if (bad) { console.error(`${bad} translation problem(s)`); process.exit(1); }
console.log(`i18n: ${Object.keys(en).length} keys, en and zh-CN aligned`);
