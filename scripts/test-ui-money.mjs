// Money on screen goes through ui/js/money.js: the estimate's "cheapest offer" says its amount
// with the currency's sign (¥12.5, never "12.5 CNY"), in English and 简体中文 (node, no
// dependencies; run by scripts/check-all.sh).
import assert from 'node:assert/strict';
import { test } from 'node:test';

// i18n.setLanguage re-translates the page: a page with nothing on it.
globalThis.document = /** @type {any} */ ({ documentElement: {}, querySelectorAll: () => [] });
const { setLanguage } = await import('../ui/js/i18n.js');
const { explain } = await import('../ui/js/views/pick/estimate-result.js');
const { noticeText } = await import('../ui/js/views/billing/billing.js');

/** @param {Partial<Record<string, unknown>>} over */
const cheapest = (over) =>
  /** @type {any} */ ({
    key: 'cheapest_offer',
    card_id: 'rtx-4090',
    gpus: 2,
    total_cost: 12.5,
    cost_per_million_tokens: null,
    currency: 'CNY',
    ...over,
  });
const names = new Map([['rtx-4090', 'RTX 4090']]);

test('the cheapest offer says its cost with the currency sign, not the code', () => {
  for (const lang of /** @type {const} */ (['en', 'zh-CN'])) {
    setLanguage(lang);
    const job = explain(cheapest({}), names);
    assert.match(job, /¥12\.5/, job);
    assert.doesNotMatch(job, /CNY/, job);
    const tokens = explain(cheapest({ total_cost: null, cost_per_million_tokens: 0.4, currency: 'USD' }), names);
    assert.match(tokens, /\$0\.4/, tokens);
    assert.doesNotMatch(tokens, /USD/, tokens);
    // A code gpurent has no sign for keeps its code, once.
    const eur = explain(cheapest({ currency: 'EUR' }), names);
    assert.equal(eur.match(/EUR/g)?.length, 1, eur);
  }
  setLanguage('en');
});

test('a machine left powered off is warned before its platform releases it, in both languages', () => {
  const n = /** @type {any} */ ({ kind: 'release_soon', host: 'pro', platform: 'autodl', hours: 48 });
  setLanguage('zh-CN');
  const zh = noticeText(n);
  assert.match(zh, /AutoDL 约 48 小时后会释放它并清空数据/, zh);
  setLanguage('en');
  const en = noticeText(n);
  assert.match(en, /AutoDL releases it \(wiping its data\) in about 48 h/, en);
  // A budget notice keeps its own currency's sign.
  const b = noticeText(/** @type {any} */ ({ kind: 'budget_over', spent: 30, budget_amount: 25, currency: 'CNY' }));
  assert.match(b, /¥30/, b);
});
