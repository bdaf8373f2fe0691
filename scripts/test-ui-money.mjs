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
const { noticeText, platformText } = await import('../ui/js/views/billing/billing.js');

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

test('stopping an AutoDL machine says its release rule; starting it says the no-GPU mode is not offered', async () => {
  const { actionMoneyText } = await import('../ui/js/views/hosts/renting.js');
  const i = /** @type {any} */ ({
    provider: 'autodl',
    terms: { currency: 'CNY', release_after_days_off: 15, can_stop: true },
  });
  const stop = /** @type {any} */ ({
    effect: 'gpu_billing_stops_disk_kept',
    stopped_storage_usd_per_month: null,
    price_per_hour_usd: 1.97,
    disk_gb: 30,
  });
  const start = /** @type {any} */ ({ ...stop, effect: 'gpu_billing_resumes' });
  setLanguage('zh-CN');
  const zhStop = actionMoneyText(stop, i);
  assert.match(zhStop, /连续关机 15 天/, zhStop);
  assert.doesNotMatch(zhStop, /每月仍要付费/, 'whether AutoDL bills a powered-off disk was not found');
  const zhStart = actionMoneyText(start, i);
  assert.match(zhStart, /¥1\.97/, zhStart);
  assert.match(zhStart, /无卡模式/, zhStart);
  assert.doesNotMatch(zhStart + zhStop, /。 /, 'no space between Chinese sentences');
  setLanguage('en');
  const enStop = actionMoneyText(stop, i);
  assert.match(enStop, /15 days in a row/, enStop);
  assert.match(actionMoneyText(start, i), /no-GPU mode is not offered/);
  // A provider without such a rule says nothing of it.
  const vast = /** @type {any} */ ({ provider: 'vast', terms: { currency: 'USD', release_after_days_off: null } });
  assert.doesNotMatch(actionMoneyText(stop, vast), /in a row/);
});

test('the rent of an AutoDL machine reads in Chinese: documented rate source, storage, progress lines, own rate', async () => {
  const { moneyLines, priceSourceText } = await import('../ui/js/views/hosts/renting.js');
  const { rentLogText, ownRateText } = await import('../ui/js/views/hosts/rented.js');
  const source = 'https://www.autodl.com/docs/instance_pro_api/ (unverified, read 2026-12-02)';
  const o = /** @type {any} */ ({
    price_per_hour_usd: 1.97,
    price_source: source,
    disk_gb: 30,
    stopped_storage_usd_per_month: null,
    traffic: null,
    terms: {
      currency: 'CNY',
      price_before_create: false,
      release_after_days_off: 15,
      can_stop: true,
      billing: 'unknown',
      ready_timeout_s: 1200,
    },
  });
  setLanguage('zh-CN');
  const lines = Object.fromEntries(moneyLines('autodl', o, 1, 'NVIDIA RTX PRO 6000'));
  assert.match(lines.price_source, /未核实，2026-12-02 读取/, lines.price_source);
  assert.doesNotMatch(lines.price_source, /unverified|read/, lines.price_source);
  assert.match(lines.price_source, /https:\/\/www\.autodl\.com\/docs\/instance_pro_api\//);
  assert.doesNotMatch(lines.stopped, /每月仍要付费/, 'AutoDL storage while off was not found');
  assert.equal(rentLogText('autodl: creating'), 'AutoDL：creating');
  assert.equal(rentLogText('gpurent-0123456789ab is running at the provider'), '平台显示 gpurent-0123456789ab 已在运行');
  assert.equal(rentLogText('something else'), 'something else');
  const i = /** @type {any} */ ({ terms: o.terms, remote: { price_per_hour_usd: 2.1 } });
  assert.equal(ownRateText(i), '本机实际价 ¥2.1/小时');
  assert.equal(ownRateText({ ...i, remote: null }), null);
  assert.equal(ownRateText({ ...i, terms: { ...o.terms, price_before_create: true } }), null);
  setLanguage('en');
  assert.match(priceSourceText(source), /unverified, read 2026-12-02/);
  assert.equal(rentLogText('autodl: creating'), 'AutoDL: creating');
  assert.equal(ownRateText(i), 'its own rate ¥2.1/h');
  // A source in another shape is shown as it is.
  assert.equal(priceSourceText('somewhere'), 'somewhere');
});

test("a pasted host's platform rules say the no-GPU mode's price in yuan and the 15-day rule", () => {
  const p = /** @type {any} */ ({
    platform: 'autodl',
    increment: null,
    storage_while_off: null,
    release_after_days_off: 15,
    no_gpu_cny_per_hour: 0.1,
    facts: [{ verified: 'unverified', value: '15' }],
  });
  setLanguage('zh-CN');
  const zh = platformText(p);
  assert.match(zh, /无卡模式/, zh);
  assert.match(zh, /¥0\.1/, zh);
  assert.match(zh, /连续关机 15 天/, zh);
  setLanguage('en');
  assert.match(platformText(p), /no-GPU mode .* ¥0\.1/);
  assert.doesNotMatch(platformText({ ...p, no_gpu_cny_per_hour: null }), /no-GPU/);
});
