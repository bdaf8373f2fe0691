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
// One language per text: no Chinese inside an English text (e.g. a sample paste with "密码：").
const cjk = /[\u3000-\u9fff\uff00-\uffef]/;
for (const [k, v] of Object.entries(en)) if (cjk.test(v)) { console.error(`${k}: the English text contains Chinese: ${JSON.stringify(v)}`); bad++; }
// A local path in an example is the user's own OS's kind of path: such texts come per OS
// (`KEY.linux`, `KEY.macos`, `KEY.windows`, all three), never one Linux path for everyone.
const localPath = /\/home\/|\/Users\/|[A-Za-z]:\\/;
const OSES = ['linux', 'macos', 'windows'];
for (const [lang, dict] of [['en', en], ['zh-CN', zh]]) {
  for (const [k, v] of Object.entries(dict)) {
    const os = k.split('.').pop() ?? '';
    if (localPath.test(v) && !OSES.includes(os)) { console.error(`${lang} ${k}: a local path example must come per OS (${OSES.join(', ')}): ${JSON.stringify(v)}`); bad++; }
    if (OSES.includes(os)) {
      const base = k.slice(0, -os.length);
      for (const o of OSES) if (!(`${base}${o}` in dict)) { console.error(`${lang} ${base}${o} is missing`); bad++; }
    }
  }
}
if (bad) { console.error(`${bad} translation problem(s)`); process.exit(1); }
console.log(`i18n: ${Object.keys(en).length} keys, en and zh-CN aligned`);
