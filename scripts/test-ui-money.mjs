// Money on screen goes through ui/js/money.js: the estimate's "cheapest offer" says its amount
// with the currency's sign (¥12.5, never "12.5 CNY"), in English and 简体中文 (node, no
// dependencies; run by scripts/check-all.sh).
import assert from 'node:assert/strict';
import { test } from 'node:test';

// i18n.setLanguage re-translates the page: a page with nothing on it.
globalThis.document = /** @type {any} */ ({ documentElement: {}, querySelectorAll: () => [] });
const { setLanguage } = await import('../ui/js/i18n.js');
const { explain } = await import('../ui/js/views/pick/estimate-result.js');
const { guardMoneyLine } = await import('../ui/js/views/billing/guard.js');

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

test("the guard panel's Stop line says what the provider's stop does to the disk", () => {
  /** @param {string} provider @param {string | null} stop_effect */
  const view = (provider, stop_effect) =>
    /** @type {any} */ ({ host: 'h', spec: null, provider, actions: ['stop', 'release'], stop_effect });
  for (const lang of /** @type {const} */ (['en', 'zh-CN'])) {
    setLanguage(lang);
    // RunPod wipes its container disk on stop: never "kept".
    const runpod = guardMoneyLine('stop', view('runpod', 'gpu_billing_stops_disk_wiped'));
    assert.match(runpod, lang === 'en' ? /wiped/ : /清空/, runpod);
    assert.doesNotMatch(runpod, lang === 'en' ? /kept/ : /磁盘保留/, runpod);
    // Vast keeps it (and bills its storage).
    const vast = guardMoneyLine('stop', view('vast', 'gpu_billing_stops_disk_kept'));
    assert.match(vast, lang === 'en' ? /kept/ : /磁盘保留/, vast);
    // Release says deleted whatever the provider.
    const release = guardMoneyLine('release', view('runpod', 'gpu_billing_stops_disk_wiped'));
    assert.match(release, lang === 'en' ? /deleted/ : /删除/, release);
  }
  setLanguage('en');
});
